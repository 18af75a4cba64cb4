//! What the hub keeps of controllers' taps for a viewer who joins: enough
//! of each tap's latest frames to draw its lane as those who watched it
//! (see [`watchlife_protocol::Snapshot::taps`]), bounded whatever the taps
//! say and however many come and go.

use std::collections::{BTreeMap, VecDeque};
use watchlife_protocol::tap::{RequestVerb, TapFrame, TapRelay};

/// Tap connections remembered, the newest: twice the taps a bridge accepts
/// at once ([`crate::downstream::tap::MAX_TAPS`]), so that the lanes of
/// taps that just left are still drawn with why.
pub const TAPS_KEPT: usize = 32;

/// A tap's latest watcher events and reconciles kept: a page draws a
/// lane's last few reconciles and matches an event with the controller's
/// hops among its last 256 frames; this covers both.
pub const FRAMES_KEPT: usize = 256;

/// A tap's latest watcher requests (LIST, WATCH) and errors kept apart, so
/// that a busy controller's reconciles (and their own requests) never push
/// its watcher's LIST and WATCH out.
pub const REQUESTS_KEPT: usize = 8;

/// Each kept frame with its `seq` in the stream, so that a snapshot lists
/// them in the stream's order.
type Kept = VecDeque<(u64, TapRelay)>;

/// One tap connection's kept frames.
#[derive(Default)]
struct History {
    frames: Kept,
    requests: Kept,
    /// The latest counters.
    stats: Option<(u64, TapRelay)>,
    /// The tap's leaving.
    left: Option<(u64, TapRelay)>,
}

/// Every tap connection's kept frames, by the tap's number.
#[derive(Default)]
pub struct TapHistory {
    taps: BTreeMap<u64, History>,
}

impl TapHistory {
    /// Keeps `relay`, published as stream frame `seq`.
    pub fn keep(&mut self, seq: u64, relay: &TapRelay) {
        let history = self.taps.entry(relay.tap).or_default();
        let kept = (seq, relay.clone());
        match &relay.frame {
            None => history.left = Some(kept),
            Some(TapFrame::Stats(_)) => history.stats = Some(kept),
            Some(TapFrame::WatcherError(_)) => {
                push_bounded(&mut history.requests, kept, REQUESTS_KEPT)
            }
            Some(TapFrame::Request(r)) if r.verb != RequestVerb::Other => {
                push_bounded(&mut history.requests, kept, REQUESTS_KEPT)
            }
            Some(_) => push_bounded(&mut history.frames, kept, FRAMES_KEPT),
        }
        while self.taps.len() > TAPS_KEPT {
            self.taps.pop_first();
        }
    }

    /// Every kept frame, in the stream's order.
    pub fn snapshot(&self) -> Vec<TapRelay> {
        let mut all: Vec<&(u64, TapRelay)> = self
            .taps
            .values()
            .flat_map(|h| {
                h.frames
                    .iter()
                    .chain(&h.requests)
                    .chain(&h.stats)
                    .chain(&h.left)
            })
            .collect();
        all.sort_unstable_by_key(|(seq, _)| *seq);
        all.into_iter().map(|(_, relay)| relay.clone()).collect()
    }
}

fn push_bounded(kept: &mut Kept, frame: (u64, TapRelay), bound: usize) {
    kept.push_back(frame);
    if kept.len() > bound {
        kept.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use watchlife_protocol::tap::{RequestFrame, RequestVerb, Stats, WatcherEventKind};
    use watchlife_protocol::tap::{TapObjectRef, WatcherFrame};

    fn relay(tap: u64, frame: Option<TapFrame>) -> TapRelay {
        TapRelay {
            tap,
            controller: format!("c{tap}"),
            received: 1,
            left: frame.is_none().then(|| "gone".into()),
            frame,
        }
    }

    fn watcher(seq: u64) -> Option<TapFrame> {
        let web = TapObjectRef::namespaced("apps/v1", "Deployment", "default", "web");
        Some(TapFrame::Watcher(WatcherFrame {
            seq,
            at_us: seq,
            resource: "deployments.apps".into(),
            event: WatcherEventKind::Apply,
            object: Some(web),
            resource_version: Some(seq.to_string()),
            applied_to_store: None,
        }))
    }

    fn request(seq: u64) -> Option<TapFrame> {
        Some(TapFrame::Request(RequestFrame {
            seq,
            at_us: seq,
            method: "GET".into(),
            url: "/apis/apps/v1/deployments".into(),
            verb: RequestVerb::List,
            status: Some(200),
            duration_us: Some(5),
        }))
    }

    fn stats(seq: u64) -> Option<TapFrame> {
        Some(TapFrame::Stats(Stats {
            seq,
            at_us: seq,
            recorded: seq,
            dropped: 0,
        }))
    }

    #[test]
    fn a_busy_tap_keeps_its_latest_frames_its_requests_and_its_counters() {
        let mut history = TapHistory::default();
        let mut seq = 0;
        let mut publish = |history: &mut TapHistory, frame| {
            seq += 1;
            history.keep(seq, &relay(1, frame));
        };
        publish(&mut history, request(1));
        publish(&mut history, stats(2));
        for n in 3..1_000 {
            publish(&mut history, watcher(n));
        }
        publish(&mut history, stats(1_000));
        let kept = history.snapshot();
        let said: Vec<u64> = kept
            .iter()
            .map(|r| r.frame.as_ref().unwrap().seq())
            .collect();
        assert_eq!(said.len(), 1 + FRAMES_KEPT + 1);
        assert_eq!(said[0], 1, "the LIST, however old");
        assert_eq!(
            said[1],
            1_000 - FRAMES_KEPT as u64,
            "then the latest frames"
        );
        assert_eq!(said.last(), Some(&1_000), "and the latest counters only");
        assert!(
            said.windows(2).all(|w| w[0] < w[1]),
            "in the stream's order"
        );
    }

    #[test]
    fn the_reconcilers_own_requests_never_push_the_watchers_out() {
        let mut history = TapHistory::default();
        history.keep(1, &relay(1, request(1)));
        for n in 2..100 {
            let Some(TapFrame::Request(mut patch)) = request(n) else {
                unreachable!()
            };
            patch.verb = RequestVerb::Other;
            history.keep(n, &relay(1, Some(TapFrame::Request(patch))));
        }
        let first = history.snapshot().remove(0);
        assert!(matches!(first.frame, Some(TapFrame::Request(r)) if r.verb == RequestVerb::List));
    }

    #[test]
    fn taps_that_came_and_went_are_bounded_and_their_leaving_kept() {
        let mut history = TapHistory::default();
        for tap in 1..=100u64 {
            history.keep(tap * 2, &relay(tap, watcher(1)));
            history.keep(tap * 2 + 1, &relay(tap, None));
        }
        let kept = history.snapshot();
        assert_eq!(kept.len(), 2 * TAPS_KEPT);
        assert_eq!(kept[0].tap, 100 - TAPS_KEPT as u64 + 1, "the newest taps");
        assert_eq!(kept[1].left.as_deref(), Some("gone"));
    }
}
