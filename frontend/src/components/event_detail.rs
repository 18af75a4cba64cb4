//! The event clicked in the log, one line each: how it was delivered, each
//! stage with the signed interval from the one before, each listener's
//! call, and the reconcile (its worker, the resourceVersion it read).
//! Drawn again only when another event is chosen.

use crate::detail::lines;
use crate::model::EventRow;
use leptos::prelude::*;

/// The detail of the event in `selected` (`notifies`: see
/// [`crate::interval::negative_reason`]).
#[component]
pub fn EventDetail(selected: RwSignal<Option<EventRow>>, notifies: Memo<bool>) -> impl IntoView {
    // One text, its lines kept by the stylesheet: the detail costs the page
    // one element, however many lines it has.
    let text = move || {
        selected.with(|row| {
            let Some(row) = row else {
                return String::new();
            };
            let e = &row.event;
            let mut text = format!(
                "Event {}: {} {} {} at RV {}",
                row.seq,
                e.event_type.as_str(),
                e.target.kind,
                e.target.key(),
                e.resource_version
            );
            for line in lines(e, notifies.get()) {
                text.push_str("\n· ");
                text.push_str(&line);
            }
            text
        })
    };
    view! {
        <p
            class="event-detail"
            id="event-detail"
            aria-live="polite"
            data-seq=move || selected.with(|r| r.as_ref().map(|r| r.seq))
        >
            {text}
        </p>
    }
}
