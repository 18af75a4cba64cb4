//! The watch cache's fan-out (demo only): for one resource the page draws
//! (a tab each), the cache's ring of recent events — how full, from which
//! revision to which — and one lane per watcher it dispatches every event to,
//! with how full that watcher's buffer is. While a token passes the watch
//! cache, a copy of it runs down every lane: one cached watch, many watchers.

use crate::animator::index;
use crate::model::Model;
use crate::player::Player;
use crate::view_state::ViewState;
use leptos::prelude::*;
use watchlife_protocol::{CacheState, Stage};

/// Width of the drawing in SVG units.
const WIDTH: f64 = 720.0;
/// Centre of the ring, from the left of a block.
const RING_X: f64 = 66.0;
/// Radius of the ring.
const RING_R: f64 = 38.0;
/// Where the lanes fan out from, and where they run straight.
const FAN_X: f64 = RING_X + RING_R + 8.0;
const LANE_X: f64 = FAN_X + 90.0;
/// End of the lanes; the watcher's name follows.
const LANE_END: f64 = 430.0;
const NAME_X: f64 = LANE_END + 10.0;
/// The watcher's buffer gauge.
const BUFFER_X: f64 = 596.0;
const BUFFER_W: f64 = 64.0;
/// Height of one lane.
const LANE_H: f64 = 19.0;
/// Smallest height of one cache's block (the ring and its captions).
const BLOCK_MIN_H: f64 = 150.0;
/// Lanes drawn per cache; more are counted.
const MAX_LANES: usize = 8;

/// The name a watcher is drawn with.
/// Events the Cacher's `incoming` queue holds (as the apiserver's).
const INCOMING_CAPACITY: u32 = 100;

fn watcher_name(name: &str) -> String {
    if name.is_empty() {
        "unnamed watcher".into()
    } else {
        name.to_string()
    }
}

/// Watchers of `cache` that get no lane: beyond [`MAX_LANES`], and those the
/// report only counts.
fn unlaned(cache: &CacheState) -> u64 {
    cache
        .watcher_count()
        .saturating_sub(cache.watchers.len().min(MAX_LANES) as u64)
}

/// Height of one cache's block.
fn block_h(cache: &CacheState) -> f64 {
    let lanes = cache.watchers.len().clamp(1, MAX_LANES) as f64;
    let extra = LANE_H
        * (f64::from(u8::from(unlaned(cache) > 0))
            + f64::from(u8::from(!cache.recently_closed.is_empty())));
    (28.0 + lanes * LANE_H + extra).max(BLOCK_MIN_H)
}

/// The y of lane `i` of a block whose top is `top` and has `n` lanes.
fn lane_y(top: f64, i: usize, n: usize) -> f64 {
    let n = n.clamp(1, MAX_LANES) as f64;
    let first = top + 28.0 + (BLOCK_MIN_H - 28.0 - n * LANE_H).max(0.0) / 2.0;
    first + i as f64 * LANE_H + LANE_H / 2.0
}

/// The ring's centre y in a block whose top is `top`.
fn ring_y(top: f64) -> f64 {
    top + 24.0 + RING_R + 6.0
}

/// Point at fraction `f` (0..=1) along a lane from the ring to its end:
/// a smooth bend from the ring's height to the lane's, then straight.
fn along(f: f64, from_y: f64, to_y: f64) -> (f64, f64) {
    let x = FAN_X + (LANE_END - FAN_X) * f;
    let bend = ((x - FAN_X) / (LANE_X - FAN_X)).clamp(0.0, 1.0);
    let smooth = bend * bend * (3.0 - 2.0 * bend);
    (x, from_y + (to_y - from_y) * smooth)
}

#[component]
pub fn Fanout() -> impl IntoView {
    let model = expect_context::<Model>();
    let view = expect_context::<ViewState>();
    // The resource whose cache is drawn, when the viewer picked one.
    let picked: RwSignal<Option<String>> = RwSignal::new(None);
    // The caches of the resources the page draws tokens for, as tabs; the
    // others are only counted.
    let split = move || {
        let resources = model
            .hello
            .with(|h| h.as_ref().map(|h| h.resources.clone()).unwrap_or_default());
        model.watch_caches.with(|r| {
            let caches = r.as_ref().map(|r| r.caches.clone()).unwrap_or_default();
            caches
                .into_iter()
                .partition::<Vec<_>, _>(|c| resources.contains(&c.resource))
        })
    };
    let tabs = Memo::new(move |_| {
        split()
            .0
            .into_iter()
            .map(|c| (c.resource.clone(), c.watchers.len()))
            .collect::<Vec<_>>()
    });
    // The picked cache, else the filtered resource's, else the busiest.
    let selected = Memo::new(move |_| {
        let caches = split().0;
        let wanted = picked
            .get()
            .or_else(|| Some(view.resource.get()).filter(|r| !r.is_empty()));
        wanted
            .and_then(|w| caches.iter().find(|c| c.resource == w).cloned())
            .or_else(|| {
                caches
                    .iter()
                    .max_by_key(|c| (c.watchers.len(), std::cmp::Reverse(c.resource.clone())))
                    .cloned()
            })
    });
    let others = move || {
        split()
            .1
            .into_iter()
            .filter(|c| !c.watchers.is_empty())
            .map(|c| {
                let n = c.watchers.len();
                format!(
                    "{} ({n} watcher{})",
                    c.resource,
                    if n == 1 { "" } else { "s" }
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let current = move || selected.with(|c| c.as_ref().map(|c| c.resource.clone()));
    view! {
        <Show when=move || model.watch_caches.with(Option::is_some)>
            <section class="fanout panel" aria-label="The watch cache's fan-out">
                <h2>
                    "Fan-out "
                    <small>"one watch cache, many watchers"</small>
                </h2>
                <div class="tabs" role="group" aria-label="Watch cache of">
                    {move || {
                        tabs.get()
                            .into_iter()
                            .map(|(resource, n)| {
                                let r = resource.clone();
                                let r2 = resource.clone();
                                view! {
                                    <button
                                        class="tab"
                                        data-resource=resource.clone()
                                        aria-pressed=move || (current().as_deref() == Some(r2.as_str())).to_string()
                                        on:click=move |_| picked.set(Some(r.clone()))
                                    >
                                        {resource.clone()}
                                        <span class="tab-count">{format!(" {n}")}</span>
                                    </button>
                                }
                            })
                            .collect_view()
                    }}
                </div>
                <svg
                    id="fanout"
                    viewBox=move || format!("0 0 {WIDTH} {}", selected.with(|c| c.as_ref().map_or(BLOCK_MIN_H, block_h)))
                    role="group"
                    aria-label="The watch cache's ring of recent events, and one lane per watcher it copies each event to"
                >
                    {move || selected.get().map(|cache| view! { <CacheBlock cache top=0.0/> })}
                </svg>
                <p class="hint fanout-others">
                    {move || {
                        let o = others();
                        if o.is_empty() { String::new() } else { format!("Also cached and watched: {o}.") }
                    }}
                </p>
            </section>
        </Show>
    }
}

/// One cache: its ring, its lanes, and the copies of events on them.
#[component]
fn CacheBlock(cache: CacheState, top: f64) -> impl IntoView {
    let player = expect_context::<Player>();
    let cy = ring_y(top);
    let circumference = std::f64::consts::TAU * RING_R;
    let fill = if cache.capacity == 0 {
        0.0
    } else {
        (cache.len as f64 / cache.capacity as f64).min(1.0)
    };
    let n = cache.watchers.len();
    let lanes: Vec<(String, f64, u32, u32, bool)> = cache
        .watchers
        .iter()
        .take(MAX_LANES)
        .enumerate()
        .map(|(i, w)| {
            (
                watcher_name(&w.name),
                lane_y(top, i, n),
                w.buffered,
                w.capacity,
                w.blocking,
            )
        })
        .collect();
    let lane_ys: Vec<f64> = lanes.iter().map(|l| l.1).collect();
    let incoming = cache.incoming;
    let resource = cache.resource.clone();
    // Copies of the tokens now between the watch cache and the Reflector.
    let copies = move || {
        player.tick.track();
        let step = player.reduced_motion.get();
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
    let dots = move || {
        copies()
            .into_iter()
            .flat_map(|(id, class, f)| {
                let class = format!("copy {class}");
                lane_ys
                    .iter()
                    .map(|ly| {
                        let (x, y) = along(f, cy, *ly);
                        view! { <circle class=class.clone() cx=format!("{x:.1}") cy=format!("{y:.1}") r=5 data-copy=id/> }
                    })
                    .collect::<Vec<_>>()
            })
            .collect_view()
    };
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
            {lanes
                .into_iter()
                .map(|(name, ly, buffered, capacity, blocking)| {
                    let full = if capacity == 0 { 0.0 } else { (buffered as f64 / capacity as f64).min(1.0) };
                    let path = format!(
                        "M{FAN_X},{cy} C{:.1},{cy} {:.1},{ly} {LANE_X},{ly} L{LANE_END},{ly}",
                        FAN_X + 45.0,
                        LANE_X - 45.0
                    );
                    view! {
                        <g class="watcher" class:filling={full >= 0.5} class:blocking=blocking data-name=name.clone() data-buffered=buffered>
                            <path class="lane-path" d=path/>
                            <text class="watcher-name" x=NAME_X y=ly + 4.0>{name.clone()}</text>
                            <rect class="buffer-bg" x=BUFFER_X y=ly - 4.0 width=BUFFER_W height=8 rx=2/>
                            <rect class="buffer-fill" x=BUFFER_X y=ly - 4.0 width=format!("{:.1}", (full * BUFFER_W).max(if buffered > 0 { 2.0 } else { 0.0 })) height=8 rx=2/>
                            <text class="buffer-count" x=BUFFER_X + BUFFER_W + 6.0 y=ly + 4.0>{format!("{buffered}/{capacity}")}</text>
                            <title>{if blocking {
                                format!("{name}: its buffer is full ({buffered} of {capacity}); the dispatcher is waiting for it, at most its time budget (≤ 100 ms), then closes the watch")
                            } else {
                                format!("{name}: {buffered} of {capacity} events waiting in its buffer for its writer; when full, the dispatcher waits at most its time budget, then closes the watch")
                            }}</title>
                        </g>
                    }
                })
                .collect_view()}
            {(n == 0).then(|| view! {
                <text class="hint-text" x=LANE_X y=lane_y(top, 0, 1) + 4.0>"no watcher right now"</text>
            })}
            {(more > 0).then(|| view! {
                <text class="hint-text" x=NAME_X y=last_lane + LANE_H + 4.0>{format!("+{more} more watchers")}</text>
            })}
            {closed.map(|text| view! {
                <text class="closed-slow" x=LANE_X y=closed_y>{text}</text>
            })}
            <g class="copies" aria-hidden="true">{dots}</g>
        </g>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_bend_from_the_ring_and_end_straight() {
        assert_eq!(along(0.0, 50.0, 90.0), (FAN_X, 50.0));
        let (x, y) = along(1.0, 50.0, 90.0);
        assert_eq!((x, y), (LANE_END, 90.0));
        let (_, mid) = along(0.1, 50.0, 90.0);
        assert!(mid > 50.0 && mid < 90.0);
    }

    #[test]
    fn a_block_grows_with_its_lanes_but_never_shrinks_below_the_ring() {
        let mut c = CacheState::default();
        assert_eq!(block_h(&c), BLOCK_MIN_H);
        c.watchers = vec![Default::default(); 12];
        assert!(block_h(&c) > BLOCK_MIN_H);
        assert!(lane_y(0.0, 0, 1) > 28.0);
        assert_eq!(unlaned(&c), 4);
    }

    #[test]
    fn watchers_the_report_only_counts_are_counted_too() {
        let c = CacheState {
            watchers: vec![Default::default(); 32],
            more_watchers: 9_968,
            ..Default::default()
        };
        assert_eq!(unlaned(&c), 10_000 - MAX_LANES as u64);
    }
}
