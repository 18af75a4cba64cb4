//! What each named watch stream was sent and when, and how the last LIST and
//! WATCH of each client were answered.
//!
//! A client names its requests (the demo API reads a header, see
//! `watchlife_demo_apiserver::watch`); its writer notes each event it
//! writes. The client then matches an event it received by its
//! resourceVersion and gets its own times: when the event went into *its*
//! buffer and was written on *its* stream, whether it was live, replayed
//! from the window, or a synthetic ADDED. Another stream's times are never
//! lent.

use super::ControlPlane;
use crate::store::Revision;
use crate::watch_cache::{Delivery, Origin};
use std::collections::{BTreeMap, VecDeque};
use watchlife_protocol::Micros;

/// Records kept per stream: a client matches an event moments after
/// receiving it.
pub const STREAM_RECORDS: usize = 1024;

/// Named streams remembered; beyond it the one written to least recently is
/// forgotten. Names come from clients, so their number must be bounded.
pub const MAX_STREAMS: usize = 64;

/// The longest stream name kept; a longer one is not recorded.
pub const MAX_STREAM_NAME: usize = 128;

/// One event as one stream was sent it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamRecord {
    pub revision: Revision,
    pub origin: Origin,
    /// When the dispatcher (or, for a replayed or synthetic event, the watch's
    /// start) put it in the stream's buffer.
    pub buffered_at: Micros,
    /// Events in the buffer once it was put there, itself included.
    pub buffer_depth: u32,
    /// When the stream's writer wrote it.
    pub written_at: Micros,
}

/// Who answered a LIST.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServedFrom {
    /// The watch cache, at its revision then (`resourceVersion=0`, or a
    /// revision the cache had reached or caught up to).
    WatchCache {
        revision: Revision,
        /// How long the request waited for the cache to reach the revision
        /// asked (`waitUntilFreshAndBlock`).
        waited: Micros,
    },
    /// A consistent read from the store (`resourceVersion=""`, a continue
    /// token, a limit with a revision other than 0, or `Exact`).
    Store { revision: Revision },
}

/// A consistent read (`resourceVersion=""`) a v1.36 server tried to serve
/// from its watch cache (`ConsistentListFromCache`): it asked the store for
/// its current revision and waited for the cache to reach it, for at most
/// `blockTimeout` (3 s), then read the cache or fell back to the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsistentRead {
    /// The store's revision when the LIST came: the cache had to reach it.
    pub store_revision: Revision,
    /// How long the LIST waited for the cache.
    pub waited: Micros,
    /// Whether the cache caught up and answered (else the store did).
    pub from_cache: bool,
}

/// How a LIST was answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListAnswer {
    /// The resourceVersion asked (`""` when none was given).
    pub asked: String,
    pub limit: u64,
    pub served: ServedFrom,
    pub items: u64,
    pub at: Micros,
    /// Set for a consistent read tried from the cache (see
    /// [`ConsistentRead`]); `None` for any other LIST and on v1.20.
    pub consistent: Option<ConsistentRead>,
}

/// How a WATCH was started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchAnswer {
    /// The resourceVersion asked (`""` or `"0"` for "any").
    pub asked: String,
    /// Events replayed from the window.
    pub replayed: u32,
    /// Synthetic ADDED events, one per current object.
    pub synthetic: u32,
    pub at: Micros,
}

#[derive(Debug, Default)]
struct Stream {
    records: VecDeque<StreamRecord>,
    list: Option<ListAnswer>,
    watch: Option<WatchAnswer>,
    touched: Micros,
}

/// Every named stream's records.
#[derive(Debug, Default)]
pub(super) struct Streams {
    by_name: BTreeMap<String, Stream>,
}

impl Streams {
    fn stream(&mut self, name: &str, now: Micros) -> Option<&mut Stream> {
        if name.is_empty() || name.len() > MAX_STREAM_NAME {
            return None;
        }
        if !self.by_name.contains_key(name) && self.by_name.len() >= MAX_STREAMS {
            let oldest = self
                .by_name
                .iter()
                .min_by_key(|(_, s)| s.touched)
                .map(|(n, _)| n.clone());
            if let Some(oldest) = oldest {
                self.by_name.remove(&oldest);
            }
        }
        let stream = self.by_name.entry(name.to_string()).or_default();
        stream.touched = now;
        Some(stream)
    }
}

impl ControlPlane {
    /// Notes that the writer of stream `name` wrote `delivery` at
    /// `written_at`.
    pub fn note_written(&self, name: &str, delivery: &Delivery, written_at: Micros) {
        if delivery.origin == Origin::Bookmark {
            return;
        }
        let mut state = self.lock();
        let Some(stream) = state.streams.stream(name, written_at) else {
            return;
        };
        if stream.records.len() == STREAM_RECORDS {
            stream.records.pop_front();
        }
        stream.records.push_back(StreamRecord {
            revision: delivery.event.revision,
            origin: delivery.origin,
            buffered_at: delivery.buffered_at,
            buffer_depth: delivery.buffer_depth,
            written_at,
        });
    }

    /// What stream `name` was sent of the change at `revision`, if it
    /// remembers (the newest such record: a stream that re-watched may have
    /// been sent it twice).
    pub fn stream_times(&self, name: &str, revision: Revision) -> Option<StreamRecord> {
        let state = self.lock();
        let stream = state.streams.by_name.get(name)?;
        stream
            .records
            .iter()
            .rev()
            .find(|r| r.revision == revision)
            .copied()
    }

    /// Notes how a LIST of client `name` was answered.
    pub fn note_list(&self, name: &str, answer: ListAnswer) {
        let mut state = self.lock();
        if let Some(stream) = state.streams.stream(name, answer.at) {
            stream.list = Some(answer);
        }
    }

    /// Notes how a WATCH of client `name` was started.
    pub fn note_watch(&self, name: &str, answer: WatchAnswer) {
        let mut state = self.lock();
        if let Some(stream) = state.streams.stream(name, answer.at) {
            stream.watch = Some(answer);
        }
    }

    /// Notes that a WATCH of client `name` was refused (410, too large, not
    /// ready): it started nothing, so the answer of an earlier watch no
    /// longer stands for the client's last one.
    pub fn note_watch_refused(&self, name: &str) {
        if let Some(stream) = self.lock().streams.by_name.get_mut(name) {
            stream.watch = None;
        }
    }

    /// How the last LIST of client `name` was answered.
    pub fn last_list(&self, name: &str) -> Option<ListAnswer> {
        self.lock().streams.by_name.get(name)?.list.clone()
    }

    /// How the last WATCH of client `name` was started.
    pub fn last_watch(&self, name: &str) -> Option<WatchAnswer> {
        self.lock().streams.by_name.get(name)?.watch.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Clock;
    use crate::resource::PODS;
    use serde_json::json;

    #[test]
    fn a_replayed_event_keeps_its_own_stream_times() {
        let cp = ControlPlane::new(Clock::new(|| 10));
        let mut live = cp.watch_named("live", PODS, None, None).unwrap();
        let from = cp.revision();
        cp.create(PODS, json!({"metadata": {"name": "p"}})).unwrap();
        let d = live.try_recv().unwrap();
        cp.note_written("live", &d, 20);
        let mut late = cp.watch_named("late", PODS, Some(from), None).unwrap();
        let r = late.try_recv().unwrap();
        assert_eq!(r.origin, Origin::Replayed);
        cp.note_written("late", &r, 30);
        let rv = d.event.revision;
        assert_eq!(cp.stream_times("live", rv).unwrap().written_at, 20);
        let replayed = cp.stream_times("late", rv).unwrap();
        assert_eq!(
            (replayed.written_at, replayed.origin),
            (30, Origin::Replayed)
        );
        assert!(cp.stream_times("other", rv).is_none());
    }

    #[test]
    fn streams_are_bounded_in_number_and_name() {
        let cp = ControlPlane::new(Clock::new(|| 10));
        let mut rx = cp.watch_named("x", PODS, None, None).unwrap();
        cp.create(PODS, json!({"metadata": {"name": "p"}})).unwrap();
        let d = rx.try_recv().unwrap();
        for i in 0..(MAX_STREAMS + 10) {
            cp.note_written(&format!("s{i}"), &d, i as Micros);
        }
        assert_eq!(cp.lock().streams.by_name.len(), MAX_STREAMS);
        assert!(cp.stream_times("s0", d.event.revision).is_none());
        cp.note_written(&"n".repeat(MAX_STREAM_NAME + 1), &d, 1);
        assert!(
            cp.stream_times(&"n".repeat(MAX_STREAM_NAME + 1), d.event.revision)
                .is_none()
        );
    }
}
