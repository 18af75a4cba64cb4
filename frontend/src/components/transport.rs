//! The controls every player of recordings has, whether it moves one replay
//! (the replay page's bar) or two on one clock (the compare view's): play
//! and pause, speed, a timeline with the time, loop. Each takes the ids and
//! words of its page, so that each page keeps its own.

use crate::playhead::{Playhead, RATES};
use leptos::prelude::*;

/// A time in a recording as the bar writes it: seconds, to a tenth.
pub fn seconds(ms: f64) -> String {
    format!("{:.1} s", ms / 1000.0)
}

/// Play, pause, or at the end play again; `toggle` does which.
#[component]
pub fn PlayButton(
    id: &'static str,
    head: Playhead,
    paused: RwSignal<bool>,
    #[prop(into)] toggle: Callback<()>,
) -> impl IntoView {
    let playing = move || !paused.get() && !head.ended.get();
    view! {
        <button id=id on:click=move |_| toggle.run(()) aria-pressed=move || playing().to_string()>
            {move || if head.ended.get() { "↺ play again" } else if playing() { "❚❚ pause" } else { "▶ play" }}
        </button>
    }
}

/// The speeds of [`RATES`], one chosen.
#[component]
pub fn RateSelect(id: &'static str, label: &'static str, head: Playhead) -> impl IntoView {
    view! {
        <select id=id aria-label=label
            prop:value=move || head.rate.get().to_string()
            on:change=move |ev| {
                if let Ok(i) = event_target_value(&ev).parse::<usize>() {
                    head.choose_rate(i);
                }
            }>
            {RATES.iter().enumerate().map(|(i, r)| view! { <option value=i.to_string()>{format!("{r}×")}</option> }).collect_view()}
        </select>
    }
}

/// The timeline to scrub, `seek` called with the ms chosen, and beside it
/// the position and the length as words. `ids`: the timeline's, the time's.
#[component]
pub fn Timeline(
    ids: (&'static str, &'static str),
    label: &'static str,
    head: Playhead,
    #[prop(into)] duration_ms: Signal<f64>,
    #[prop(into)] seek: Callback<f64>,
    /// Moments drawn as ticks on the timeline (ms), a recording's markers.
    #[prop(optional, into)]
    marks: Option<Signal<Vec<u64>>>,
) -> impl IntoView {
    let marks_id = format!("{}-marks", ids.0);
    view! {
        <datalist id=marks_id.clone()>
            {move || marks.map(|m| m.get()).unwrap_or_default().into_iter()
                .map(|t| view! { <option value=t.to_string()></option> }).collect_view()}
        </datalist>
        <input id=ids.0 class="timeline" type="range" min="0" step="10" list=marks_id
            aria-label=label
            prop:max=move || duration_ms.get()
            prop:value=move || head.position_ms.get()
            on:input=move |ev| {
                if let Ok(t) = event_target_value(&ev).parse::<f64>() {
                    seek.run(t);
                }
            }/>
        <span class="replay-time" id=ids.1>
            {move || format!("{} / {}", seconds(head.position_ms.get()), seconds(duration_ms.get()))}
        </span>
    }
}

/// Whether playing past the end starts over. `text`: the words beside the box.
#[component]
pub fn LoopToggle(id: &'static str, text: &'static str, looping: RwSignal<bool>) -> impl IntoView {
    view! {
        <label>
            <input id=id type="checkbox" prop:checked=move || looping.get()
                on:change=move |ev| looping.set(event_target_checked(&ev))/>
            {text}
        </label>
    }
}
