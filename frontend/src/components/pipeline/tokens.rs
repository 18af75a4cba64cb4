//! The tokens travelling the lanes under the nodes: one slot per lane,
//! drawn once, whose attributes follow the token on that lane frame by frame.

use super::super::slot::part;
use super::layout::{MARGIN, NODE_W, TOKEN_H, TOKEN_W, WIDTH, lane_y, node_x};
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
pub fn Tokens() -> impl IntoView {
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
                    let y = lane_y(lane) + TOKEN_H / 2.0;
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
fn token_views(s: &AnimState, step: bool) -> Vec<(usize, TokenView)> {
    s.active
        .iter()
        .filter_map(|t| Some((t.lane, token_view(s, t, step)?)))
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
fn token_view(s: &AnimState, t: &Token, step: bool) -> Option<TokenView> {
    let place = t.place(s.clock, step)?;
    let e = &t.row.event;
    let mut x = node_x(place.at) + NODE_W / 2.0 - TOKEN_W / 2.0;
    let mut y = lane_y(t.lane);
    let mut scale = 1.0;
    let merge = t.merge_progress(s.clock);
    if let Some(p) = merge.filter(|_| !step) {
        // Glide onto the queued token's lane, shrinking into it.
        if let Some(h) = host(s, t, step) {
            y += (lane_y(h.lane) - y) * p;
        }
        scale = 1.0 - 0.6 * p;
        x += TOKEN_W * (1.0 - scale) / 2.0;
        y += TOKEN_H * (1.0 - scale) / 2.0;
    }
    let absorbed = if t.merges { 0 } else { merged_into(s, t, step) };
    let label = if merge.is_some() {
        "merged".to_string()
    } else if e.resource_version.is_empty() {
        e.event_type.as_str().to_string()
    } else {
        e.resource_version.clone()
    };
    Some(TokenView {
        id: t.id,
        class: token_class(s, t, merge.is_some(), absorbed),
        transform: if scale < 1.0 {
            format!("translate({x:.1} {y:.1}) scale({scale:.2})")
        } else {
            format!("translate({x:.1} {y:.1})")
        },
        label,
        rv: e.resource_version.clone(),
        kind: e.event_type.as_str(),
        at: stage_id(place.stage),
        what: token_title(t, place.stage, merge.is_some()),
        absorbed,
    })
}

/// The token's classes, for the stylesheet: its event's type and delivery,
/// and what it is doing (`merging`, `absorbing`, `followed`, `arrived`).
fn token_class(s: &AnimState, t: &Token, merging: bool, absorbed: usize) -> String {
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
