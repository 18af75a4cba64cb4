//! The replay bar: play, pause, speed, a timeline to scrub with marks at the
//! moments worth seeing, jump to an event, loop, and what could not be read.
//! Live, the same bar records the stream for download, and opens a file.

use crate::model::Model;
use crate::replay::{RATES, Replay, Status};
use crate::tape::Tape;
use crate::view_state::ViewState;
use leptos::prelude::*;

/// The bar under the pipeline.
#[component]
pub fn ReplayBar() -> impl IntoView {
    let replay = expect_context::<Replay>();
    view! {
        <section class="replay-bar" aria-label="Replay">
            <Show when=move || replay.is_on() fallback=LiveTools>
                <ReplayTools/>
            </Show>
        </section>
    }
}

#[component]
fn ReplayTools() -> impl IntoView {
    let replay = expect_context::<Replay>();
    let view = expect_context::<ViewState>();
    let status = move || replay.status.get();
    let seconds = |ms: f64| format!("{:.1} s", ms / 1000.0);
    let playing = move || !view.paused.get() && !replay.ended.get();
    let toggle = move |_| {
        if replay.ended.get_untracked() {
            replay.restart();
        } else {
            view.paused.update(|p| *p = !*p);
        }
    };
    let seq = RwSignal::new(String::new());
    let jump = move || {
        let found = seq
            .get_untracked()
            .trim()
            .parse()
            .is_ok_and(|n| replay.jump_to_seq(n));
        if !found {
            expect_context::<Model>().tell(
                format!(
                    "this recording has no event #{}",
                    seq.get_untracked().trim()
                ),
                true,
            );
        }
    };
    view! {
        <span class="replay-title" id="replay-title">
            {move || match status() {
                Status::Loading { from } => format!("loading {from}…"),
                Status::Failed { .. } => "cannot replay".into(),
                _ => format!("replay: {}", replay.title.get()),
            }}
        </span>
        <span id="replay-status" data-status=move || match status() {
            Status::Off => "off",
            Status::Loading { .. } => "loading",
            Status::Ready if replay.ended.get() => "ended",
            Status::Ready => "ready",
            Status::Failed { .. } => "failed",
        }></span>
        <Show when=move || matches!(status(), Status::Failed { .. })>
            <p class="replay-error" id="replay-error" role="alert">
                {move || match status() {
                    Status::Failed { message } => message,
                    _ => String::new(),
                }}
            </p>
        </Show>
        <Show when=move || status() == Status::Ready>
            <button id="replay-play" on:click=toggle aria-pressed=move || playing().to_string()>
                {move || if replay.ended.get() { "↺ play again" } else if playing() { "❚❚ pause" } else { "▶ play" }}
            </button>
            <label class="replay-rate">
                "speed "
                <select id="replay-rate" on:change=move |ev| {
                    if let Ok(i) = event_target_value(&ev).parse::<usize>() {
                        replay.rate.set(i.min(RATES.len() - 1));
                    }
                }>
                    {RATES.iter().enumerate().map(|(i, r)| view! {
                        <option value=i.to_string() selected=move || replay.rate.get() == i>{format!("{r}×")}</option>
                    }).collect_view()}
                </select>
            </label>
            <span class="timeline">
                <input
                    id="replay-timeline"
                    type="range"
                    min="0"
                    step="10"
                    aria-label="Time in the recording"
                    prop:max=move || replay.duration_ms.get()
                    prop:value=move || replay.position_ms.get()
                    on:input=move |ev| {
                        if let Ok(t) = event_target_value(&ev).parse::<f64>() {
                            replay.seek(t);
                        }
                    }
                />
                <span class="markers">
                    {move || {
                        let duration = replay.duration_ms.get().max(1.0);
                        replay.markers.get().into_iter().map(|m| {
                            let left = m.t_ms as f64 / duration * 100.0;
                            view! {
                                <button
                                    class="replay-marker"
                                    class:alarming=m.alarming
                                    style=format!("left:{left:.2}%")
                                    title=format!("{} at {}", m.label, seconds(m.t_ms as f64))
                                    aria-label=format!("jump to {}", m.label)
                                    data-t=m.t_ms
                                    on:click=move |_| replay.seek(m.t_ms as f64)
                                ></button>
                            }
                        }).collect_view()
                    }}
                </span>
            </span>
            <span class="replay-time" id="replay-time">
                {move || format!("{} / {}", seconds(replay.position_ms.get()), seconds(replay.duration_ms.get()))}
            </span>
            <label class="toggle">
                <input
                    id="replay-loop"
                    type="checkbox"
                    prop:checked=move || view.looping.get()
                    on:change=move |ev| view.looping.set(event_target_checked(&ev))
                />
                " loop"
            </label>
            <form class="replay-jump" on:submit=move |ev| { ev.prevent_default(); jump(); }>
                <label>
                    "event # "
                    <input id="replay-seq" type="number" min="1" size="5"
                        prop:value=move || seq.get()
                        on:input=move |ev| seq.set(event_target_value(&ev))/>
                </label>
                <button id="replay-jump" type="submit">"go"</button>
            </form>
        </Show>
        <Show when=move || !replay.problems.get().is_empty()>
            <details class="replay-problems" open>
                <summary>{move || format!("{} lines could not be played", replay.problems.get().len())}</summary>
                <ul id="replay-problems">
                    {move || replay.problems.get().into_iter().map(|p| view! { <li>{p}</li> }).collect_view()}
                </ul>
            </details>
        </Show>
    }
}

/// Live: record the stream for download, or open a recording.
#[component]
fn LiveTools() -> impl IntoView {
    let model = expect_context::<Model>();
    let tape = expect_context::<Tape>();
    let replay = expect_context::<Replay>();
    let record = move |_| {
        if tape.recording.get_untracked() {
            match tape.stop_and_download() {
                Ok(()) => model.tell(
                    "recording saved: drop the file on any watchlife page to replay it".into(),
                    false,
                ),
                Err(why) => model.tell(why, true),
            }
        } else if !tape.start(&model) {
            model.tell(
                "nothing to record yet: the bridge has not answered".into(),
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
    view! {
        <button id="tape-record" on:click=record aria-pressed=move || tape.recording.get().to_string()
            title="Record the stream from now on, and download it as a file that replays with no bridge">
            {move || if tape.recording.get() {
                format!("■ stop and download ({} frames)", tape.frames.get())
            } else {
                "● record".to_string()
            }}
        </button>
        <label class="replay-open" title="Replay a recording (or drop one on the page)">
            "replay a file "
            <input id="replay-file" type="file" accept=".jsonl,.gz,.json,application/jsonl" on:change=open/>
        </label>
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
