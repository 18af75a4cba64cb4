//! Queues that give their memory back once drained.
//!
//! A LIST of 150,000 objects passes through every queue of the informer at
//! once: the FIFO, each listener's buffer, the events in flight, the
//! workqueue. Rust's collections keep their largest capacity, so without
//! this each would hold hundreds of bytes per object of the cluster for the
//! life of the process, empty.

use std::collections::{HashMap, HashSet, VecDeque};

/// Capacity an empty queue may keep: what ordinary traffic needs, so that a
/// queue that drains and fills again is not reallocated every time.
pub const KEPT_CAPACITY: usize = 1024;

/// A collection that can give back unused capacity.
pub trait Drained {
    fn len_and_capacity(&self) -> (usize, usize);
    fn shrink(&mut self);

    /// Shrinks to [`KEPT_CAPACITY`]'s worth when empty and far larger.
    fn shrink_when_drained(&mut self) {
        let (len, capacity) = self.len_and_capacity();
        if len == 0 && capacity > 4 * KEPT_CAPACITY {
            self.shrink();
        }
    }
}

impl<T> Drained for VecDeque<T> {
    fn len_and_capacity(&self) -> (usize, usize) {
        (self.len(), self.capacity())
    }
    fn shrink(&mut self) {
        self.shrink_to(KEPT_CAPACITY);
    }
}

impl<K: Eq + std::hash::Hash, V> Drained for HashMap<K, V> {
    fn len_and_capacity(&self) -> (usize, usize) {
        (self.len(), self.capacity())
    }
    fn shrink(&mut self) {
        self.shrink_to(KEPT_CAPACITY);
    }
}

impl<K: Eq + std::hash::Hash> Drained for HashSet<K> {
    fn len_and_capacity(&self) -> (usize, usize) {
        (self.len(), self.capacity())
    }
    fn shrink(&mut self) {
        self.shrink_to(KEPT_CAPACITY);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drained_queue_gives_back_what_a_burst_took() {
        let mut q: VecDeque<u64> = (0..100_000).collect();
        q.shrink_when_drained();
        assert!(q.capacity() >= 100_000, "not while it holds items");
        q.clear();
        q.shrink_when_drained();
        assert!(q.capacity() < 4 * KEPT_CAPACITY);
        let mut m: HashMap<u64, u64> = (0..100_000).map(|i| (i, i)).collect();
        m.clear();
        m.shrink_when_drained();
        assert!(m.capacity() < 4 * KEPT_CAPACITY);
    }
}
