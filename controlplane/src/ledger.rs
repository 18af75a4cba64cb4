//! The stage ledger: when each recent change passed each server-side stage
//! before any watcher (commit, the Cacher's Reflector, the watch cache,
//! dispatch).
//!
//! A client that sees an event over HTTP (the bridge list-watching the demo
//! API, `kubectl get -w`) gets the object but not the times the control plane
//! measured. The ledger keeps them by revision, so the client can match an
//! event by its `resourceVersion` and show those stages as measured rather
//! than guessed. What happened on one watch stream (its buffer, its writer)
//! is kept per stream ([`crate::control_plane::StreamRecord`]).

use crate::resource::ResourceType;
use crate::store::Revision;
use crate::watch_cache::{CachedEvent, ChangeTimes};
use std::collections::VecDeque;
use watchlife_protocol::{EventType, Micros};

/// Changes the ledger remembers. A viewer matches an event within moments of
/// receiving it; 4,096 changes cover minutes of the story and a burst of a
/// large scale-up, at about a hundred bytes each.
pub const LEDGER_CAPACITY: usize = 4096;

/// The server-side stage times of one change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageRecord {
    pub revision: Revision,
    pub resource: ResourceType,
    pub event_type: EventType,
    /// Store key of the object.
    pub key: String,
    /// Commit, the Cacher's Reflector, the watch cache and `incoming`.
    pub times: ChangeTimes,
    /// When the dispatcher took it from `incoming`.
    pub dispatched_at: Micros,
}

/// A bounded record of recent changes, oldest dropped first.
///
/// Each type's dispatcher records its events in revision order, but two
/// types' dispatchers interleave, so a record may arrive after a newer
/// one: it is inserted in place.
#[derive(Debug)]
pub struct StageLedger {
    records: VecDeque<StageRecord>,
    capacity: usize,
}

impl Default for StageLedger {
    fn default() -> Self {
        StageLedger::with_capacity(LEDGER_CAPACITY)
    }
}

impl StageLedger {
    /// A ledger that keeps the last `capacity` changes (at least one).
    pub fn with_capacity(capacity: usize) -> Self {
        StageLedger {
            records: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    /// Notes one dispatched change; events that are no change (synthetic,
    /// bookmarks) are not recorded.
    pub fn record(&mut self, resource: ResourceType, event: &CachedEvent) {
        let (Some(times), Some(dispatched_at)) = (event.times, event.dispatched_at()) else {
            return;
        };
        let record = StageRecord {
            revision: event.revision,
            resource,
            event_type: event.event_type,
            key: event.key.clone(),
            times,
            dispatched_at,
        };
        let at = self
            .records
            .partition_point(|r| r.revision < record.revision);
        if self
            .records
            .get(at)
            .is_some_and(|r| r.revision == record.revision)
        {
            return;
        }
        if self.records.len() == self.capacity {
            if at == 0 {
                return;
            }
            self.records.pop_front();
            self.records.insert(at - 1, record);
        } else {
            self.records.insert(at, record);
        }
    }

    /// The stage times of the change at `revision`, while it is remembered.
    pub fn get(&self, revision: Revision) -> Option<&StageRecord> {
        let at = self.records.partition_point(|r| r.revision < revision);
        self.records.get(at).filter(|r| r.revision == revision)
    }

    /// The oldest revision still remembered.
    pub fn oldest(&self) -> Option<Revision> {
        self.records.front().map(|r| r.revision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Clock;
    use crate::resource::PODS;
    use crate::store::Store;
    use crate::watch_cache::WatchCache;
    use serde_json::json;

    #[test]
    fn finds_recent_changes_by_revision_and_forgets_old_ones() {
        let clock = Clock::new(|| 7);
        let mut store = Store::new(clock.clone());
        let mut cache = WatchCache::new(PODS, 10, [], store.revision(), clock);
        let mut ledger = StageLedger::with_capacity(2);
        let mut events = Vec::new();
        for name in ["a", "b", "c"] {
            let change = store.create(name, json!({})).unwrap();
            let event = cache.process(&change, 7, 1);
            event.mark_dispatched(8);
            events.push(event);
        }
        // Recorded out of order, as two dispatchers may.
        ledger.record(PODS, &events[1]);
        ledger.record(PODS, &events[0]);
        ledger.record(PODS, &events[2]);
        assert_eq!(ledger.oldest(), Some(3));
        assert!(ledger.get(2).is_none(), "dropped: over capacity");
        let c = ledger.get(4).unwrap();
        assert_eq!((c.key.as_str(), c.event_type), ("c", EventType::Added));
        assert_eq!(
            (c.times.committed_at, c.times.cached_at, c.dispatched_at),
            (7, 7, 8)
        );
        assert!(ledger.get(5).is_none());
    }
}
