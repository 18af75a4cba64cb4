//! The pipeline as one SVG: a node per stage, server side then client side,
//! with live numbers, the Reflector's state, and the tokens travelling.

use super::cache_answers::cache_answer_lines;
use super::listener_lanes::listener_lines;
use super::node_lines::{NodeLine, node_lines};
use super::slot::part;
use crate::animator::{LANES, index};
use crate::interval::negative_reason;
use crate::micros::format_micros;
use crate::model::Model;
use crate::narration::{etcd_notifies, explain, reflector_state, reflector_state_short};
use crate::notice::reflector_alarming;
use crate::player::Player;
use crate::stats::PipelineStats;
use crate::throttle::clock_every;
use leptos::prelude::*;
use watchlife_protocol::Stage;

/// Width of a stage's node in SVG units.
const NODE_W: f64 = 150.0;
/// Space between two nodes.
const GAP: f64 = 14.0;
/// Space left and right of the row of nodes.
const MARGIN: f64 = 10.0;
/// Top of the nodes (room above for the side labels).
const NODE_Y: f64 = 34.0;
/// Height of a node: name, two lines of explanation, three of numbers, and
/// four short lines (the Reflector's requests, the listeners' lanes).
const NODE_H: f64 = 190.0;
/// Top of the four short lines of the Reflector and the handlers.
const LINES_Y: f64 = NODE_Y + 138.0;
/// Top of the first token lane.
const TRACK_Y: f64 = NODE_Y + NODE_H + 22.0;
/// Height of one token lane.
const LANE_H: f64 = 26.0;
/// Token size.
const TOKEN_W: f64 = 70.0;
const TOKEN_H: f64 = 20.0;
/// Whole drawing.
const WIDTH: f64 = 2.0 * MARGIN + 9.0 * NODE_W + 8.0 * GAP;
const HEIGHT: f64 = TRACK_Y + LANES as f64 * LANE_H + 26.0;
/// Width of one character of the workqueue's keys (11px monospace), to
/// squeeze a long line into its node rather than let it overflow.
const MONO_CHAR_W: f64 = 6.6;
/// A generous average width of one character of the latency line (12px
/// sans-serif), to squeeze a long one rather than let it cross its node.
const SANS_CHAR_W: f64 = 6.4;
/// How often the numbers on the nodes are refreshed (and only then: they
/// do not follow every event).
const REFRESH_MS: u64 = 500;
/// Reflector lines on its node (one per resource); more are counted.
const REFLECTOR_LINES: usize = 4;
/// Keys listed on the workqueue's node; more are counted.
const QUEUED_SHOWN: usize = 2;
/// What the columns of the listeners' lanes are, on the handlers' node.
const HANDLERS_LEGEND: &str = "buffer │ calls │ p50 run";

/// Left edge of the node at pipeline position `at`.
fn node_x(at: f64) -> f64 {
    MARGIN + at * (NODE_W + GAP)
}

/// The stage name used in selectors (`watch_cache`).
pub fn stage_id(stage: Stage) -> &'static str {
    match stage {
        Stage::Etcd => "etcd",
        Stage::WatchCache => "watch_cache",
        Stage::WatchStream => "watch_stream",
        Stage::Reflector => "reflector",
        Stage::Fifo => "fifo",
        Stage::Indexer => "indexer",
        Stage::Handlers => "handlers",
        Stage::Workqueue => "workqueue",
        Stage::Reconcile => "reconcile",
    }
}

/// The diagram. Stages the source cannot measure (not in `hello` and never
/// carried by an event) are greyed and say "not observed", with no numbers.
#[component]
pub fn Pipeline() -> impl IntoView {
    let player = expect_context::<Player>();
    let model = expect_context::<Model>();
    let now = clock_every(model, REFRESH_MS);
    let split = node_x(3.0) - GAP / 2.0;
    let launched = move || {
        player.tick.track();
        player.state.with_value(|s| s.launched)
    };
    let waiting = move || player.waiting();
    view! {
        <section class="pipeline" aria-label="The pipeline of a watch event">
            <svg
                id="pipeline"
                viewBox=format!("0 0 {WIDTH} {HEIGHT}")
                role="group"
                aria-label="Stages from etcd to reconcile, with events travelling through them"
                data-launched=launched
                data-waiting=waiting
            >
                <text class="side-label" x=node_x(1.5) + NODE_W / 2.0 y=20 text-anchor="middle">
                    "server side: etcd and the apiserver"
                </text>
                <text class="side-label" x=node_x(6.0) + NODE_W / 2.0 y=20 text-anchor="middle">
                    "client side: the informer and a controller"
                </text>
                <line class="network" x1=split x2=split y1=8 y2=HEIGHT - 4.0/>
                {Stage::ALL
                    .into_iter()
                    .map(|stage| view! { <StageNode stage now/> })
                    .collect_view()}
                <Tokens/>
            </svg>
        </section>
    }
}

/// One stage's node.
#[component]
fn StageNode(stage: Stage, now: RwSignal<f64>) -> impl IntoView {
    let model = expect_context::<Model>();
    let x = node_x(index(stage));
    let cx = x + NODE_W / 2.0;
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
            <rect class="node" x=x y=NODE_Y width=NODE_W height=NODE_H rx=10/>
            <text class="stage-name" x=cx y=NODE_Y + 24.0 text-anchor="middle">{stage.label()}</text>
            <text class="stage-explain" x=cx y=NODE_Y + 44.0 text-anchor="middle">{move || explained.get()[0]}</text>
            <text class="stage-explain" x=cx y=NODE_Y + 59.0 text-anchor="middle">{move || explained.get()[1]}</text>
            <line class="node-rule" x1=x + 10.0 x2=x + NODE_W - 10.0 y1=NODE_Y + 70.0 y2=NODE_Y + 70.0/>
            <Show when=observed fallback=move || view! { <NotObserved cx/> }>
                <StageNumbers stage x numbers now/>
            </Show>
            <NotAnimated stage cx/>
        </g>
    }
}

/// The numbers drawn on an observed stage's node, each line a string
/// (empty when there is nothing to say).
#[derive(Debug, Clone, PartialEq)]
struct Numbers {
    rate: String,
    latency: String,
    /// Queue depth and negative intervals, or the handlers' legend.
    third: String,
    /// Why some intervals are negative: the third line's tooltip.
    why: String,
}

impl Numbers {
    /// The numbers in one sentence, for the node's accessible label.
    fn spoken(&self) -> String {
        [&self.rate, &self.latency, &self.third, &self.why]
            .into_iter()
            .filter(|n| !n.is_empty())
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A stage's numbers, following the refresh clock only, not every event:
/// under load the numbers would change on every frame, faster than they can
/// be read. The first event to reach the stage, and a stream that stands
/// still, show their numbers at once.
fn stage_numbers(model: Model, stage: Stage, now: RwSignal<f64>) -> Memo<Numbers> {
    let reached = Memo::new(move |_| model.stats.with(|s| s.stage(stage).is_some()));
    Memo::new(move |_| {
        model.settled.track();
        reached.track();
        now.track();
        let now = model.now();
        let notifies = model
            .hello
            .with_untracked(|h| etcd_notifies(h.as_ref().map(|h| &h.source)));
        model
            .stats
            .with_untracked(|s| numbers_of(s, stage, now, notifies))
    })
}

/// A stage's numbers at page time `now`; `notifies` says what the etcd
/// mark is (see [`etcd_notifies`]).
fn numbers_of(s: &PipelineStats, stage: Stage, now: f64, notifies: bool) -> Numbers {
    let Some(st) = s.stage(stage) else {
        return Numbers {
            rate: "no events yet".to_string(),
            latency: String::new(),
            third: String::new(),
            why: String::new(),
        };
    };
    let rate = format!("{:.1} events/s", st.rate(now));
    let latency = match st.latency_quantiles([0.5, 0.99]) {
        Some([p50, p99]) => format!("p50 {} · p99 {}", format_micros(p50), format_micros(p99)),
        None => "first measured stage".to_string(),
    };
    let depth = st.depth.map(|d| format!("queue depth {d}"));
    // Negative samples are kept, counted here, and explained in the title.
    let (negative, kept) = st.negatives();
    let before = Stage::ALL
        .into_iter()
        .rev()
        .find(|x| *x < stage && s.seen.contains(x));
    let (negatives, why) = match before {
        Some(before) if negative > 0 => (
            Some(format!("{negative} of {kept} negative")),
            format!(
                "{negative} of the last {kept} intervals from the stage before are negative: {}",
                negative_reason(before, notifies)
            ),
        ),
        _ => (None, String::new()),
    };
    let legend = (stage == Stage::Handlers && !s.listeners.lanes.is_empty())
        .then(|| HANDLERS_LEGEND.to_string());
    let third = [depth, negatives]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" · ");
    let third = if third.is_empty() {
        legend.unwrap_or_default()
    } else {
        third
    };
    Numbers {
        rate,
        latency,
        third,
        why,
    }
}

/// What an observed stage's node shows under its rule: rate, latency,
/// depth, and the short lines of the stages that have them.
#[component]
fn StageNumbers(stage: Stage, x: f64, numbers: Memo<Numbers>, now: RwSignal<f64>) -> impl IntoView {
    let model = expect_context::<Model>();
    let cx = x + NODE_W / 2.0;
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
        node_lines(x, LINES_Y, NODE_W, lines)
    };
    view! {
        <text class="stage-rate" x=cx y=NODE_Y + 90.0 text-anchor="middle">{move || numbers.get().rate}</text>
        <text
            class="stage-latency"
            x=cx
            y=NODE_Y + 108.0
            text-anchor="middle"
            textLength=move || {
                let chars = numbers.with(|n| n.latency.chars().count()) as f64;
                (chars * SANS_CHAR_W > NODE_W - 12.0).then_some(NODE_W - 12.0)
            }
            lengthAdjust="spacingAndGlyphs"
        >
            {move || numbers.get().latency}
        </text>
        <text class="stage-depth" x=cx y=NODE_Y + 124.0 text-anchor="middle">
            {move || numbers.get().third}
            <title>{move || numbers.get().why}</title>
        </text>
        {matches!(stage, Stage::WatchCache | Stage::Reflector | Stage::Handlers)
            .then_some(lines)}
        {(stage == Stage::Workqueue).then(|| view! { <QueuedKeys x/> })}
    }
}

/// What a stage the source cannot measure shows instead of numbers.
#[component]
fn NotObserved(cx: f64) -> impl IntoView {
    view! {
        <text class="not-observed" x=cx y=NODE_Y + 100.0 text-anchor="middle">"not observed"</text>
        <text class="stage-explain" x=cx y=NODE_Y + 118.0 text-anchor="middle">"this source cannot"</text>
        <text class="stage-explain" x=cx y=NODE_Y + 133.0 text-anchor="middle">"measure this stage"</text>
    }
}

/// How many events passed the stage without being animated.
#[component]
fn NotAnimated(stage: Stage, cx: f64) -> impl IntoView {
    let player = expect_context::<Player>();
    let skipped = move || {
        player.tick.track();
        player
            .state
            .with_value(|s| s.skipped.get(&stage).copied().unwrap_or(0))
    };
    view! {
        <text class="skipped" x=cx y=HEIGHT - 8.0 text-anchor="middle">
            {move || match skipped() {
                0 => String::new(),
                n => format!("+{n} not animated"),
            }}
        </text>
    }
}

/// One line per resource for the Reflector's node: its latest state, the
/// request as asked while one is out.
fn reflector_lines(model: Model) -> Vec<NodeLine> {
    let all = model.reflectors.get();
    let answers = model.answers.get();
    let more = all.len().saturating_sub(REFLECTOR_LINES);
    all.into_iter()
        .take(REFLECTOR_LINES)
        .enumerate()
        .map(|(i, (resource, state))| {
            let mut words = reflector_state_short(&state);
            let answer = answers.get(&resource);
            if let Some(answer) = answer {
                words.push(' ');
                words.push_str(&crate::narration::answer_short(answer));
            }
            if i + 1 == REFLECTOR_LINES && more > 0 {
                words.push_str(&format!(" +{more}"));
            }
            NodeLine {
                class: if reflector_alarming(&state) {
                    "reflector alarming".into()
                } else {
                    "reflector".into()
                },
                // `deployments.apps` reads as `deployments` on the node.
                lead: resource.split('.').next().unwrap_or(&resource).to_string(),
                title: match answer {
                    Some(answer) => format!(
                        "{resource}: {}\n{}",
                        reflector_state(&state),
                        crate::narration::answer(answer)
                    ),
                    None => format!("{resource}: {}", reflector_state(&state)),
                },
                key: resource,
                words,
            }
        })
        .collect()
}

/// The keys waiting in the workqueue, as the tokens show them, on its node:
/// a key that more than one event merged into says how many.
#[component]
fn QueuedKeys(x: f64) -> impl IntoView {
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
                let y = NODE_Y + 142.0 + i as f64 * 16.0;
                let suffix = match (n, i + 1 == QUEUED_SHOWN && more > 0) {
                    (1, false) => String::new(),
                    (1, true) => format!(" +{more}"),
                    (n, false) => format!(" ×{n}"),
                    (n, true) => format!(" ×{n} +{more}"),
                };
                let chars = key.chars().count() + suffix.chars().count();
                let fit = (chars as f64 * MONO_CHAR_W > NODE_W - 16.0).then_some(NODE_W - 16.0);
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
        <g class="queued" aria-label="keys waiting in the workqueue">
            {lines}
        </g>
    }
}

/// The tokens on their lanes. A lane holds at most one token, so each lane
/// has one slot drawn once; from frame to frame only the attributes of a
/// slot change, and only those that did (a token's position, mostly): under
/// load the animation must not cost new elements on every frame.
#[component]
fn Tokens() -> impl IntoView {
    let player = expect_context::<Player>();
    let slots: [RwSignal<Option<TokenView>>; LANES] = std::array::from_fn(|_| RwSignal::new(None));
    Effect::new(move |_| {
        player.tick.track();
        let step = player.reduced_motion.get();
        let mut views: [Option<TokenView>; LANES] = Default::default();
        player.state.with_value(|s| {
            for (lane, view) in token_views(s, step) {
                if let Some(slot) = views.get_mut(lane) {
                    *slot = Some(view);
                }
            }
        });
        for (slot, view) in slots.iter().zip(views) {
            if slot.with_untracked(|now| *now != view) {
                slot.set(view);
            }
        }
    });
    view! {
        <g class="tokens" aria-hidden="true">
            {(0..LANES)
                .map(|lane| {
                    let y = TRACK_Y + lane as f64 * LANE_H + TOKEN_H / 2.0;
                    view! { <line class="lane" x1=MARGIN x2=WIDTH - MARGIN y1=y y2=y/> }
                })
                .collect_view()}
            {slots.into_iter().map(token_slot).collect_view()}
        </g>
    }
}

/// One lane's slot: hidden, and without the token's data attributes, while
/// the lane is empty.
fn token_slot(slot: RwSignal<Option<TokenView>>) -> impl IntoView {
    let slot: Signal<Option<TokenView>> = slot.into();
    let class = part(slot, |t| t.class.clone());
    let transform = part(slot, |t| t.transform.clone());
    let id = part(slot, |t| t.id);
    let rv = part(slot, |t| t.rv.clone());
    let kind = part(slot, |t| t.kind);
    let at = part(slot, |t| t.at);
    let label = part(slot, |t| t.label.clone());
    let what = part(slot, |t| t.what.clone());
    let absorbed = part(slot, |t| t.absorbed);
    let shown = move || slot.with(Option::is_some);
    view! {
        <g
            class=move || class.get().unwrap_or_else(|| "token-slot".into())
            display=move || (!shown()).then_some("none")
            transform=move || transform.get()
            data-token=move || id.get()
            data-rv=move || rv.get()
            data-type=move || kind.get()
            data-at=move || at.get()
        >
            <rect width=TOKEN_W height=TOKEN_H rx=TOKEN_H / 2.0/>
            <text x=TOKEN_W / 2.0 y=TOKEN_H / 2.0 + 4.5 text-anchor="middle">{move || label.get()}</text>
            {move || absorbed.get().filter(|n| *n > 0).map(|n| view! {
                <g class="merge-badge" data-merged=n>
                    <circle cx=TOKEN_W cy=0 r=9/>
                    <text x=TOKEN_W y=4 text-anchor="middle">{format!("+{n}")}</text>
                </g>
            })}
            <title>{move || what.get()}</title>
        </g>
    }
}

/// Each token on screen with its lane, as it looks at the player's clock.
fn token_views(s: &crate::animator::AnimState, step: bool) -> Vec<(usize, TokenView)> {
    let followed = s.followed;
    let lane_y = |lane: usize| TRACK_Y + lane as f64 * LANE_H;
    // A queued token that merging tokens of the same key fold into.
    let host = |t: &crate::animator::Token| {
        s.active.iter().find(|h| {
            !h.merges
                && h.key() == t.key()
                && h.place(s.clock, step)
                    .is_some_and(|p| p.stage == Stage::Workqueue)
        })
    };
    let merged_into = |h: &crate::animator::Token| {
        s.active
            .iter()
            .filter(|t| {
                t.merge_progress(s.clock).is_some() && host(t).is_some_and(|x| x.id == h.id)
            })
            .count()
    };
    s.active
        .iter()
        .filter_map(|t| {
            let place = t.place(s.clock, step)?;
            let e = &t.row.event;
            let mut x = node_x(place.at) + NODE_W / 2.0 - TOKEN_W / 2.0;
            let mut y = lane_y(t.lane);
            let mut scale = 1.0;
            let merge = t.merge_progress(s.clock);
            if let Some(p) = merge.filter(|_| !step) {
                // Glide onto the queued token's lane, shrinking into it.
                if let Some(h) = host(t) {
                    y += (lane_y(h.lane) - y) * p;
                }
                scale = 1.0 - 0.6 * p;
                x += TOKEN_W * (1.0 - scale) / 2.0;
                y += TOKEN_H * (1.0 - scale) / 2.0;
            }
            let absorbed = if t.merges { 0 } else { merged_into(t) };
            let mut class = format!("token {}", e.event_type.as_str().to_lowercase());
            if e.initial {
                class.push_str(" initial");
            }
            if e.coalesced {
                class.push_str(" coalesced");
            }
            if e.handled.resync {
                class.push_str(" resync");
            }
            if e.handled.final_state_unknown {
                class.push_str(" final-state-unknown");
            }
            if t.reordered {
                class.push_str(" reordered");
            }
            if merge.is_some() {
                class.push_str(" merging");
            }
            if absorbed > 0 {
                class.push_str(" absorbing");
            }
            if followed == Some(t.row.seq) {
                class.push_str(" followed");
            }
            if t.arrival() <= s.clock {
                class.push_str(" arrived");
            }
            let label = if merge.is_some() {
                "merged".to_string()
            } else if e.resource_version.is_empty() {
                e.event_type.as_str().to_string()
            } else {
                e.resource_version.clone()
            };
            let mut what = format!(
                "{} {} {} (RV {}) at {}",
                e.event_type.as_str(),
                e.target.kind,
                e.target.key(),
                e.resource_version,
                place.stage.label()
            );
            if merge.is_some() {
                what.push_str(": merged into the key already queued");
            }
            if let Some(how) = crate::detail::delivery(e) {
                what.push_str(&format!("; {how}"));
            }
            if t.reordered {
                what.push_str(
                    "; a stage's clock read came before the previous stage's (see its waterfall)",
                );
            }
            let view = TokenView {
                id: t.id,
                class,
                transform: if scale < 1.0 {
                    format!("translate({x:.1} {y:.1}) scale({scale:.2})")
                } else {
                    format!("translate({x:.1} {y:.1})")
                },
                label,
                rv: e.resource_version.clone(),
                kind: e.event_type.as_str(),
                at: stage_id(place.stage),
                what,
                absorbed,
            };
            Some((t.lane, view))
        })
        .collect()
}

/// What one token looks like in one frame.
#[derive(Debug, Clone, PartialEq)]
struct TokenView {
    id: u64,
    class: String,
    transform: String,
    label: String,
    rv: String,
    kind: &'static str,
    at: &'static str,
    what: String,
    absorbed: usize,
}
