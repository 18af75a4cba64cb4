//! A table that scrolls within its panel, for the long lists (the events,
//! the objects): its body is virtualised by the panel (only the rows in view
//! exist), so the panel is told where the scroll stands, and a row is chosen
//! by a click or Enter through one listener on the body, since the rows
//! come and go too often for listeners of their own.

use leptos::prelude::*;

/// The scrolling area (`class`, `style`) with its table: `columns` as the
/// head, `children` as the body `body_id`. Every scroll sets `scroll_top`
/// (px); `choose` gets every click, and every Enter, in the body.
#[component]
pub fn ScrollTable<F>(
    class: &'static str,
    style: String,
    scroll_top: RwSignal<f64>,
    columns: &'static [&'static str],
    body_id: &'static str,
    choose: F,
    children: Children,
) -> impl IntoView
where
    F: Fn(&web_sys::Event) + Copy + 'static,
{
    view! {
        <div
            class=class
            style=style
            on:scroll=move |ev| {
                let el = event_target::<web_sys::Element>(&ev);
                scroll_top.set(el.scroll_top() as f64);
            }
        >
            <table>
                <thead>
                    <tr>{columns.iter().map(|c| view! { <th>{*c}</th> }).collect_view()}</tr>
                </thead>
                <tbody
                    id=body_id
                    on:click=move |ev| choose(&ev)
                    on:keydown=move |ev| {
                        if ev.key() == "Enter" {
                            choose(&ev);
                        }
                    }
                >
                    {children()}
                </tbody>
            </table>
        </div>
    }
}
