//! The event clicked in the log, one line each (see [`crate::detail::text`]):
//! how it was delivered, each stage with the signed interval from the one
//! before, each listener's call, and the reconcile (its worker, the
//! resourceVersion it read). Written once, when the event is chosen.

use leptos::prelude::*;

/// `detail`: the chosen event's text, its lines kept by the stylesheet, so
/// that the detail costs the page one element however many lines it has.
#[component]
pub fn EventDetail(detail: RwSignal<Option<String>>) -> impl IntoView {
    view! {
        <p class="event-detail" id="event-detail" aria-live="polite">
            {move || detail.get()}
        </p>
    }
}
