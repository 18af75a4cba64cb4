//! The compare view's one set of controls: play and pause, speed, a
//! timeline and loop, each moving both players through the one clock.

use super::clock::CompareClock;
use crate::replay::RATES;
use crate::view_state::ViewState;
use leptos::prelude::*;

/// The bar over the two players.
#[component]
pub fn CompareBar(clock: CompareClock, view: ViewState) -> impl IntoView {
    let seconds = |ms: f64| format!("{:.1} s", ms / 1000.0);
    let playing = move || !view.paused.get() && !clock.ended.get();
    let state_word = move || {
        if !clock.ready() {
            "loading"
        } else if clock.ended.get() {
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
            data-position-ms=move || format!("{:.0}", clock.position_ms.get())
        >
            <span class="replay-title" hidden=move || clock.ready()>"loading both recordings…"</span>
            <span class="replay-tools" hidden=move || !clock.ready()>
                <button id="compare-play" on:click=move |_| clock.toggle()
                    aria-pressed=move || playing().to_string()>
                    {move || if clock.ended.get() { "↺ play again" } else if playing() { "❚❚ pause" } else { "▶ play" }}
                </button>
                <select id="compare-rate" aria-label="Replay speed of both"
                    prop:value=move || clock.rate.get().to_string()
                    on:change=move |ev| {
                        if let Ok(i) = event_target_value(&ev).parse::<usize>() {
                            clock.rate.set(i.min(RATES.len() - 1));
                        }
                    }>
                    {RATES.iter().enumerate().map(|(i, r)| view! { <option value=i.to_string()>{format!("{r}×")}</option> }).collect_view()}
                </select>
                <input id="compare-timeline" class="timeline" type="range" min="0" step="10"
                    aria-label="Time since both recordings started"
                    prop:max=move || clock.duration_ms()
                    prop:value=move || clock.position_ms.get()
                    on:input=move |ev| {
                        if let Ok(t) = event_target_value(&ev).parse::<f64>() {
                            clock.seek(t);
                        }
                    }/>
                <span class="replay-time" id="compare-time">
                    {move || format!("{} / {}", seconds(clock.position_ms.get()), seconds(clock.duration_ms()))}
                </span>
                <label>
                    <input id="compare-loop" type="checkbox" prop:checked=move || view.looping.get()
                        on:change=move |ev| view.looping.set(event_target_checked(&ev))/>
                    " loop"
                </label>
            </span>
        </section>
    }
}
