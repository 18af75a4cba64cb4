//! One event's every hop, server and client, as spans of measured time for
//! its waterfall: the apiserver's inner hops where the server reports them
//! (the demo's `server` path), then each client stage, then the reconcile's
//! run. A hop with no measurement is kept, unmeasured, so that the reader
//! sees what is not known rather than a gap. After them, each connected
//! controller's hops with the same version of the object
//! ([`controller_spans`]).

use crate::interval::interval;
use crate::taps::ControllerHops;
use std::borrow::Cow;
use watchlife_protocol::{Micros, Stage, WatchEvent};

/// One hop: from the last measured instant before it to its own, when both
/// were measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// For the stylesheet and tests (`incoming`, `reflector`).
    pub id: &'static str,
    pub label: Cow<'static, str>,
    /// Start and end (µs on the event's clock); `None` when not measured.
    pub at: Option<(Micros, Micros)>,
}

impl Span {
    /// The signed duration, when measured.
    pub fn micros(&self) -> Option<i64> {
        self.at.map(|(from, to)| interval(from, to))
    }
}

/// Every hop of `e`, in pipeline order.
pub fn spans(e: &WatchEvent) -> Vec<Span> {
    let mark = |s: Stage| e.stages.get(&s).map(|m| m.at);
    let path = e.server.as_deref();
    let points: [(&'static str, &'static str, Option<Micros>); 13] = [
        ("etcd", "etcd committed it", mark(Stage::Etcd)),
        (
            "cacher_reflector",
            "Cacher's reflector read",
            path.and_then(|p| p.reflected),
        ),
        (
            "watch_cache",
            "into the watch cache",
            mark(Stage::WatchCache),
        ),
        (
            "incoming",
            "waited in incoming",
            path.and_then(|p| p.dispatched.map(|d| d.at)),
        ),
        (
            "buffer",
            "dispatched to a buffer",
            path.map(|p| p.buffered.at),
        ),
        (
            "watch_stream",
            "buffered, then written",
            mark(Stage::WatchStream),
        ),
        ("reflector", "Reflector read it", mark(Stage::Reflector)),
        ("fifo", "queued in the FIFO", mark(Stage::Fifo)),
        ("indexer", "stored in the Indexer", mark(Stage::Indexer)),
        ("handlers", "handed to handlers", mark(Stage::Handlers)),
        ("workqueue", "key in the workqueue", mark(Stage::Workqueue)),
        ("reconcile", "a worker took the key", mark(Stage::Reconcile)),
        (
            "reconcile_run",
            "the reconcile ran",
            e.handled.reconcile.as_ref().map(|r| r.finished),
        ),
    ];
    let mut last: Option<Micros> = None;
    let mut out = Vec::with_capacity(points.len());
    for (id, label, at) in points {
        let from = if id == "reconcile_run" {
            e.handled.reconcile.as_ref().map(|r| r.started)
        } else {
            last
        };
        if id == "etcd" {
            // The first instant: where the waterfall starts, not a hop.
            last = at;
            continue;
        }
        out.push(Span {
            id,
            label: label.into(),
            at: from.zip(at),
        });
        if at.is_some() && id != "reconcile_run" {
            last = at;
        }
    }
    out
}

/// One controller's hops with the event `e`, on the controller's clock
/// (the waterfall heads them with the controller's name):
/// its watcher yielding the version (from the watch cache, whose stamp is
/// the bridge's: the two clocks are one only on one machine), the wait in
/// the trigger, scheduler and runner (one span: kube-runtime lets no one
/// tell them apart), and the reconcile's run.
pub fn controller_spans(e: &WatchEvent, hops: &ControllerHops) -> [Span; 3] {
    let cached = [Stage::WatchCache, Stage::Etcd]
        .iter()
        .find_map(|s| e.stages.get(s).map(|m| m.at));
    let r = hops.reconcile.as_ref();
    let started = r.and_then(|r| r.started_us);
    let ended = r.and_then(|r| r.end.as_ref().map(|e| e.at_us));
    [
        Span {
            id: "tap_watcher",
            label: "its watcher got it".into(),
            at: cached.zip(hops.watcher_at),
        },
        Span {
            id: "tap_wait",
            label: "trigger, scheduler, runner: not observed separately".into(),
            at: hops.wait_from().zip(started),
        },
        Span {
            id: "tap_reconcile",
            label: "its reconcile ran".into(),
            at: started.zip(ended),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_events::pod_event;
    use watchlife_protocol::{EventType, Origin, ServerPath, StageMark};

    #[test]
    fn every_hop_is_a_span_and_an_unmeasured_one_says_so() {
        let mut e = pod_event(
            EventType::Modified,
            "web-1",
            "7",
            &[
                (Stage::Etcd, 0),
                (Stage::WatchCache, 100),
                (Stage::WatchStream, 500),
                (Stage::Reflector, 900),
            ],
        );
        e.server = Some(Box::new(ServerPath {
            origin: Origin::Live,
            reflected: Some(50),
            dispatched: Some(StageMark::at(300)),
            buffered: StageMark::at(400),
            written: 500,
        }));
        let s = spans(&e);
        let got: Vec<(&str, Option<i64>)> = s.iter().map(|s| (s.id, s.micros())).collect();
        assert_eq!(
            &got[..6],
            [
                ("cacher_reflector", Some(50)),
                ("watch_cache", Some(50)),
                ("incoming", Some(200)),
                ("buffer", Some(100)),
                ("watch_stream", Some(100)),
                ("reflector", Some(400)),
            ]
        );
        assert_eq!(s.iter().find(|s| s.id == "fifo").unwrap().at, None);
        // A cluster's event: no server path, its inner hops unmeasured.
        let e = pod_event(
            EventType::Added,
            "a",
            "1",
            &[(Stage::Reflector, 10), (Stage::Fifo, 12)],
        );
        let s = spans(&e);
        assert_eq!(s.iter().find(|s| s.id == "incoming").unwrap().at, None);
        assert_eq!(s.iter().find(|s| s.id == "fifo").unwrap().micros(), Some(2));
    }

    #[test]
    fn a_controllers_hops_follow_from_the_watch_cache() {
        use crate::taps::{Taps, tests as t};
        use watchlife_protocol::tap::{ReconcileResult, Requeue};
        let e = pod_event(
            EventType::Modified,
            "web",
            "812",
            &[(Stage::Etcd, 0), (Stage::WatchCache, 100)],
        );
        let mut taps = Taps::default();
        taps.record(t::relay(1, "cm", t::watcher(1, 400, "812")));
        taps.record(t::relay(1, "cm", t::start(2, 1_100, 1, "812")));
        let done = ReconcileResult::Action {
            action: Requeue::AwaitChange,
        };
        taps.record(t::relay(1, "cm", t::end(3, 3_100, 1, done)));
        let hops = &taps.hops_of(Some("default"), "web", "812")[0];
        let s = controller_spans(&e, hops);
        let got: Vec<(&str, Option<i64>)> = s.iter().map(|s| (s.id, s.micros())).collect();
        assert_eq!(
            got,
            [
                ("tap_watcher", Some(300)),
                ("tap_wait", Some(700)),
                ("tap_reconcile", Some(2_000))
            ]
        );
        assert_eq!(s[2].label, "its reconcile ran");
    }
}
