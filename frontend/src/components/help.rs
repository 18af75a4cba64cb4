//! The list of keyboard shortcuts, opened with `?`.

use crate::view_state::ViewState;
use leptos::prelude::*;

/// Every shortcut with what it does; the keyboard handler implements these.
pub const SHORTCUTS: [(&str, &str); 9] = [
    ("Space", "pause or resume"),
    ("→", "while paused: let the next event travel"),
    ("+ / −", "faster / slower"),
    ("C", "captions on or off"),
    ("P", "presenter mode on or off"),
    ("T", "next theme (system, light, dark)"),
    ("/", "search by name"),
    ("?", "this list"),
    ("Esc", "close this list, leave presenter mode"),
];

#[component]
pub fn Help() -> impl IntoView {
    let view = expect_context::<ViewState>();
    view! {
        <Show when=move || view.help.get()>
            <div class="help" id="help" role="dialog" aria-modal="false" aria-label="Keyboard shortcuts">
                <h2>"Keyboard shortcuts"</h2>
                <dl>
                    {SHORTCUTS
                        .iter()
                        .map(|(k, what)| view! { <dt><kbd>{*k}</kbd></dt><dd>{*what}</dd> })
                        .collect_view()}
                </dl>
                <button on:click=move |_| view.help.set(false)>"close"</button>
            </div>
        </Show>
    }
}
