//! The tokens travelling the lanes under the nodes: one slot per lane,
//! drawn once, whose attributes follow the token on that lane frame by frame.

use super::super::slot::part;
use super::journey::{leg, timeline};
use super::layout::{Dims, Geometry, MARGIN, Placed};
use super::spot::Spot;
use super::stage_id::stage_id;
use crate::animator::{AnimState, LANES, Token};
use crate::player::Player;
use leptos::prelude::*;
use watchlife_protocol::Stage;

/// The tokens on their lanes. A lane holds at most one token, so each lane
/// has one slot drawn once; from frame to frame only the attributes of a
/// slot change, and only those that did (a token's position, mostly): under
/// load the animation must not cost new elements on every frame.
#[component]
pub fn Tokens(geometry: Memo<Geometry>) -> impl IntoView {
    let player = expect_context::<Player>();
    let slots: [RwSignal<Option<TokenView>>; LANES] = std::array::from_fn(|_| RwSignal::new(None));
    Effect::new(move |_| {
        player.tick.track();
        let step = player.reduced_motion.get();
        let g = geometry.get();
        let placed = g.placed();
        let mut views: [Option<TokenView>; LANES] = Default::default();
        player.state.with_value(|s| {
            for (lane, view) in token_views(s, step, &g, &placed) {
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
            {move || {
                let g = geometry.get();
                let rows = g.rows();
                (0..rows * LANES)
                    .map(|i| {
                        let y = g.lane_y(i / LANES, i % LANES) + g.dims.token_h / 2.0;
                        view! { <line class="lane" x1=MARGIN x2=g.width() - MARGIN y1=y y2=y/> }
                    })
                    .collect_view()
            }}
            {move || {
                let dims = geometry.get().dims;
                slots.into_iter().map(|slot| token_slot(slot, dims)).collect_view()
            }}
        </g>
    }
}

/// One lane's slot: hidden, and without the token's data attributes, while
/// the lane is empty.
fn token_slot(slot: RwSignal<Option<TokenView>>, dims: &'static Dims) -> impl IntoView {
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
            <rect width=dims.token_w height=dims.token_h rx=dims.token_h / 2.0/>
            <text class="token-label" x=dims.token_w / 2.0 y=dims.label_y text-anchor="middle">{move || label.get()}</text>
            {move || absorbed.get().filter(|n| *n > 0).map(|n| view! {
                <g class="merge-badge" data-merged=n>
                    <circle cx=dims.token_w cy=0 r=9/>
                    <text x=dims.token_w y=4 text-anchor="middle">{format!("+{n}")}</text>
                </g>
            })}
            <title>{move || what.get()}</title>
        </g>
    }
}

/// Each token on screen with its lane, as it looks at the player's clock.
fn token_views(
    s: &AnimState,
    step: bool,
    g: &Geometry,
    placed: &[Placed],
) -> Vec<(usize, TokenView)> {
    s.active
        .iter()
        .filter_map(|t| Some((t.lane, token_view(s, t, step, g, placed)?)))
        .collect()
}

/// The queued token that `t`, merging, folds into: the token of the same
/// key waiting in the workqueue.
fn host<'a>(s: &'a AnimState, t: &Token, step: bool) -> Option<&'a Token> {
    s.active.iter().find(|h| {
        !h.merges
            && h.key() == t.key()
            && h.place(s.clock, step)
                .is_some_and(|p| p.stage == Stage::Workqueue)
    })
}

/// How many tokens are now merging into `h`.
fn merged_into(s: &AnimState, h: &Token, step: bool) -> usize {
    s.active
        .iter()
        .filter(|t| {
            t.merge_progress(s.clock).is_some() && host(s, t, step).is_some_and(|x| x.id == h.id)
        })
        .count()
}

/// How `t` looks now, if it is on screen.
fn token_view(
    s: &AnimState,
    t: &Token,
    step: bool,
    g: &Geometry,
    placed: &[Placed],
) -> Option<TokenView> {
    let place = t.place(s.clock, step)?;
    let e = &t.row.event;
    let d = g.dims;
    let leg = leg(&timeline(t, g.open), s.clock, step)?;
    let (from, to) = (placed.get(leg.from)?, placed.get(leg.to)?);
    let centre = |p: &Placed| (p.x + p.w / 2.0 - d.token_w / 2.0, g.lane_y(p.row, t.lane));
    let ((x0, y0), (x1, y1)) = (centre(from), centre(to));
    let mut x = x0 + (x1 - x0) * leg.progress;
    let mut y = y0 + (y1 - y0) * leg.progress;
    if leg.jump {
        // Over the stages it has no time for, in an arc, not along the lane.
        y -= JUMP_H * d.lane_h * (std::f64::consts::PI * leg.progress).sin();
    }
    let lane_y = |lane| g.lane_y(to.row, lane);
    let mut scale = 1.0;
    let merge = t.merge_progress(s.clock);
    if let Some(p) = merge.filter(|_| !step) {
        // Glide onto the queued token's lane, shrinking into it.
        if let Some(h) = host(s, t, step) {
            y += (lane_y(h.lane) - y) * p;
        }
        scale = 1.0 - 0.6 * p;
        x += d.token_w * (1.0 - scale) / 2.0;
        y += d.token_h * (1.0 - scale) / 2.0;
    }
    let absorbed = if t.merges { 0 } else { merged_into(s, t, step) };
    let label = if merge.is_some() {
        "merged".to_string()
    } else if d.names_on_tokens && !e.target.name.is_empty() {
        elide(&e.target.name, d.label_chars)
    } else if e.resource_version.is_empty() {
        e.event_type.as_str().to_string()
    } else {
        e.resource_version.clone()
    };
    Some(TokenView {
        id: t.id,
        class: token_class(s, t, merge.is_some(), absorbed, leg.jump),
        transform: if scale < 1.0 {
            format!("translate({x:.1} {y:.1}) scale({scale:.2})")
        } else {
            format!("translate({x:.1} {y:.1})")
        },
        label,
        rv: e.resource_version.clone(),
        kind: e.event_type.as_str(),
        at: match placed.get(leg.from).map(|p| p.spot) {
            Some(Spot::Hop(hop)) => hop.id(),
            _ => stage_id(place.stage),
        },
        what: token_title(t, place.stage, merge.is_some()),
        absorbed,
    })
}

/// The token's classes, for the stylesheet: its event's type and delivery,
/// and what it is doing (`merging`, `absorbing`, `followed`, `arrived`).
fn token_class(s: &AnimState, t: &Token, merging: bool, absorbed: usize, jump: bool) -> String {
    let e = &t.row.event;
    let flags = [
        (e.initial, " initial"),
        (e.coalesced, " coalesced"),
        (e.handled.resync, " resync"),
        (e.handled.final_state_unknown, " final-state-unknown"),
        (t.reordered, " reordered"),
        (merging, " merging"),
        (absorbed > 0, " absorbing"),
        (s.followed == Some(t.row.seq), " followed"),
        (t.arrival() <= s.clock, " arrived"),
        (jump, " jumping"),
    ];
    let mut class = format!("token {}", e.event_type.as_str().to_lowercase());
    for (_, name) in flags.iter().filter(|(on, _)| *on) {
        class.push_str(name);
    }
    class
}

/// The token's tooltip: its event, the stage it is at, and what is unusual
/// about it.
fn token_title(t: &Token, stage: Stage, merging: bool) -> String {
    let e = &t.row.event;
    let mut what = format!(
        "{} {} {} (RV {}) at {}",
        e.event_type.as_str(),
        e.target.kind,
        e.target.key(),
        e.resource_version,
        stage.label()
    );
    if merging {
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
    what
}

/// How high a jump over unobserved stages rises, in lanes.
const JUMP_H: f64 = 1.5;

/// `name` in at most `max` characters: its head and its tail, which tells
/// generated names (`web-7d9f8-x2k4p`) apart, around an ellipsis.
fn elide(name: &str, max: usize) -> String {
    let chars: Vec<char> = name.chars().collect();
    if chars.len() <= max {
        return name.to_string();
    }
    let tail = (max - 1) * 3 / 5;
    let head = max - 1 - tail;
    let mut out: String = chars[..head].iter().collect();
    out.push('…');
    out.extend(&chars[chars.len() - tail..]);
    out
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
