//! One watch cache as the fan-out draws it: its ring of recent events, a
//! lane per watcher with that watcher's buffer, and the copies of the events
//! now passing on every lane.

use super::layout::{
    BUFFER_W, BUFFER_X, LANE_H, LANE_X, MAX_LANES, NAME_X, RING_R, RING_X, along, lane_path,
    lane_y, ring_y, unlaned,
};
use crate::animator::index;
use crate::player::Player;
use leptos::prelude::*;
use watchlife_protocol::{CacheState, Stage};

/// Events the Cacher's `incoming` queue holds (as the apiserver's).
const INCOMING_CAPACITY: u32 = 100;

/// The name a watcher is drawn with.
fn watcher_name(name: &str) -> String {
    if name.is_empty() {
        "unnamed watcher".into()
    } else {
        name.to_string()
    }
}

/// `part` of `whole` as a fraction, at most 1; 0 of nothing.
fn fraction(part: u32, whole: u32) -> f64 {
    if whole == 0 {
        0.0
    } else {
        (part as f64 / whole as f64).min(1.0)
    }
}

/// One watcher's lane: where it is drawn and how full its buffer is.
#[derive(Clone)]
struct Lane {
    name: String,
    y: f64,
    buffered: u32,
    capacity: u32,
    /// The dispatcher waits on this watcher's full buffer.
    blocking: bool,
}

/// The lanes of `cache`'s first [`MAX_LANES`] watchers, in a block whose
/// top is `top`.
fn lanes(cache: &CacheState, top: f64) -> Vec<Lane> {
    let n = cache.watchers.len();
    cache
        .watchers
        .iter()
        .take(MAX_LANES)
        .enumerate()
        .map(|(i, w)| Lane {
            name: watcher_name(&w.name),
            y: lane_y(top, i, n),
            buffered: w.buffered,
            capacity: w.capacity,
            blocking: w.blocking,
        })
        .collect()
}

/// The heights of the lanes of `cache` drawn from `top`, for the copies.
pub fn lane_ys(cache: &CacheState, top: f64) -> Vec<f64> {
    lanes(cache, top).iter().map(|l| l.y).collect()
}

/// One cache: its ring and its lanes (the copies of events on them are
/// [`Copies`], drawn over it).
#[component]
pub fn CacheBlock(cache: CacheState, top: f64) -> impl IntoView {
    let cy = ring_y(top);
    let n = cache.watchers.len();
    let lanes = lanes(&cache, top);
    let more = unlaned(&cache);
    let last_lane = lane_y(top, n.clamp(1, MAX_LANES) - 1, n);
    let closed_y = last_lane + LANE_H * if more > 0 { 2.0 } else { 1.0 } + 4.0;
    let closed = cache.recently_closed.last().map(|c| {
        format!(
            "{} closed for being too slow · last: {} at RV {}",
            cache.closed_slow,
            watcher_name(&c.name),
            c.revision
        )
    });
    view! {
        <g class="cache" data-resource=cache.resource.clone() data-len=cache.len data-capacity=cache.capacity
            role="group"
            aria-label=format!(
                "{} watch cache: {} of {} events, revisions {} to {}, {} watchers",
                cache.resource, cache.len, cache.capacity, cache.window_start, cache.window_end, n
            )>
            <Ring cache=cache.clone() top cy/>
            {lanes.into_iter().map(|lane| view! { <WatcherLane lane cy/> }).collect_view()}
            {(n == 0).then(|| view! {
                <text class="hint-text" x=LANE_X y=lane_y(top, 0, 1) + 4.0>"no watcher right now"</text>
            })}
            {(more > 0).then(|| view! {
                <text class="hint-text" x=NAME_X y=last_lane + LANE_H + 4.0>{format!("+{more} more watchers")}</text>
            })}
            {closed.map(|text| view! {
                <text class="closed-slow" x=LANE_X y=closed_y>{text}</text>
            })}
        </g>
    }
}

/// The cache's name over its ring, the ring filled as far as the cache is,
/// and under it the revisions it holds and its incoming queue.
#[component]
fn Ring(cache: CacheState, top: f64, cy: f64) -> impl IntoView {
    let circumference = std::f64::consts::TAU * RING_R;
    let fill = fraction(cache.len, cache.capacity);
    let incoming = cache.incoming;
    view! {
        <text class="cache-name" x=RING_X y=top + 16.0 text-anchor="middle">{cache.resource.clone()}</text>
        <circle class="ring-bg" cx=RING_X cy=cy r=RING_R/>
        <circle
            class="ring-fill"
            cx=RING_X
            cy=cy
            r=RING_R
            stroke-dasharray=format!("{:.1} {circumference:.1}", fill * circumference)
            transform=format!("rotate(-90 {RING_X} {cy})")
        />
        <text class="ring-count" x=RING_X y=cy + 2.0 text-anchor="middle">{format!("{}/{}", cache.len, cache.capacity)}</text>
        <text class="ring-unit" x=RING_X y=cy + 16.0 text-anchor="middle">"events"</text>
        <text class="ring-window" x=RING_X y=cy + RING_R + 16.0 text-anchor="middle">
            {format!("RV {} → {}", cache.window_start, cache.window_end)}
        </text>
        <text class="incoming" class:backed-up={incoming > 0} x=RING_X y=cy + RING_R + 32.0 text-anchor="middle" data-incoming=incoming>
            {format!("incoming {incoming}/{INCOMING_CAPACITY}")}
            <title>"Events the watch cache has taken and the dispatcher has not yet handed to the watchers' buffers (the Cacher's incoming queue)"</title>
        </text>
    }
}

/// One watcher's lane from the ring at height `cy`, its name and its
/// buffer's gauge.
#[component]
fn WatcherLane(lane: Lane, cy: f64) -> impl IntoView {
    let Lane {
        name,
        y: ly,
        buffered,
        capacity,
        blocking,
    } = lane;
    let full = fraction(buffered, capacity);
    let gauge_w = (full * BUFFER_W).max(if buffered > 0 { 2.0 } else { 0.0 });
    let why = if blocking {
        format!(
            "{name}: its buffer is full ({buffered} of {capacity}); the dispatcher is waiting for it, at most its time budget (≤ 100 ms), then closes the watch"
        )
    } else {
        format!(
            "{name}: {buffered} of {capacity} events waiting in its buffer for its writer; when full, the dispatcher waits at most its time budget, then closes the watch"
        )
    };
    view! {
        <g class="watcher" class:filling={full >= 0.5} class:blocking=blocking data-name=name.clone() data-buffered=buffered>
            <path class="lane-path" d=lane_path(cy, ly)/>
            <text class="watcher-name" x=NAME_X y=ly + 4.0>{name.clone()}</text>
            <rect class="buffer-bg" x=BUFFER_X y=ly - 4.0 width=BUFFER_W height=8 rx=2/>
            <rect class="buffer-fill" x=BUFFER_X y=ly - 4.0 width=format!("{gauge_w:.1}") height=8 rx=2/>
            <text class="buffer-count" x=BUFFER_X + BUFFER_W + 6.0 y=ly + 4.0>{format!("{buffered}/{capacity}")}</text>
            <title>{why}</title>
        </g>
    }
}

/// A copy of every token of the shown cache's `resource` now between the
/// watch cache and the Reflector on each of its lanes (at `lane_ys`, from a
/// ring at `cy`), as far along as the token is: one cached watch, many
/// watchers.
///
/// Made once, beside the block rather than in it: the block is drawn anew
/// for each report of the cache, and a closure made with it would stay
/// behind in the player's tick for good (see [`crate::components`]).
///
/// Drawn only while the panel is `visible`: off screen (a phone shows the
/// pipeline, not this panel) the copies would be moved every animation
/// frame for no one, and nothing follows the tick until the panel is back.
#[component]
pub fn Copies(
    resource: Signal<Option<String>>,
    cy: f64,
    lane_ys: Memo<Vec<f64>>,
    visible: ReadSignal<bool>,
) -> impl IntoView {
    let player = expect_context::<Player>();
    let copies = move || {
        if !visible.get() {
            return Vec::new();
        }
        player.tick.track();
        let step = player.reduced_motion.get();
        let Some(resource) = resource.get() else {
            return Vec::new();
        };
        let from = index(Stage::WatchCache);
        let to = index(Stage::Reflector);
        player.state.with_value(|s| {
            s.active
                .iter()
                .filter(|t| t.row.event.target.resource == resource)
                .filter_map(|t| {
                    let place = t.place(s.clock, step)?;
                    (place.at >= from && place.at <= to).then(|| {
                        (
                            t.id,
                            t.row.event.event_type.as_str().to_lowercase(),
                            (place.at - from) / (to - from),
                        )
                    })
                })
                .collect::<Vec<_>>()
        })
    };
    move || {
        let ys = lane_ys.get();
        copies()
            .into_iter()
            .flat_map(|(id, class, f)| {
                let class = format!("copy {class}");
                ys.iter()
                    .map(|ly| {
                        let (x, y) = along(f, cy, *ly);
                        view! { <circle class=class.clone() cx=format!("{x:.1}") cy=format!("{y:.1}") r=5 data-copy=id/> }
                    })
                    .collect::<Vec<_>>()
            })
            .collect_view()
    }
}
