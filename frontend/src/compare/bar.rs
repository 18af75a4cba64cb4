//! The compare view's one set of controls: play and pause, speed, a
//! timeline and loop, each moving both players through the one clock.

use super::clock::CompareClock;
use crate::components::transport::{LoopToggle, PlayButton, RateSelect, Timeline};
use crate::view_state::ViewState;
use leptos::prelude::*;

/// The bar over the two players.
#[component]
pub fn CompareBar(clock: CompareClock, view: ViewState) -> impl IntoView {
    let state_word = move || {
        if !clock.ready() {
            "loading"
        } else if clock.head.ended.get() {
            "ended"
        } else {
            "ready"
        }
    };
    view! {
        <section
            class="replay-bar compare-bar"
            aria-label="Replay of both recordings"
            id="compare-status"
            data-status=state_word
            data-turns=move || clock.turns.get()
            data-position-ms=move || format!("{:.0}", clock.head.position_ms.get())
        >
            <span class="replay-title" hidden=move || clock.ready()>"loading both recordings…"</span>
            <span class="replay-tools" hidden=move || !clock.ready()>
                <PlayButton id="compare-play" head=clock.head paused=view.paused toggle=move |_| clock.toggle()/>
                <RateSelect id="compare-rate" label="Replay speed of both" head=clock.head/>
                <Timeline ids=("compare-timeline", "compare-time") label="Time since both recordings started"
                    head=clock.head duration_ms=Signal::derive(move || clock.duration_ms()) seek=move |t| clock.seek(t)/>
                <LoopToggle id="compare-loop" text=" loop" looping=view.looping/>
            </span>
        </section>
    }
}
