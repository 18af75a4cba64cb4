//! The store, modelled on etcd's MVCC.
//!
//! One global revision counter: every create, update and delete takes the next
//! revision, and an object's `metadata.resourceVersion` is the revision that
//! last modified it. Every change is kept in a history until compaction drops
//! it (periodically, or beyond [`HISTORY_LIMIT`] changes or its
//! [`StoreQuota::max_history_bytes`]), so a watch can start from any retained
//! revision and replay what came after, in order, with no gap and no
//! duplicate.
//!
//! Like etcd, the store measures what it holds: each value's length as JSON,
//! refused over [`StoreQuota::max_value_bytes`] (etcd's request limit), and
//! its weight, the memory it takes parsed ([`object::weight`]), refused over
//! [`StoreQuota::max_value_weight`]; and the current values' weights
//! together, whose growth is refused over [`StoreQuota::max_live_bytes`]
//! (etcd's `--quota-backend-bytes`). Deletes and writes that do not grow the
//! total always go through.

use crate::clock::Clock;
use crate::object;
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use watchlife_protocol::Micros;

/// Most changes the history keeps: beyond it, the oldest change is compacted
/// away at each write, as etcd does with `--auto-compaction-mode=revision`.
/// The time-based compaction of a real apiserver (every 5 minutes) keeps 5 to
/// 10 minutes of history, which etcd holds on disk; held in memory at the
/// demo's 5,000 changes a second it grew by 18 MB a second (about 13 KB a
/// change, the demo's pods parsed). 10,000 changes are an hour of the demo's
/// story, 10 s at 1,000 changes a second, and about 130 MB at most.
pub const HISTORY_LIMIT: usize = 10_000;

/// A store revision (etcd's `mod_revision`, Kubernetes' `resourceVersion`).
pub type Revision = u64;

/// What a change did to its key, as etcd reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The key was written; `created` when it did not exist before.
    Put { created: bool },
    /// The key was removed.
    Delete,
}

/// One committed change.
#[derive(Debug, Clone)]
pub struct StoreEvent {
    pub change: Change,
    pub key: String,
    pub revision: Revision,
    /// The weight of `object`: the memory it takes ([`object::weight`]).
    pub size: usize,
    /// The object after the change, its `resourceVersion` set to `revision`. For
    /// a delete, the last value with `resourceVersion` set to the deletion's
    /// revision, as the apiserver sends it in a DELETED event.
    pub object: Arc<Value>,
    /// The value before the change, if the key existed.
    pub prev: Option<Arc<Value>>,
    /// When the change was committed.
    pub committed_at: Micros,
}

/// Why a store operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("{key} already exists")]
    AlreadyExists { key: String },
    #[error("{key} not found")]
    NotFound { key: String },
    #[error("{key} was modified at revision {current}, not {expected}")]
    Conflict {
        key: String,
        expected: Revision,
        current: Revision,
    },
    #[error("revision {requested} has been compacted (compacted up to {compacted})")]
    Compacted {
        requested: Revision,
        compacted: Revision,
    },
    #[error("revision {requested} is newer than the store's revision {current}")]
    FutureRevision {
        requested: Revision,
        current: Revision,
    },
    /// The value alone is over [`StoreQuota::max_value_bytes`] as JSON, or
    /// over [`StoreQuota::max_value_weight`] in memory (`in_memory`).
    #[error("{key}: a value of {size} bytes is over the limit of {limit}")]
    TooLarge {
        key: String,
        size: usize,
        limit: usize,
        in_memory: bool,
    },
    /// The write would grow the current values over
    /// [`StoreQuota::max_live_bytes`].
    #[error("{key}: the store holds {used} bytes; {grow} more would pass its quota of {quota}")]
    NoSpace {
        key: String,
        used: usize,
        grow: usize,
        quota: usize,
    },
}

/// What the store may hold: one value as JSON and in memory, and the
/// current values and the history in memory ([`object::weight`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreQuota {
    /// Largest value, as JSON.
    pub max_value_bytes: usize,
    /// Heaviest value, in memory.
    pub max_value_weight: usize,
    /// The current values together, in memory.
    pub max_live_bytes: usize,
    /// The history of changes together, in memory; beyond it the oldest are
    /// compacted.
    pub max_history_bytes: usize,
}

impl StoreQuota {
    /// No limit but [`HISTORY_LIMIT`].
    pub const UNBOUNDED: StoreQuota = StoreQuota {
        max_value_bytes: usize::MAX,
        max_value_weight: usize::MAX,
        max_live_bytes: usize::MAX,
        max_history_bytes: usize::MAX,
    };
}

#[derive(Debug, Clone)]
struct Entry {
    value: Arc<Value>,
    mod_revision: Revision,
    /// The value's weight.
    size: usize,
}

/// An MVCC key-value store of JSON objects.
#[derive(Debug)]
pub struct Store {
    revision: Revision,
    /// Changes with a revision at or below this are gone from the history.
    compacted: Revision,
    objects: BTreeMap<String, Entry>,
    history: VecDeque<StoreEvent>,
    clock: Clock,
    quota: StoreQuota,
    /// The current values' sizes, summed.
    live_bytes: usize,
    /// The history's values' sizes, summed.
    history_bytes: usize,
}

impl Store {
    /// An empty store at revision 1, as a fresh etcd is, with no quota.
    pub fn new(clock: Clock) -> Self {
        Store::with_quota(clock, StoreQuota::UNBOUNDED)
    }

    /// An empty store that holds at most `quota`.
    pub fn with_quota(clock: Clock, quota: StoreQuota) -> Self {
        Store {
            revision: 1,
            compacted: 0,
            objects: BTreeMap::new(),
            history: VecDeque::new(),
            clock,
            quota,
            live_bytes: 0,
            history_bytes: 0,
        }
    }

    /// The current values' total weight.
    pub fn live_bytes(&self) -> usize {
        self.live_bytes
    }

    /// The history's total weight.
    pub fn history_bytes(&self) -> usize {
        self.history_bytes
    }

    /// The latest revision.
    pub fn revision(&self) -> Revision {
        self.revision
    }

    /// The highest revision whose change has been dropped from the history.
    pub fn compacted(&self) -> Revision {
        self.compacted
    }

    /// Changes kept in the history.
    pub fn history_len(&self) -> usize {
        self.history.len()
    }

    /// The current value under `key`.
    pub fn get(&self, key: &str) -> Option<Arc<Value>> {
        self.objects.get(key).map(|e| e.value.clone())
    }

    /// Current values whose key starts with `prefix`, in key order.
    pub fn list<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = Arc<Value>> + 'a {
        self.objects
            .range(prefix.to_string()..)
            .take_while(move |(k, _)| k.starts_with(prefix))
            .map(|(_, e)| e.value.clone())
    }

    /// Current `(key, value)` pairs whose key starts with `prefix`, in key order.
    pub fn entries<'a>(
        &'a self,
        prefix: &'a str,
    ) -> impl Iterator<Item = (&'a str, Arc<Value>)> + 'a {
        self.objects
            .range(prefix.to_string()..)
            .take_while(move |(k, _)| k.starts_with(prefix))
            .map(|(k, e)| (k.as_str(), e.value.clone()))
    }

    /// The `(key, value)` pairs under `prefix` as they were at `revision`, in
    /// key order: etcd's range read at a past revision.
    ///
    /// Rebuilt from the current values by undoing the history after
    /// `revision`, so it fails with [`StoreError::Compacted`] once that
    /// history is gone, and with [`StoreError::FutureRevision`] for a revision
    /// not reached yet.
    pub fn entries_at(
        &self,
        prefix: &str,
        revision: Revision,
    ) -> Result<BTreeMap<String, Arc<Value>>, StoreError> {
        self.check_in_history(revision)?;
        let mut at: BTreeMap<String, Arc<Value>> = self
            .entries(prefix)
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        for event in self.history.iter().rev() {
            if event.revision <= revision {
                break;
            }
            if !event.key.starts_with(prefix) {
                continue;
            }
            match (&event.change, &event.prev) {
                (Change::Put { created: true }, _) | (_, None) => {
                    at.remove(&event.key);
                }
                (_, Some(prev)) => {
                    at.insert(event.key.clone(), prev.clone());
                }
            }
        }
        Ok(at)
    }

    /// Fails with [`StoreError::Compacted`] for a revision before the
    /// history kept, and with [`StoreError::FutureRevision`] for one not
    /// reached yet.
    fn check_in_history(&self, revision: Revision) -> Result<(), StoreError> {
        if revision < self.compacted {
            return Err(StoreError::Compacted {
                requested: revision,
                compacted: self.compacted,
            });
        }
        if revision > self.revision {
            return Err(StoreError::FutureRevision {
                requested: revision,
                current: self.revision,
            });
        }
        Ok(())
    }

    /// Writes a new key. Fails when the key exists.
    pub fn create(&mut self, key: &str, value: Value) -> Result<StoreEvent, StoreError> {
        if self.objects.contains_key(key) {
            return Err(StoreError::AlreadyExists { key: key.into() });
        }
        self.commit(key, Change::Put { created: true }, value, None)
    }

    /// Replaces an existing key. With `expected`, fails with a conflict unless
    /// the key was last modified at that revision (optimistic concurrency).
    pub fn update(
        &mut self,
        key: &str,
        value: Value,
        expected: Option<Revision>,
    ) -> Result<StoreEvent, StoreError> {
        let prev = self.check(key, expected)?;
        self.commit(key, Change::Put { created: false }, value, Some(prev))
    }

    /// Removes a key, with the same optional precondition as [`Store::update`].
    pub fn delete(
        &mut self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<StoreEvent, StoreError> {
        let prev = self.check(key, expected)?;
        let last = (*prev).clone();
        self.commit(key, Change::Delete, last, Some(prev))
    }

    /// Every change after `after` under `prefix`, oldest first.
    ///
    /// Fails with [`StoreError::Compacted`] when changes after `after` are no
    /// longer all in the history, so the caller cannot miss one silently.
    pub fn changes_after(
        &self,
        prefix: &str,
        after: Revision,
    ) -> Result<Vec<StoreEvent>, StoreError> {
        self.check_in_history(after)?;
        let start = self.history.partition_point(|e| e.revision <= after);
        Ok(self
            .history
            .range(start..)
            .filter(|e| e.key.starts_with(prefix))
            .cloned()
            .collect())
    }

    /// The first change after `after` under `prefix`: what etcd's watch on
    /// that prefix sends next to a watcher that has seen `after`. `Ok(None)`
    /// when there is none yet.
    ///
    /// Fails with [`StoreError::Compacted`] when that change may have been
    /// compacted away, as etcd ends such a watch, so a watcher never skips a
    /// change silently.
    pub fn next_change_after(
        &self,
        prefix: &str,
        after: Revision,
    ) -> Result<Option<&StoreEvent>, StoreError> {
        if after < self.compacted {
            return Err(StoreError::Compacted {
                requested: after,
                compacted: self.compacted,
            });
        }
        let start = self.history.partition_point(|e| e.revision <= after);
        Ok(self
            .history
            .range(start..)
            .find(|e| e.key.starts_with(prefix)))
    }

    /// Drops every change at or below `revision` from the history (capped at the
    /// current revision). Current values are kept.
    pub fn compact(&mut self, revision: Revision) {
        let revision = revision.min(self.revision);
        while self.history.front().is_some_and(|e| e.revision <= revision) {
            self.drop_oldest_change();
        }
        self.compacted = self.compacted.max(revision);
    }

    fn check(&self, key: &str, expected: Option<Revision>) -> Result<Arc<Value>, StoreError> {
        let entry = self
            .objects
            .get(key)
            .ok_or_else(|| StoreError::NotFound { key: key.into() })?;
        match expected {
            Some(expected) if expected != entry.mod_revision => Err(StoreError::Conflict {
                key: key.into(),
                expected,
                current: entry.mod_revision,
            }),
            _ => Ok(entry.value.clone()),
        }
    }

    /// Commits one change, after checking the value against the quota: a
    /// put whose value is too large, or that grows the current values past
    /// their quota, changes nothing and fails.
    fn commit(
        &mut self,
        key: &str,
        change: Change,
        mut value: Value,
        prev: Option<Arc<Value>>,
    ) -> Result<StoreEvent, StoreError> {
        let revision = self.revision + 1;
        object::set_meta(&mut value, "resourceVersion", revision.to_string());
        let size = object::weight(&value);
        let prev_size = self.objects.get(key).map_or(0, |e| e.size);
        if change != Change::Delete {
            let json = object::encoded_len(&value);
            if json > self.quota.max_value_bytes {
                return Err(StoreError::TooLarge {
                    key: key.into(),
                    size: json,
                    limit: self.quota.max_value_bytes,
                    in_memory: false,
                });
            }
            if size > self.quota.max_value_weight {
                return Err(StoreError::TooLarge {
                    key: key.into(),
                    size,
                    limit: self.quota.max_value_weight,
                    in_memory: true,
                });
            }
            let grow = size.saturating_sub(prev_size);
            if grow > 0 && self.live_bytes.saturating_add(grow) > self.quota.max_live_bytes {
                return Err(StoreError::NoSpace {
                    key: key.into(),
                    used: self.live_bytes,
                    grow,
                    quota: self.quota.max_live_bytes,
                });
            }
        }
        self.revision = revision;
        let value = Arc::new(value);
        self.live_bytes = self.live_bytes.saturating_sub(prev_size);
        match change {
            Change::Put { .. } => {
                self.live_bytes = self.live_bytes.saturating_add(size);
                self.objects.insert(
                    key.to_string(),
                    Entry {
                        value: value.clone(),
                        mod_revision: revision,
                        size,
                    },
                );
            }
            Change::Delete => {
                self.objects.remove(key);
            }
        }
        let event = StoreEvent {
            change,
            key: key.to_string(),
            revision,
            size,
            object: value,
            prev,
            committed_at: self.clock.now(),
        };
        self.history.push_back(event.clone());
        self.history_bytes = self.history_bytes.saturating_add(size);
        while self.history.len() > 1
            && (self.history.len() > HISTORY_LIMIT
                || self.history_bytes > self.quota.max_history_bytes)
        {
            let oldest = self.drop_oldest_change();
            self.compacted = self.compacted.max(oldest);
        }
        Ok(event)
    }

    /// Drops the oldest change of the history; returns its revision.
    fn drop_oldest_change(&mut self) -> Revision {
        match self.history.pop_front() {
            Some(oldest) => {
                self.history_bytes = self.history_bytes.saturating_sub(oldest.size);
                oldest.revision
            }
            None => self.compacted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn store() -> Store {
        Store::new(Clock::new(|| 0))
    }

    #[test]
    fn the_history_keeps_at_most_its_limit_and_compacts_the_oldest() {
        let mut s = store();
        s.create("/registry/configmaps/default/c", json!({"n": 0}))
            .unwrap();
        for n in 1..=HISTORY_LIMIT as u64 + 10 {
            s.update("/registry/configmaps/default/c", json!({"n": n}), None)
                .unwrap();
        }
        assert_eq!(s.history_len(), HISTORY_LIMIT);
        // The create and the first ten updates are gone, and reading from
        // them is refused as etcd refuses a compacted revision.
        assert_eq!(s.compacted(), 2 + 10);
        assert!(matches!(
            s.changes_after("/registry/", 5),
            Err(StoreError::Compacted { .. })
        ));
        assert_eq!(
            s.changes_after("/registry/", s.compacted()).unwrap().len(),
            HISTORY_LIMIT
        );
    }

    #[test]
    fn every_change_takes_the_next_revision() {
        let mut s = store();
        let a = s.create("/registry/pods/default/a", json!({})).unwrap();
        let b = s
            .update("/registry/pods/default/a", json!({}), None)
            .unwrap();
        let c = s.delete("/registry/pods/default/a", None).unwrap();
        assert_eq!((a.revision, b.revision, c.revision), (2, 3, 4));
        assert_eq!(object::resource_version(&b.object), Some("3"));
        assert_eq!(object::resource_version(&c.object), Some("4"));
        assert_eq!(a.change, Change::Put { created: true });
        assert_eq!(c.change, Change::Delete);
        assert!(s.get("/registry/pods/default/a").is_none());
    }

    #[test]
    fn stale_revision_is_a_conflict() {
        let mut s = store();
        s.create("k", json!({})).unwrap();
        s.update("k", json!({"v": 1}), Some(2)).unwrap();
        let err = s.update("k", json!({"v": 2}), Some(2)).unwrap_err();
        assert_eq!(
            err,
            StoreError::Conflict {
                key: "k".into(),
                expected: 2,
                current: 3
            }
        );
        assert!(matches!(
            s.create("k", json!({})),
            Err(StoreError::AlreadyExists { .. })
        ));
        assert!(matches!(
            s.delete("missing", None),
            Err(StoreError::NotFound { .. })
        ));
    }

    #[test]
    fn entries_at_a_past_revision_undo_later_changes() {
        let mut s = store();
        s.create("/registry/pods/a", json!({"v": 1})).unwrap();
        s.create("/registry/pods/b", json!({"v": 1})).unwrap();
        let before = s.revision();
        s.update("/registry/pods/a", json!({"v": 2}), None).unwrap();
        s.delete("/registry/pods/b", None).unwrap();
        s.create("/registry/pods/c", json!({"v": 1})).unwrap();
        s.create("/registry/configmaps/x", json!({})).unwrap();
        let at = s.entries_at("/registry/pods/", before).unwrap();
        let seen: Vec<_> = at
            .iter()
            .map(|(k, v)| (k.as_str(), v["v"].as_i64().unwrap()))
            .collect();
        assert_eq!(seen, vec![("/registry/pods/a", 1), ("/registry/pods/b", 1)]);
        assert_eq!(object::resource_version(&at["/registry/pods/a"]), Some("2"));
        assert_eq!(
            s.entries_at("/registry/pods/", s.revision()).unwrap().len(),
            2
        );
        s.compact(before + 1);
        assert!(matches!(
            s.entries_at("/registry/pods/", before),
            Err(StoreError::Compacted { .. })
        ));
        assert!(matches!(
            s.entries_at("/registry/pods/", 99),
            Err(StoreError::FutureRevision { .. })
        ));
    }

    #[test]
    fn changes_after_replays_in_order_and_refuses_compacted_revisions() {
        let mut s = store();
        for name in ["a", "b", "c"] {
            s.create(&format!("/registry/pods/{name}"), json!({}))
                .unwrap();
            s.create(&format!("/registry/configmaps/{name}"), json!({}))
                .unwrap();
        }
        let pods: Vec<_> = s
            .changes_after("/registry/pods/", 3)
            .unwrap()
            .iter()
            .map(|e| e.revision)
            .collect();
        assert_eq!(pods, vec![4, 6]);
        s.compact(4);
        assert!(matches!(
            s.changes_after("/registry/pods/", 3),
            Err(StoreError::Compacted { .. })
        ));
        assert_eq!(s.changes_after("/registry/pods/", 4).unwrap().len(), 1);
        assert!(matches!(
            s.changes_after("/registry/pods/", 99),
            Err(StoreError::FutureRevision { .. })
        ));
        assert_eq!(s.list("/registry/pods/").count(), 3);
    }

    #[test]
    fn values_are_weighed_and_the_quota_refuses_growth_but_never_a_delete() {
        let heavy = json!({"a": {"b": {}}, "c": {"d": {}}});
        let one = || json!({"d": "x".repeat(500)});
        let stored = |mut v: Value| {
            object::set_meta(&mut v, "resourceVersion", "9");
            v
        };
        let quota = StoreQuota {
            max_value_bytes: 1000,
            max_value_weight: object::weight(&stored(heavy.clone())) - 1,
            // Two of them, as stored (with their resourceVersion), and a little.
            max_live_bytes: 2 * object::weight(&stored(one())) + 100,
            max_history_bytes: usize::MAX,
        };
        let mut s = Store::with_quota(Clock::new(|| 0), quota);
        let small = s.create("a", one()).unwrap();
        assert_eq!(small.size, object::weight(&small.object));
        assert_eq!(s.live_bytes(), small.size);
        assert!(matches!(
            s.create("long", json!({"d": "x".repeat(2000)})),
            Err(StoreError::TooLarge {
                limit: 1000,
                in_memory: false,
                ..
            })
        ));
        assert!(matches!(
            s.create("heavy", heavy),
            Err(StoreError::TooLarge {
                in_memory: true,
                ..
            })
        ));
        s.create("b", one()).unwrap();
        let full = s.create("c", one());
        assert!(matches!(full, Err(StoreError::NoSpace { .. })), "{full:?}");
        let revision = s.revision();
        // Refused writes take no revision; shrinking and deleting go through.
        s.update("a", json!({}), None).unwrap();
        assert_eq!(s.revision(), revision + 1);
        s.delete("b", None).unwrap();
        s.create("c", one()).unwrap();
    }

    #[test]
    fn the_history_keeps_at_most_its_weight_and_compacts_the_oldest() {
        let one = object::weight(&json!({"d": "y".repeat(90)}));
        let quota = StoreQuota {
            max_history_bytes: 10 * one,
            ..StoreQuota::UNBOUNDED
        };
        let mut s = Store::with_quota(Clock::new(|| 0), quota);
        s.create("k", json!({"d": "x".repeat(90)})).unwrap();
        for _ in 0..100 {
            s.update("k", json!({"d": "y".repeat(90)}), None).unwrap();
        }
        assert!(s.history_bytes() <= 10 * one, "{}", s.history_bytes());
        assert!(s.history_len() >= 5);
        assert!(matches!(
            s.changes_after("", 2),
            Err(StoreError::Compacted { .. })
        ));
        assert!(s.changes_after("", s.compacted()).is_ok());
    }
}
