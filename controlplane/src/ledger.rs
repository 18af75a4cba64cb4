//! The stage ledger: when each recent change passed each server-side stage.
//!
//! A client that sees an event over HTTP (the bridge list-watching the demo
//! API, `kubectl get -w`) gets the object but not the times the control plane
//! measured. The ledger keeps them by revision, so the client can match an
//! event by its `resourceVersion` and show commit, watch cache and dispatch as
//! measured rather than guessed.

use crate::resource::ResourceType;
use crate::store::Revision;
use crate::watch_cache::Dispatched;
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
    /// When the store committed the change.
    pub committed_at: Micros,
    /// When the watch cache took it.
    pub cached_at: Micros,
    /// When the cache put it in the buffers of the watchers attached then (a
    /// watcher that starts later from an older revision gets its own time).
    pub dispatched_at: Micros,
    /// How many watchers took it.
    pub delivered: usize,
}

/// A bounded record of recent changes, oldest dropped first.
///
/// Revisions are recorded in increasing order (the control plane records each
/// change under its lock, right after committing it), so a lookup is a binary
/// search.
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

    /// Notes one dispatched change.
    pub fn record(&mut self, resource: ResourceType, dispatched: &Dispatched) {
        let event = &dispatched.event;
        if self.records.len() == self.capacity {
            self.records.pop_front();
        }
        self.records.push_back(StageRecord {
            revision: event.revision,
            resource,
            event_type: event.event_type,
            key: event.key.clone(),
            committed_at: event.committed_at,
            cached_at: event.cached_at,
            dispatched_at: dispatched.dispatched_at,
            delivered: dispatched.delivered,
        });
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
        for name in ["a", "b", "c"] {
            let change = store.create(name, json!({})).unwrap();
            ledger.record(PODS, &cache.apply(&change));
        }
        assert_eq!(ledger.oldest(), Some(3));
        assert!(ledger.get(2).is_none(), "dropped: over capacity");
        let c = ledger.get(4).unwrap();
        assert_eq!((c.key.as_str(), c.event_type), ("c", EventType::Added));
        assert_eq!((c.committed_at, c.cached_at, c.dispatched_at), (7, 7, 7));
        assert!(ledger.get(5).is_none());
    }
}
