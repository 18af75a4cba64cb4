//! The replay page's bar: open a recording, play, pause, speed, a timeline to
//! scrub, the moments worth jumping to, jump to an event, loop, and what
//! could not be read.
//!
//! Every element is always in the page and shown or hidden by attribute: a
//! few plain elements keep the page's weight down (each conditional branch of
//! a view is code of its own in the wasm).

use super::transport::{LoopToggle, PlayButton, RateSelect, Timeline, seconds};
use crate::model::Model;
use crate::replay::{Replay, Status};
use crate::view_state::ViewState;
use leptos::prelude::*;

/// The bar under the pipeline.
#[component]
pub fn ReplayBar() -> impl IntoView {
    let model = expect_context::<Model>();
    let replay = expect_context::<Replay>();
    let view = expect_context::<ViewState>();
    let status = move || replay.status.get();
    let ready = move || status() == Status::Ready;
    let toggle = move |_| {
        if replay.head.ended.get_untracked() {
            replay.restart();
        } else {
            view.paused.update(|p| *p = !*p);
        }
    };
    let seq = RwSignal::new(String::new());
    let jump = move |_| {
        let wanted = seq.get_untracked();
        if !wanted.trim().parse().is_ok_and(|n| replay.jump_to_seq(n)) {
            model.tell(
                format!("this recording has no event #{}", wanted.trim()),
                true,
            );
        }
    };
    let open = move |ev: leptos::ev::Event| {
        let input: web_sys::HtmlInputElement = event_target(&ev);
        if let Some(file) = input.files().and_then(|f| f.get(0)) {
            replay.load_file(file);
        }
    };
    let state_word = move || match status() {
        Status::Off => "off",
        Status::Loading { .. } => "loading",
        Status::Ready if replay.head.ended.get() => "ended",
        Status::Ready => "ready",
        Status::Failed { .. } => "failed",
    };
    view! {
        <section class="replay-bar" aria-label="Replay" data-status=state_word id="replay-status">
            <input id="replay-file" type="file" accept=".jsonl,.gz,.json" aria-label="Open a recording"
                on:change=open title="Open a recording (or drop one on the page)"/>
            // Replaying.
            <span class="replay-title" id="replay-title">
                {move || match status() {
                    Status::Off => "drop a recording on the page, or open one".to_string(),
                    Status::Loading { from } => format!("loading {from}…"),
                    Status::Failed { message } => format!("cannot replay: {message}"),
                    _ => format!("replay: {}", replay.title.get()),
                }}
            </span>
            <span class="replay-tools" hidden=move || !ready()>
                <PlayButton id="replay-play" head=replay.head paused=view.paused toggle=toggle/>
                <RateSelect id="replay-rate" label="Replay speed" head=replay.head/>
                <Timeline ids=("replay-timeline", "replay-time") label="Time in the recording"
                    head=replay.head duration_ms=replay.duration_ms seek=move |t| replay.seek(t)
                    marks=Signal::derive(move || replay.markers.with(|m| m.iter().map(|m| m.t_ms).collect()))/>
                <MarkerSelect replay/>
                <LoopToggle id="replay-loop" text=" loop " looping=view.looping/>
                <input id="replay-seq" type="number" min="1" aria-label="Event number"
                    placeholder="event #" on:input=move |ev| seq.set(event_target_value(&ev))/>
                <button id="replay-jump" on:click=jump>"go"</button>
            </span>
            <ul id="replay-problems" class="replay-problems" hidden=move || replay.problems.with(Vec::is_empty)>
                {move || replay.problems.get().into_iter().map(|p| view! { <li>{p}</li> }).collect_view()}
            </ul>
        </section>
    }
}

/// The moments worth jumping to ([`crate::chapters::Marker`]), each with its
/// time; choosing one seeks there.
#[component]
fn MarkerSelect(replay: Replay) -> impl IntoView {
    view! {
        <select id="replay-markers" aria-label="Jump to a moment worth seeing"
            on:change=move |ev| {
                if let Ok(t) = event_target_value(&ev).parse::<f64>() {
                    replay.seek(t);
                }
            }>
            <option value="">"jump to…"</option>
            {move || replay.markers.get().into_iter().map(|m| view! {
                <option value=m.t_ms.to_string() class="replay-marker" class:alarming=m.alarming>
                    {format!("{} at {}", m.label, seconds(m.t_ms as f64))}
                </option>
            }).collect_view()}
        </select>
    }
}

/// Lets a recording dropped anywhere on the page play.
pub fn accept_dropped_files(replay: Replay) {
    let over = window_event_listener(leptos::ev::dragover, |ev| ev.prevent_default());
    let drop = window_event_listener(leptos::ev::drop, move |ev| {
        ev.prevent_default();
        let file = ev
            .data_transfer()
            .and_then(|d| d.files())
            .and_then(|f| f.get(0));
        if let Some(file) = file {
            replay.load_file(file);
        }
    });
    // For the life of the page.
    std::mem::forget((over, drop));
}
