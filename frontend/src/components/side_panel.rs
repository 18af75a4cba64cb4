//! Presenter mode's side panel, beside the pipeline: the PAUSED badge with
//! the number of events waiting, the narrated event's waterfall (the one
//! followed, else the newest token), and the demo actions — everything
//! needed to follow one event without scrolling. Hidden on a desk, where
//! the event log's detail and the actions below serve.

use super::actions::Actions;
use super::captions::Captions;
use super::waterfall::Waterfall;
use crate::player::Player;
use crate::view_state::ViewState;
use leptos::either::Either;
use leptos::prelude::*;

#[component]
pub fn SidePanel() -> impl IntoView {
    let view = expect_context::<ViewState>();
    let player = expect_context::<Player>();
    let presenter = move || view.presenter.get();
    // The narrated event, changing only when another token is narrated.
    let narrated = Memo::new(move |_| {
        player.tick.track();
        player
            .state
            .with_value(|s| s.narrated().map(|t| (t.row.seq, t.row.event.clone())))
    });
    let seq = Memo::new(move |_| narrated.with(|n| n.as_ref().map(|n| n.0)));
    let heading = move || {
        let _ = seq.get();
        narrated.with_untracked(|n| {
            n.as_ref().map(|(seq, e)| {
                format!(
                    "Event {seq}: {} {} {} · RV {}",
                    e.event_type.as_str(),
                    e.target.kind,
                    e.target.key(),
                    e.resource_version
                )
            })
        })
    };
    let detail = move || match heading() {
        Some(heading) => Either::Left(view! { <h2 class="side-event">{heading}</h2> }),
        None => Either::Right(view! { <p class="hint">"Waiting for an event…"</p> }),
    };
    // Made once, fed the followed event (see `Waterfall`).
    let followed = Signal::derive(move || {
        let _ = seq.get();
        narrated.with_untracked(|n| n.as_ref().map(|(_, e)| e.clone()))
    });
    view! {
        <Show when=presenter>
            <aside class="side-panel" aria-label="The event followed, and the demo's actions">
                <PausedBadge/>
                <Captions/>
                <div class="side-detail" id="side-detail">{detail}<Waterfall e=followed/></div>
                <Actions/>
                <p class="presenter-hint">"presenter mode: P or Esc to leave, ? for shortcuts"</p>
            </aside>
        </Show>
    }
}

/// `PAUSED` and the number of events waiting, while paused; the number
/// waiting alone while playing, when some wait.
#[component]
pub fn PausedBadge() -> impl IntoView {
    let view = expect_context::<ViewState>();
    let player = expect_context::<Player>();
    let waiting = move || player.waiting();
    let words = move || match waiting() {
        1 => "1 event waiting".to_string(),
        n => format!("{n} events waiting"),
    };
    view! {
        <p class="paused-badge" id="paused-badge" data-paused=move || view.paused.get().to_string() role="status">
            <span class="paused-word" hidden=move || !view.paused.get()>"PAUSED"</span>
            <span class="waiting-count" id="waiting-count" data-waiting=waiting>{words}</span>
        </p>
    }
}
