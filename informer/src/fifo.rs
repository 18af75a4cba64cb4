//! An in-order queue, and the kinds of delta the Reflector queues. The
//! informer's two queue models (v1.20's DeltaFIFO, v0.36's RealFIFO) are
//! built on it in [`crate::shared_informer`].

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

    /// The items waiting, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.items.iter()
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
