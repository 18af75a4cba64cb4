//! The FIFO between the Reflector and the informer's processing loop.
//!
//! This models client-go's RealFIFO rather than DeltaFIFO. DeltaFIFO keeps one
//! entry per key holding that key's accumulated deltas, so two quick changes to
//! an object come out together and the order across keys is the order keys were
//! first queued. RealFIFO (client-go's default for informers since 1.33) keeps
//! every delta as its own entry, in arrival order. watchlife shows each event
//! on its own, in the order the watch delivered it, so RealFIFO is the honest
//! model; coalescing per key happens later, in the workqueue, where it is drawn.
//! Either way each key's handlers see the same calls in the same order.

use std::collections::VecDeque;

/// What happened to an object, as the Reflector queues it (client-go's
/// `DeltaType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeltaType {
    Added,
    Updated,
    Deleted,
    /// Part of a (re)list: the store's contents are replaced as a whole.
    Replaced,
    /// A resync: the object as the store holds it, delivered again.
    Sync,
}

/// An in-order queue of items.
#[derive(Debug)]
pub struct Fifo<T> {
    items: VecDeque<T>,
}

impl<T> Default for Fifo<T> {
    fn default() -> Self {
        Fifo {
            items: VecDeque::new(),
        }
    }
}

impl<T> Fifo<T> {
    /// Appends an item; returns the depth after it.
    pub fn push(&mut self, item: T) -> usize {
        self.items.push_back(item);
        self.items.len()
    }

    /// The oldest item.
    pub fn pop(&mut self) -> Option<T> {
        let item = self.items.pop_front();
        crate::drained::Drained::shrink_when_drained(&mut self.items);
        item
    }

    /// Items waiting.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_every_item_in_arrival_order() {
        let mut fifo = Fifo::default();
        assert_eq!(fifo.push("a1"), 1);
        assert_eq!(fifo.push("b1"), 2);
        assert_eq!(fifo.push("a2"), 3);
        let order: Vec<_> = std::iter::from_fn(|| fifo.pop()).collect();
        assert_eq!(order, vec!["a1", "b1", "a2"]);
        assert!(fifo.is_empty());
    }
}
