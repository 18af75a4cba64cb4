//! One stage's node: its name and what it does, then, when the source
//! observes it, its numbers and short lines (the Reflector's requests, the
//! watch cache's answers, the listeners' lanes, the workqueue's keys), else
//! words saying it cannot.

use super::super::cache_answers::cache_answer_lines;
use super::super::listener_lanes::listener_lines;
use super::super::node_lines::node_lines;
use super::layout::{Dims, Placed};
use super::numbers::{Numbers, stage_numbers};
use super::reflector_lines::reflector_lines;
use super::stage_id::stage_id;
use crate::model::Model;
use crate::narration::explain;
use crate::player::Player;
use leptos::prelude::*;
use watchlife_protocol::Stage;

/// An explanation's characters against a number's (12 px or 17 px text
/// against 14 px or 25 px), for [`Dims::sans_char_w`].
const EXPLAIN_TO_NUMBER: f64 = 0.7;
/// Keys listed on the workqueue's node; more are counted.
const QUEUED_SHOWN: usize = 2;

/// One stage's node, at `at` in the sizes `dims`.
#[component]
pub fn StageNode(
    stage: Stage,
    now: RwSignal<f64>,
    at: Placed,
    dims: &'static Dims,
) -> impl IntoView {
    let model = expect_context::<Model>();
    let (x, top, w) = (at.x, at.y, at.w);
    let cx = x + w / 2.0;
    let observed = Memo::new(move |_| {
        model.hello.with(|h| {
            h.as_ref()
                .is_some_and(|h| h.observed_stages.contains(&stage))
        }) || model.stats.with(|s| s.seen.contains(&stage))
    });
    let observed = move || observed.get();
    let side = if stage.is_server_side() {
        "server"
    } else {
        "client"
    };
    // What the etcd mark is depends on the source, what the Reflector and
    // the FIFO do on the release followed (see `explain`).
    let explained = Memo::new(move |_| model.hello.with(|h| explain(stage, h.as_ref())));
    let numbers = stage_numbers(model, stage, now);
    let aria_label = move || {
        if observed() {
            let [line1, line2] = explained.get();
            format!(
                "{}: {line1} {line2} {}",
                stage.label(),
                numbers.get().spoken()
            )
        } else {
            format!("{}: not observed for this source", stage.label())
        }
    };
    view! {
        <g
            class=format!("stage {side}")
            class:unobserved=move || !observed()
            data-stage=stage_id(stage)
            data-observed=move || observed().to_string()
            role="group"
            aria-roledescription="stage"
            aria-label=aria_label
        >
            <rect class="node" x=x y=top width=w height=dims.node_h rx=10/>
            {name_lines(stage.label(), cx, top, w, dims)}
            {(dims.explain_lines > 1).then(|| view! {
                <text class="stage-explain" x=cx y=top + dims.explain_y[0] text-anchor="middle">{move || explained.get()[0]}</text>
                <text class="stage-explain" x=cx y=top + dims.explain_y[1] text-anchor="middle">{move || explained.get()[1]}</text>
            })}
            // One line: the whole explanation, squeezed into the node if it must.
            {(dims.explain_lines == 1).then(|| {
                let whole = move || explained.with(|[a, b]| format!("{a} {b}"));
                view! {
                    <text
                        class="stage-explain"
                        x=cx
                        y=top + dims.explain_y[0]
                        text-anchor="middle"
                        textLength=move || {
                            let chars = whole().chars().count() as f64;
                            (chars * dims.sans_char_w * EXPLAIN_TO_NUMBER > w - 8.0).then_some(w - 8.0)
                        }
                        lengthAdjust="spacingAndGlyphs"
                    >
                        {whole}
                    </text>
                }
            })}
            <line class="node-rule" x1=x + 10.0 x2=x + w - 10.0 y1=top + dims.rule_y y2=top + dims.rule_y/>
            <Show when=observed fallback=move || view! { <NotObserved cx top dims/> }>
                <StageNumbers stage at dims numbers now/>
            </Show>
        </g>
    }
}

/// What an observed stage's node shows under its rule: rate, latency,
/// depth, and the short lines of the stages that have them.
#[component]
fn StageNumbers(
    stage: Stage,
    at: Placed,
    dims: &'static Dims,
    numbers: Memo<Numbers>,
    now: RwSignal<f64>,
) -> impl IntoView {
    let model = expect_context::<Model>();
    let (x, top, w) = (at.x, at.y, at.w);
    let cx = x + w / 2.0;
    // The short lines under the numbers: one per resource on the
    // Reflector, one per listener on the handlers (one closure for both, so
    // that their drawing is in the page once).
    let lanes = (stage == Stage::Handlers).then(|| listener_lines(now));
    let lines = move || {
        let lines = match lanes {
            Some(lanes) => lanes(),
            None if stage == Stage::WatchCache => cache_answer_lines(model),
            None => reflector_lines(model),
        };
        node_lines(x, top + dims.lines_y, w, dims, lines)
    };
    view! {
        <text class="stage-rate" x=cx y=top + dims.rate_y text-anchor="middle">{move || numbers.get().rate}</text>
        {number_line("stage-latency", at, dims.latency_y, dims, numbers, |n| &n.latency, None)}
        {number_line("stage-depth", at, dims.depth_y, dims, numbers, |n| &n.third, Some(|n| &n.why))}
        {matches!(stage, Stage::WatchCache | Stage::Reflector | Stage::Handlers)
            .then_some(lines)}
        {(stage == Stage::Workqueue).then(|| view! { <QueuedKeys at dims/> })}
    }
}

/// One of the lines under the rate (the latency, the third line): the
/// `text` of the node's numbers on baseline `y` (under the node's top),
/// squeezed when it is wider than the node, with the `tooltip` of the
/// numbers when there is one.
fn number_line(
    class: &'static str,
    at: Placed,
    y: f64,
    dims: &'static Dims,
    numbers: Memo<Numbers>,
    text: fn(&Numbers) -> &String,
    tooltip: Option<fn(&Numbers) -> &String>,
) -> impl IntoView {
    let w = at.w;
    view! {
        <text
            class=class
            x=at.x + w / 2.0
            y=at.y + y
            text-anchor="middle"
            textLength=move || {
                let chars = numbers.with(|n| text(n).chars().count()) as f64;
                (chars * dims.sans_char_w > w - 12.0).then_some(w - 12.0)
            }
            lengthAdjust="spacingAndGlyphs"
        >
            {move || numbers.with(|n| text(n).clone())}
            // An SVG `<title>`: written in a `view!` of its own, the macro
            // would make it the document's HTML one.
            {tooltip.map(|tip| leptos::tachys::svg::title().child(move || numbers.with(|n| tip(n).clone())))}
        </text>
    }
}

/// What a stage the source cannot measure shows instead of numbers.
#[component]
fn NotObserved(cx: f64, top: f64, dims: &'static Dims) -> impl IntoView {
    let line = dims.depth_y - dims.latency_y;
    view! {
        <text class="not-observed" x=cx y=top + dims.rate_y + 10.0 text-anchor="middle">"not observed"</text>
        <text class="stage-explain" x=cx y=top + dims.rate_y + 10.0 + line text-anchor="middle">"this source cannot"</text>
        <text class="stage-explain" x=cx y=top + dims.rate_y + 10.0 + 2.0 * line text-anchor="middle">"measure this stage"</text>
    }
}

/// A stage's name: one line, or in `dims` that allow it two lines for a
/// name of two words; squeezed when it is wider than the node.
fn name_lines(
    label: &'static str,
    cx: f64,
    top: f64,
    w: f64,
    dims: &'static Dims,
) -> impl IntoView {
    let lines: Vec<&'static str> = match label.split_once(' ') {
        Some((a, b)) if dims.name_lines > 1 => vec![a, b],
        _ => vec![label],
    };
    let first = if lines.len() == 1 && dims.name_lines > 1 {
        // One line set between the two baselines.
        (dims.name_y[0] + dims.name_y[1]) / 2.0
    } else {
        dims.name_y[0]
    };
    lines
        .into_iter()
        .enumerate()
        .map(|(i, line)| {
            let y = top + if i == 0 { first } else { dims.name_y[1] };
            let wide = line.chars().count() as f64 * dims.name_char_w > w - 10.0;
            view! {
                <text
                    class="stage-name"
                    x=cx
                    y=y
                    text-anchor="middle"
                    textLength=wide.then_some(w - 10.0)
                    lengthAdjust="spacingAndGlyphs"
                >
                    {line}
                </text>
            }
        })
        .collect_view()
}

/// The keys waiting in the workqueue, as the tokens show them, on its node:
/// a key that more than one event merged into says how many.
#[component]
fn QueuedKeys(at: Placed, dims: &'static Dims) -> impl IntoView {
    let (x, w) = (at.x, at.w);
    let player = expect_context::<Player>();
    // Recomputed every frame, redrawn only when the keys change.
    let keys = Memo::new(move |_| {
        player.tick.track();
        let step = player.reduced_motion.get();
        player.state.with_value(|s| s.queued(step))
    });
    let lines = move || {
        let keys = keys.get();
        let more = keys.len().saturating_sub(QUEUED_SHOWN);
        keys.into_iter()
            .take(QUEUED_SHOWN)
            .enumerate()
            .map(|(i, ((_, key), n))| {
                let y = at.y + dims.lines_y + 4.0 + i as f64 * dims.line_h * 1.2;
                let suffix = match (n, i + 1 == QUEUED_SHOWN && more > 0) {
                    (1, false) => String::new(),
                    (1, true) => format!(" +{more}"),
                    (n, false) => format!(" ×{n}"),
                    (n, true) => format!(" ×{n} +{more}"),
                };
                let chars = key.chars().count() + suffix.chars().count();
                let fit = (chars as f64 * dims.mono_char_w > w - 16.0).then_some(w - 16.0);
                view! {
                    <text class="queued-key" class:merged={n > 1} x=x + 8.0 y=y textLength=fit lengthAdjust="spacingAndGlyphs" data-key=key.clone() data-events=n>
                        {key.clone()}
                        <tspan class="queued-count">{suffix}</tspan>
                    </text>
                }
            })
            .collect_view()
    };
    view! {
        <g class="queued" role="group" aria-label="keys waiting in the workqueue">
            {lines}
        </g>
    }
}
