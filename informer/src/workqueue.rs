//! The controller's workqueue: keys, not events.
//!
//! As client-go's workqueue: a key added while it is already waiting is not
//! queued twice — the later event merges into the waiting item (coalescing). A
//! key added while a worker is processing it waits until the worker is done,
//! so one key is never reconciled by two workers at once.

use std::collections::{HashMap, HashSet, VecDeque};

/// A coalescing queue of keys; each waiting key carries the ids of the events
/// that merged into it, oldest first.
#[derive(Debug, Default)]
pub struct Workqueue {
    order: VecDeque<String>,
    waiting: HashMap<String, Vec<u64>>,
    processing: HashSet<String>,
    /// Events that arrived for a key while it was being processed.
    deferred: HashMap<String, Vec<u64>>,
}

/// What happened when a key was added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Added {
    /// The key was already waiting: this event merged into it.
    pub coalesced: bool,
    /// Keys waiting after the add.
    pub depth: usize,
}

impl Workqueue {
    /// Adds `key` for event `id`.
    pub fn add(&mut self, key: &str, id: u64) -> Added {
        let coalesced = if self.processing.contains(key) {
            let deferred = self.deferred.entry(key.to_string()).or_default();
            deferred.push(id);
            deferred.len() > 1
        } else if let Some(ids) = self.waiting.get_mut(key) {
            ids.push(id);
            true
        } else {
            self.waiting.insert(key.to_string(), vec![id]);
            self.order.push_back(key.to_string());
            false
        };
        Added {
            coalesced,
            depth: self.order.len(),
        }
    }

    /// Takes the oldest waiting key and the events merged into it; the key is
    /// then being processed until [`Workqueue::done`].
    pub fn get(&mut self) -> Option<(String, Vec<u64>)> {
        let key = self.order.pop_front()?;
        let ids = self.waiting.remove(&key).unwrap_or_default();
        self.processing.insert(key.clone());
        Some((key, ids))
    }

    /// Marks `key` processed; events that came meanwhile queue it again.
    pub fn done(&mut self, key: &str) {
        self.processing.remove(key);
        if let Some(ids) = self.deferred.remove(key) {
            self.waiting.insert(key.to_string(), ids);
            self.order.push_back(key.to_string());
        }
    }

    /// Keys waiting.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_already_waiting_coalesces() {
        let mut q = Workqueue::default();
        assert!(!q.add("default/a", 1).coalesced);
        assert!(!q.add("default/b", 2).coalesced);
        let merged = q.add("default/a", 3);
        assert!(merged.coalesced);
        assert_eq!(merged.depth, 2);
        assert_eq!(q.get(), Some(("default/a".into(), vec![1, 3])));
        assert_eq!(q.get(), Some(("default/b".into(), vec![2])));
        assert_eq!(q.get(), None);
    }

    #[test]
    fn a_key_being_processed_waits_for_done() {
        let mut q = Workqueue::default();
        q.add("k", 1);
        let (key, _) = q.get().unwrap();
        assert!(!q.add("k", 2).coalesced);
        assert!(q.add("k", 3).coalesced);
        assert!(q.get().is_none(), "not handed out twice at once");
        q.done(&key);
        assert_eq!(q.get(), Some(("k".into(), vec![2, 3])));
    }
}
