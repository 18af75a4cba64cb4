//! "Where they differ": each side's steps read from its recording (see
//! [`crate::reflector_steps`]), its informer's queue, and the steps only one
//! profile takes marked; the step each side is at lights up as the clock
//! reaches it.

use super::clock::CompareClock;
use super::side::Side;
use crate::narration::client_release;
use crate::reflector_steps::{Step, current, mark_differences, steps};
use leptos::prelude::*;
use watchlife_protocol::Hello;

/// A side's steps and queue, as the strip draws them.
#[derive(Clone, PartialEq)]
struct Column {
    title: String,
    profile: String,
    /// `None`: the side's recording did not play.
    steps: Option<Vec<Step>>,
    queue: Option<&'static str>,
}

/// The informer's queue in the release a recording's `hello` names.
fn queue_model(hello: &Hello) -> &'static str {
    let (modern, _) = client_release(Some(hello));
    if modern {
        "RealFIFO: every delta queued in arrival order; a relist applied at once"
    } else {
        "DeltaFIFO: one entry per key; a relist's deletions found as it is queued"
    }
}

/// The strip under the two players.
#[component]
pub fn DifferenceStrip(sides: [Side; 2], clock: CompareClock) -> impl IntoView {
    let columns = Memo::new(move |_| {
        let mut columns = sides.map(|side| {
            let hello = side.hello();
            Column {
                title: side.title(),
                profile: side.profile(),
                steps: hello.as_ref().and_then(|_| {
                    side.replay
                        .recording()
                        .map(|recording| steps(&recording.frames))
                }),
                queue: hello.as_ref().map(queue_model),
            }
        });
        let [left, right] = &mut columns;
        if let (Some(l), Some(r)) = (&mut left.steps, &mut right.steps) {
            mark_differences(l, r);
        }
        columns
    });
    let queues_differ =
        move || columns.with(|[l, r]| l.queue.is_some() && r.queue.is_some() && l.queue != r.queue);
    let column = move |index: usize| {
        let data = move || columns.with(|c| c[index].clone());
        let queue = move || data().queue;
        let at = Memo::new(move |_| {
            let t = clock.head.position_ms.get();
            columns.with(|c| c[index].steps.as_deref().and_then(|s| current(s, t)))
        });
        view! {
            <div class="strip-side" data-side=index data-profile=move || data().profile>
                <h3>{move || data().title}</h3>
                <p class="queue-model" class:differs=queues_differ hidden=move || queue().is_none()>
                    "informer queue: " {move || queue().unwrap_or_default()}
                </p>
                <p class="strip-missing" hidden=move || data().steps.is_some()>
                    "no recording: nothing to compare on this side"
                </p>
                <ol class="steps">
                    {move || {
                        data()
                            .steps
                            .unwrap_or_default()
                            .into_iter()
                            .enumerate()
                            .map(|(i, step)| step_row(i, step, at))
                            .collect_view()
                    }}
                </ol>
            </div>
        }
    };
    view! {
        <section class="difference-strip" id="difference-strip" aria-label="Where the two profiles differ">
            <h2>
                "Where they differ "
                <small>
                    "each side's Reflector requests and handler calls, read from its recording; "
                    "marked ◆: a step only that profile takes"
                </small>
            </h2>
            <div class="strip-columns">{column(0)} {column(1)}</div>
        </section>
    }
}

/// One step: when, what, and by how many resources' Reflectors.
fn step_row(i: usize, step: Step, at: Memo<Option<usize>>) -> impl IntoView {
    let reached = move || at.get().is_some_and(|a| i <= a);
    let now = move || at.get() == Some(i);
    let resources = match step.resources.as_slice() {
        [one] => one.clone(),
        many => format!("{} resources", many.len()),
    };
    view! {
        <li
            class="step"
            class:differs=step.differs
            class:reached=reached
            class:now=now
            aria-current=move || now().then_some("step")
            data-kind=step.kind.slug()
            data-t-ms=step.t_ms
        >
            <span class="step-time">{format!("{:.1} s", step.t_ms as f64 / 1000.0)}</span>
            <span class="step-mark" aria-label=if step.differs { "only this profile" } else { "both profiles" }>
                {if step.differs { "◆" } else { "·" }}
            </span>
            <code class="step-label">{step.kind.label()}</code>
            <span class="step-resources" title=step.resources.join(", ")>{resources}</span>
        </li>
    }
}
