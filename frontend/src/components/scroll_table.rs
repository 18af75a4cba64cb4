//! A table that scrolls within its panel, for the long lists (the events,
//! the objects): its body is virtualised by the panel (only the rows in view
//! exist), so the panel is told where the scroll stands, and a row is chosen
//! by a click or Enter through one listener on the body, since the rows
//! come and go too often for listeners of their own.

use leptos::prelude::*;

/// The scrolling area (`class`, `style`) with its table: `columns` as the
/// head, `children` as the body `body_id`. Every scroll sets `scroll_top`
/// (px); `choose` gets every click, and every Enter, in the body.
/// `keyboard`, if given, is true while a row has the focus a keyboard gave
/// it (`:focus-visible`; a click's focus does not count), so that the
/// panel can hold its rows still under it.
#[component]
pub fn ScrollTable<F>(
    class: &'static str,
    style: String,
    scroll_top: RwSignal<f64>,
    columns: &'static [&'static str],
    body_id: &'static str,
    choose: F,
    #[prop(optional)] keyboard: Option<RwSignal<bool>>,
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
                    on:focusin=move |ev| {
                        if let Some(keyboard) = keyboard {
                            let target = event_target::<web_sys::Element>(&ev);
                            keyboard.set(target.matches(":focus-visible").unwrap_or(false));
                        }
                    }
                    on:focusout=move |ev| {
                        // Moving from row to row keeps it: the focus only
                        // leaves when it goes outside the body.
                        if let Some(keyboard) = keyboard
                            && !focus_stays_in(&ev)
                        {
                            keyboard.set(false);
                        }
                    }
                >
                    {children()}
                </tbody>
            </table>
        </div>
    }
}

/// Whether the focus a `focusout` takes away goes to another element of the
/// same body.
fn focus_stays_in(ev: &web_sys::FocusEvent) -> bool {
    use wasm_bindgen::JsCast;
    let body = ev
        .current_target()
        .and_then(|t| t.dyn_into::<web_sys::Node>().ok());
    let next = ev
        .related_target()
        .and_then(|t| t.dyn_into::<web_sys::Node>().ok());
    match (body, next) {
        (Some(body), Some(next)) => body.contains(Some(&next)),
        _ => false,
    }
}
