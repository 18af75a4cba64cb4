//! The controller's workqueue: keys, not events — client-go's rate-limited,
//! delaying workqueue (`util/workqueue`).
//!
//! Contract, as client-go's:
//! - A key is *dirty* from the moment it is added until a worker takes it.
//!   Adding a dirty key again merges into the waiting item (coalescing):
//!   a burst of events for one object costs one reconcile.
//! - A key being *processed* is never handed to a second worker. Added
//!   meanwhile, it is dirty again and waits; [`Workqueue::done`] queues it.
//! - Keys come out in the order they were first queued.
//! - A delayed key ([`Workqueue::add_after`]) is added once its time comes;
//!   of two delays for one key, the earlier wins.
//! - [`Workqueue::add_rate_limited`] delays by the [`RateLimiter`]'s
//!   schedule until [`Workqueue::forget`].
//!
//! Each dirty key carries the ids of the events merged into it, so that an
//! instrumented informer can tell which events a reconcile finished.

use crate::Micros;
use crate::drained::Drained;
use crate::rate_limiter::RateLimiter;
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::time::Duration;

/// A rate-limited, delaying queue of keys.
#[derive(Debug, Default)]
pub struct Workqueue {
    queue: VecDeque<String>,
    /// Dirty keys and the event ids merged into each.
    dirty: HashMap<String, Vec<u64>>,
    processing: HashSet<String>,
    /// Delayed keys: when each is due, and the same by due time.
    delayed: HashMap<String, Micros>,
    due: BTreeSet<(Micros, String)>,
    limiter: RateLimiter,
}

/// What happened when a key was added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Added {
    /// The key was already dirty: this event merged into it.
    pub coalesced: bool,
    /// Keys waiting in the queue after the add.
    pub depth: usize,
}

impl Workqueue {
    /// A queue whose retries follow `limiter`.
    pub fn with_limiter(limiter: RateLimiter) -> Self {
        Workqueue {
            limiter,
            ..Workqueue::default()
        }
    }

    /// Adds `key` for the events `ids` (none for a plain add).
    pub fn add(&mut self, key: &str, ids: impl IntoIterator<Item = u64>) -> Added {
        let coalesced = match self.dirty.get_mut(key) {
            Some(merged) => {
                merged.extend(ids);
                true
            }
            None => {
                self.dirty
                    .insert(key.to_string(), ids.into_iter().collect());
                if !self.processing.contains(key) {
                    self.queue.push_back(key.to_string());
                }
                false
            }
        };
        Added {
            coalesced,
            depth: self.queue.len(),
        }
    }

    /// Adds `key` at `at` (at once when `at` is not after `now`).
    pub fn add_after(&mut self, key: &str, at: Micros, now: Micros) {
        if at <= now {
            self.add(key, []);
            return;
        }
        if let Some(&earlier) = self.delayed.get(key) {
            if earlier <= at {
                return;
            }
            self.due.remove(&(earlier, key.to_string()));
        }
        self.delayed.insert(key.to_string(), at);
        self.due.insert((at, key.to_string()));
    }

    /// Adds `key` after the rate limiter's delay for it; returns the delay.
    pub fn add_rate_limited(&mut self, key: &str, now: Micros) -> Duration {
        let delay = self.limiter.when(key, now);
        self.add_after(key, now.saturating_add(delay.as_micros() as u64), now);
        delay
    }

    /// `key` reconciled well: its next failure starts the backoff afresh.
    pub fn forget(&mut self, key: &str) {
        self.limiter.forget(key);
    }

    /// Failures counted for `key` since it was last forgotten.
    pub fn requeues(&self, key: &str) -> u32 {
        self.limiter.requeues(key)
    }

    /// Takes the oldest waiting key (after adding the delayed keys due by
    /// `now`) and the events merged into it; the key is then being
    /// processed until [`Workqueue::done`].
    pub fn get(&mut self, now: Micros) -> Option<(String, Vec<u64>)> {
        self.promote(now);
        let key = self.queue.pop_front()?;
        let ids = self.dirty.remove(&key).unwrap_or_default();
        self.processing.insert(key.clone());
        Some((key, ids))
    }

    /// Marks `key` processed; if it was added meanwhile, it is queued again.
    pub fn done(&mut self, key: &str) {
        self.processing.remove(key);
        if self.dirty.contains_key(key) {
            self.queue.push_back(key.to_string());
        }
        self.queue.shrink_when_drained();
        self.dirty.shrink_when_drained();
        self.processing.shrink_when_drained();
    }

    /// Keys waiting to be taken (not counting delayed ones).
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Keys due by `now` joined the queue; returns how many keys wait.
    pub fn ready(&mut self, now: Micros) -> usize {
        self.promote(now);
        self.queue.len()
    }

    /// When the next delayed key is due, if any.
    pub fn next_due(&self) -> Option<Micros> {
        self.due.first().map(|(at, _)| *at)
    }

    fn promote(&mut self, now: Micros) {
        while let Some((at, key)) = self.due.first().cloned() {
            if at > now {
                break;
            }
            self.due.pop_first();
            self.delayed.remove(&key);
            self.add(&key, []);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_already_waiting_coalesces() {
        let mut q = Workqueue::default();
        assert!(!q.add("default/a", [1]).coalesced);
        assert!(q.add("default/a", [2]).coalesced);
        assert_eq!(q.add("default/b", [3]).depth, 2);
        assert_eq!(q.get(0), Some(("default/a".into(), vec![1, 2])));
        assert_eq!(q.get(0), Some(("default/b".into(), vec![3])));
        assert_eq!(q.get(0), None);
    }

    #[test]
    fn a_key_being_processed_is_not_handed_out_twice_and_waits_for_done() {
        let mut q = Workqueue::default();
        q.add("default/a", [1]);
        let (key, _) = q.get(0).unwrap();
        assert!(!q.add("default/a", [2]).coalesced);
        assert!(q.add("default/a", [3]).coalesced);
        assert_eq!(q.get(0), None, "a second worker gets nothing");
        q.done(&key);
        assert_eq!(q.get(0), Some(("default/a".into(), vec![2, 3])));
        q.done("default/a");
        assert!(q.is_empty());
    }

    #[test]
    fn delayed_keys_join_when_due_and_the_earlier_delay_wins() {
        let mut q = Workqueue::default();
        q.add_after("a", 100, 0);
        q.add_after("a", 50, 0);
        q.add_after("a", 80, 0);
        assert_eq!(q.next_due(), Some(50));
        assert_eq!(q.get(49), None);
        assert_eq!(q.get(50).map(|(k, _)| k), Some("a".to_string()));
        assert_eq!(q.next_due(), None);
    }

    #[test]
    fn failed_keys_come_back_after_the_rate_limiters_delay() {
        let mut q = Workqueue::default();
        q.add("a", []);
        let (key, _) = q.get(0).unwrap();
        assert_eq!(q.add_rate_limited(&key, 0).as_millis(), 5);
        q.done(&key);
        assert_eq!(q.get(4_999), None);
        let (key, _) = q.get(5_000).unwrap();
        assert_eq!(q.add_rate_limited(&key, 5_000).as_millis(), 10);
        q.done(&key);
        q.forget(&key);
        assert_eq!(q.requeues(&key), 0);
    }
}
