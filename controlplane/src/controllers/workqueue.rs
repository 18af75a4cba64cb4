//! The workqueue: keys waiting to be synced, as client-go's rate-limited,
//! delaying workqueue keeps them.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use watchlife_protocol::Micros;

/// First retry delay of a key whose sync failed: client-go's per-item
/// exponential limiter starts at 5 ms.
pub const RETRY_BASE_MICROS: Micros = 5_000;

/// Longest retry delay. client-go's stops at 1,000 s; a demo whose user is
/// watching cannot wait that long, and 10 s still spaces out a key that keeps
/// failing.
pub const RETRY_MAX_MICROS: Micros = 10_000_000;

/// A queue of keys (`namespace/name`).
///
/// Contract:
/// - A key is queued at most once: adding a key already waiting does nothing
///   (the sync will read the latest state anyway), so a burst of events for
///   one object costs one sync.
/// - Keys come out in the order they were first added.
/// - A delayed key ([`WorkQueue::add_after`]) joins the queue once its time has
///   come; of two delays for one key, the earlier wins.
/// - Failures back off exponentially per key until [`WorkQueue::forget`].
#[derive(Debug, Default)]
pub struct WorkQueue {
    queue: VecDeque<String>,
    queued: HashSet<String>,
    /// Delayed keys and when each is due.
    waiting: HashMap<String, Micros>,
    /// The same, by due time.
    due: BTreeMap<(Micros, String), ()>,
    failures: HashMap<String, u32>,
}

impl WorkQueue {
    pub fn new() -> Self {
        WorkQueue::default()
    }

    /// Queues `key` unless it is already queued.
    pub fn add(&mut self, key: impl Into<String>) {
        let key = key.into();
        if self.queued.insert(key.clone()) {
            self.queue.push_back(key);
        }
    }

    /// Queues `key` once `at` has come.
    pub fn add_after(&mut self, key: impl Into<String>, at: Micros) {
        let key = key.into();
        match self.waiting.get(&key) {
            Some(&current) if current <= at => return,
            Some(&current) => {
                self.due.remove(&(current, key.clone()));
            }
            None => {}
        }
        self.waiting.insert(key.clone(), at);
        self.due.insert((at, key), ());
    }

    /// Queues `key` after a delay that doubles with each failure of it.
    pub fn add_rate_limited(&mut self, key: impl Into<String>, now: Micros) {
        let key = key.into();
        let failures = self.failures.entry(key.clone()).or_insert(0);
        let delay = RETRY_BASE_MICROS
            .saturating_mul(1 << (*failures).min(31))
            .min(RETRY_MAX_MICROS);
        *failures += 1;
        self.add_after(key, now + delay);
    }

    /// Clears the failure count of `key` after a sync that succeeded.
    pub fn forget(&mut self, key: &str) {
        self.failures.remove(key);
    }

    /// The next key to sync at `now`, if any is ready.
    pub fn pop(&mut self, now: Micros) -> Option<String> {
        self.promote(now);
        let key = self.queue.pop_front()?;
        self.queued.remove(&key);
        Some(key)
    }

    /// Keys ready now.
    pub fn ready(&mut self, now: Micros) -> usize {
        self.promote(now);
        self.queue.len()
    }

    /// When the earliest delayed key is due (now, when a key is ready).
    pub fn next_due(&self, now: Micros) -> Option<Micros> {
        if !self.queue.is_empty() {
            return Some(now);
        }
        self.due.keys().next().map(|(at, _)| *at)
    }

    fn promote(&mut self, now: Micros) {
        while let Some(((at, key), ())) = self.due.first_key_value() {
            if *at > now {
                break;
            }
            let key = key.clone();
            self.due.pop_first();
            self.waiting.remove(&key);
            self.add(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coalesces_keys_and_keeps_first_added_order() {
        let mut q = WorkQueue::new();
        for key in ["a", "b", "a", "c", "b"] {
            q.add(key);
        }
        let keys: Vec<_> = std::iter::from_fn(|| q.pop(0)).collect();
        assert_eq!(keys, vec!["a", "b", "c"]);
    }

    #[test]
    fn delayed_and_failed_keys_wait_their_turn() {
        let mut q = WorkQueue::new();
        q.add_after("later", 100);
        q.add_after("later", 50);
        q.add_after("later", 80);
        assert_eq!(q.next_due(0), Some(50));
        assert_eq!(q.pop(49), None);
        assert_eq!(q.pop(50).as_deref(), Some("later"));
        q.add_rate_limited("bad", 0);
        q.add_rate_limited("bad", 0);
        assert_eq!(
            q.next_due(0),
            Some(RETRY_BASE_MICROS),
            "the earlier delay wins"
        );
        q.pop(RETRY_BASE_MICROS);
        q.add_rate_limited("bad", 0);
        assert_eq!(q.next_due(0), Some(4 * RETRY_BASE_MICROS), "backs off");
        q.forget("bad");
        q.pop(u64::MAX);
        q.add_rate_limited("bad", 0);
        assert_eq!(q.next_due(0), Some(RETRY_BASE_MICROS), "forgotten");
    }
}
