//! Where a token is on the drawing: its journey through the spots, from
//! the animator's times at each stage and, with the server side opened, the
//! inner hops' measured times placed between them.
//!
//! The animator schedules the stages (etcd, watch cache, watch stream, …).
//! An inner hop is reached at the same fraction of its stage-to-stage
//! stretch as its measured time is of the measured stretch: the Cacher's
//! reflector between the commit and the watch cache; `incoming` as the event
//! enters the watch cache; the dispatcher and the watcher's buffer between
//! the watch cache and the write. A hop without a measurement is not
//! reached: the token jumps over it, as over a stage that was not observed.

use super::spot::{Hop, Spot, spots};
use crate::animator::Token;
use watchlife_protocol::{Micros, Stage, WatchEvent};

/// Where a token is at one moment: leaving spot `from` (an index into
/// [`spots`]) for spot `to`, `progress` of the way there.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Leg {
    pub from: usize,
    pub to: usize,
    pub progress: f64,
    /// Spots lie between the two that the event has no time for: the token
    /// jumps over them instead of travelling through as if measured.
    pub jump: bool,
}

/// Each spot the token reaches, with the animation time it reaches it.
pub fn timeline(token: &Token, open: bool) -> Vec<(usize, f64)> {
    let all = spots(open);
    let index = |spot: Spot| all.iter().position(|s| *s == spot);
    let mut out: Vec<(usize, f64)> = token
        .hops
        .iter()
        .filter_map(|(stage, t)| Some((index(Spot::Stage(*stage))?, *t)))
        .collect();
    if open {
        for (hop, t) in hop_times(&token.row.event, &token.hops) {
            if let Some(i) = index(Spot::Hop(hop)) {
                out.push((i, t));
            }
        }
    }
    // Spot order; a time never before the spot's before it.
    out.sort_by_key(|(i, _)| *i);
    let mut latest = f64::MIN;
    for (_, t) in &mut out {
        latest = latest.max(*t);
        *t = latest;
    }
    out
}

/// The inner hops' animation times, from the stage times `hops` and the
/// event's measured server path.
fn hop_times(e: &WatchEvent, hops: &[(Stage, f64)]) -> Vec<(Hop, f64)> {
    let Some(path) = e.server.as_deref() else {
        return Vec::new();
    };
    let anim = |stage| hops.iter().find(|h| h.0 == stage).map(|h| h.1);
    let mark = |stage| e.stages.get(&stage).map(|m| m.at);
    let mut out = Vec::new();
    let (commit, cached, written) = (
        mark(Stage::Etcd),
        mark(Stage::WatchCache),
        mark(Stage::WatchStream),
    );
    let (t_commit, t_cached, t_written) = (
        anim(Stage::Etcd),
        anim(Stage::WatchCache),
        anim(Stage::WatchStream),
    );
    let between = |a: Option<(Micros, f64)>, b: Option<(Micros, f64)>, at: Option<Micros>| {
        let ((m0, t0), (m1, t1), at) = (a?, b?, at?);
        Some(t0 + (t1 - t0) * fraction(m0, m1, at))
    };
    let start = commit.zip(t_commit);
    let cache = cached.zip(t_cached);
    let end = written.zip(t_written);
    out.extend(between(start, cache, path.reflected).map(|t| (Hop::CacherReflector, t)));
    out.extend(t_cached.map(|t| (Hop::Incoming, t)));
    out.extend(between(cache, end, path.dispatched.map(|d| d.at)).map(|t| (Hop::Dispatcher, t)));
    out.extend(between(cache, end, Some(path.buffered.at)).map(|t| (Hop::Buffer, t)));
    out
}

/// Where `at` falls from `from` to `to`, in 0..=1 (0 when they are one
/// instant, or `at` was read out of order).
fn fraction(from: Micros, to: Micros, at: Micros) -> f64 {
    let span = crate::interval::interval(from, to);
    if span <= 0 {
        return 0.0;
    }
    (crate::interval::interval(from, at) as f64 / span as f64).clamp(0.0, 1.0)
}

/// The token's leg at animation time `t`; with `step` (reduced motion) it
/// stays on the spot it last reached.
pub fn leg(timeline: &[(usize, f64)], t: f64, step: bool) -> Option<Leg> {
    let i = timeline.iter().rposition(|h| h.1 <= t)?;
    let (from, t0) = timeline[i];
    Some(match timeline.get(i + 1) {
        Some(&(to, t1)) if !step && t1 > t0 => Leg {
            from,
            to,
            progress: ((t - t0) / (t1 - t0)).clamp(0.0, 1.0),
            jump: to > from + 1,
        },
        _ => Leg {
            from,
            to: from,
            progress: 0.0,
            jump: false,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_row::EventRow;
    use crate::test_events::pod_event;
    use std::sync::Arc;
    use watchlife_protocol::{EventType, Origin, ServerPath, StageMark};

    fn token(stages: &[(Stage, u64)], server: Option<ServerPath>) -> Token {
        let mut e = pod_event(EventType::Modified, "web-1", "7", stages);
        e.server = server.map(Box::new);
        let row = EventRow {
            seq: 1,
            event: Arc::new(e),
        };
        let hops = crate::animator::schedule(&row, 0.0, Some(1_000.0));
        Token {
            id: 1,
            lane: 0,
            row,
            hops,
            merges: false,
            reordered: false,
        }
    }

    #[test]
    fn inner_hops_are_reached_at_their_measured_share_of_the_stretch() {
        // commit 0, reflected 50, cached 100, dispatched 300, buffered 400, written 500.
        let path = ServerPath {
            origin: Origin::Live,
            reflected: Some(50),
            dispatched: Some(StageMark::at(300)),
            buffered: StageMark::at(400),
            written: 500,
        };
        let stages = [
            (Stage::Etcd, 0),
            (Stage::WatchCache, 100),
            (Stage::WatchStream, 500),
        ];
        let t = token(&stages, Some(path));
        let line = timeline(&t, true);
        let spots: Vec<usize> = line.iter().map(|h| h.0).collect();
        assert_eq!(spots, [0, 1, 2, 3, 4, 5, 6]);
        let times: Vec<f64> = line.iter().map(|h| h.1).collect();
        // The journey of 1 000 ms is the 500 µs measured, dilated.
        assert_eq!(times, [0.0, 100.0, 200.0, 200.0, 600.0, 800.0, 1_000.0]);
        let mid = leg(&line, 400.0, false).unwrap();
        assert_eq!(
            (mid.from, mid.to, mid.progress, mid.jump),
            (3, 4, 0.5, false)
        );
        // Closed, the same token travels the three server stages only.
        assert_eq!(timeline(&t, false).len(), 3);
    }

    #[test]
    fn a_token_jumps_over_what_was_not_measured() {
        // A cluster: etcd's watch and the Reflector, nothing in between.
        let t = token(&[(Stage::Etcd, 0), (Stage::Reflector, 100)], None);
        let closed = timeline(&t, false);
        let l = leg(&closed, 500.0, false).unwrap();
        assert!(l.jump, "etcd → Reflector skips the watch cache and stream");
        let open = timeline(&t, true);
        assert!(leg(&open, 500.0, false).unwrap().jump);
        // Next to each other: a plain traversal.
        let t = token(&[(Stage::Reflector, 0), (Stage::Fifo, 100)], None);
        assert!(!leg(&timeline(&t, false), 500.0, false).unwrap().jump);
        // Reduced motion: no leg in flight.
        assert_eq!(
            leg(&timeline(&t, false), 500.0, true).unwrap().progress,
            0.0
        );
    }
}
