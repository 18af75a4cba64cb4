//! One event's every hop, server and client, as spans of measured time for
//! its waterfall: the apiserver's inner hops where the server reports them
//! (the demo's `server` path), then each client stage, then the reconcile's
//! run. A hop with no measurement is kept, unmeasured, so that the reader
//! sees what is not known rather than a gap.

use crate::interval::interval;
use watchlife_protocol::{Micros, Stage, WatchEvent};

/// One hop: from the last measured instant before it to its own, when both
/// were measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// For the stylesheet and tests (`incoming`, `reflector`).
    pub id: &'static str,
    pub label: &'static str,
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
            label,
            at: from.zip(at),
        });
        if at.is_some() && id != "reconcile_run" {
            last = at;
        }
    }
    out
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
}
