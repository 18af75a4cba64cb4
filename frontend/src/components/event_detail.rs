//! The event clicked in the log: the waterfall of its hops (see
//! [`Waterfall`]), then its life in lines (see [`crate::detail::text`]): how
//! it was delivered, each stage with the signed interval from the one
//! before, each listener's call, and the reconcile (its worker, the
//! resourceVersion it read). Written once, when the event is chosen.

use super::waterfall::Waterfall;
use leptos::prelude::*;
use std::sync::Arc;
use watchlife_protocol::WatchEvent;

/// The chosen event and its text.
pub type Chosen = Option<(Arc<WatchEvent>, String)>;

/// `detail`: the chosen event and its text, the text's lines kept by the
/// stylesheet, so that the lines cost the page one element however many
/// there are.
#[component]
pub fn EventDetail(detail: RwSignal<Chosen>) -> impl IntoView {
    let event = Signal::derive(move || detail.with(|d| d.as_ref().map(|(e, _)| e.clone())));
    view! {
        <div class="event-detail-box">
            <Waterfall e=event/>
            <p class="event-detail" id="event-detail" aria-live="polite">
                {move || detail.with(|d| d.as_ref().map(|(_, text)| text.clone()))}
            </p>
        </div>
    }
}
