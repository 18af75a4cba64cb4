//! client-go's sharedIndexInformer, IO-free: a FIFO fed by the Reflector,
//! `HandleDeltas` applying each delta to the [`Indexer`] and distributing a
//! notification to every registered listener, and one buffer per listener
//! (its processorListener), drained by whoever runs that listener.
//!
//! Contract:
//! - The Indexer is updated before any listener hears of the change: a
//!   handler that reads the Indexer sees the object at least as new as its
//!   notification.
//! - Each listener gets the notifications of one key in the order the
//!   Indexer applied them. Listeners are independent: a slow one only fills
//!   its own buffer (unbounded, as client-go's).
//! - A relist replaces the store: OnAdd for new keys, OnUpdate for known
//!   ones, and OnDelete with `DeletedFinalStateUnknown` (the Indexer's last
//!   copy) for keys the LIST no longer has. An update whose resourceVersion
//!   did not change is a resync, and like a Sync delta goes only to the
//!   listeners that take resyncs (all of them until the first resync is due,
//!   as client-go's `syncingListeners`).
//! - Notes (anything the driver wants told in stream order, such as the
//!   Reflector's states) come out of [`SharedInformer::process_one`] in the
//!   order they were queued among the deltas.

use crate::fifo::{DeltaType, Fifo};
use crate::indexer::Indexer;
use crate::object::{Object, Stored};
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

/// Which callback a notification asks for (before any filter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Add,
    Update,
    Delete,
}

/// One change, as every listener receives it.
#[derive(Debug, Clone)]
pub struct Notification<O = Object> {
    /// The delta's id, or a fresh one for a delta the informer made itself
    /// (a relist's deletion, a resync).
    pub id: u64,
    pub key: String,
    pub kind: Kind,
    /// The new object; for a deletion, the last state known.
    pub object: O,
    /// What the Indexer held before (OnUpdate's `old`).
    pub old: Option<O>,
    /// A deletion found by a relist (`DeletedFinalStateUnknown`).
    pub final_state_unknown: bool,
    /// A resync: a Sync delta, or a relisted object whose resourceVersion
    /// did not change.
    pub resync: bool,
    /// The change came from a LIST.
    pub listed: bool,
}

/// What the FIFO holds.
#[derive(Debug)]
enum Item<N, O> {
    Delta { kind: DeltaType, object: O, id: u64 },
    Replace(Vec<(O, u64)>),
    Resync,
    Note(N),
}

/// What one [`SharedInformer::process_one`] did.
#[derive(Debug)]
pub enum Processed<N, O = Object> {
    /// A note, in its place in the stream.
    Note(N),
    /// Notifications distributed, each with the listeners it went to.
    Distributed(Vec<Distribution<O>>),
}

/// One notification and where it went.
#[derive(Debug, Clone)]
pub struct Distribution<O = Object> {
    pub notification: Notification<O>,
    /// Indexes of the listeners whose buffers it entered, with each buffer's
    /// depth just after.
    pub listeners: Vec<(usize, usize)>,
    /// The informer made this delta itself (no Reflector event behind it).
    pub synthesized: bool,
}

/// A registered listener.
#[derive(Debug)]
struct Listener<O> {
    name: String,
    /// Takes resyncs (its resync period is not zero).
    resyncs: bool,
    /// In client-go's `syncingListeners` right now.
    syncing: bool,
    buffer: VecDeque<Notification<O>>,
}

/// A shared index informer over objects of one resource; `N` is the type
/// of the notes queued among the deltas.
#[derive(Debug)]
pub struct SharedInformer<N, O = Object> {
    fifo: Fifo<Item<N, O>>,
    indexer: Indexer<O>,
    listeners: Vec<Listener<O>>,
    next_id: u64,
    synced: bool,
}

impl<N, O: Stored> Default for SharedInformer<N, O> {
    fn default() -> Self {
        SharedInformer::new(Indexer::default())
    }
}

impl<N, O: Stored> SharedInformer<N, O> {
    /// An informer over `indexer` (with whatever indexes it was given).
    pub fn new(indexer: Indexer<O>) -> Self {
        SharedInformer {
            fifo: Fifo::default(),
            indexer,
            listeners: Vec::new(),
            next_id: 0,
            synced: false,
        }
    }

    /// Registers a listener; returns its index. `resyncs` when its resync
    /// period is not zero.
    pub fn add_listener(&mut self, name: impl Into<String>, resyncs: bool) -> usize {
        self.listeners.push(Listener {
            name: name.into(),
            resyncs,
            syncing: true,
            buffer: VecDeque::new(),
        });
        self.listeners.len() - 1
    }

    /// Queues one watch event's delta; returns its id and the FIFO's depth.
    pub fn queue_delta(&mut self, kind: DeltaType, object: O) -> (u64, usize) {
        let id = self.fresh_id();
        let depth = self.fifo.push(Item::Delta { kind, object, id });
        (id, depth)
    }

    /// Queues a whole LIST; returns the items' ids and the FIFO's depth.
    pub fn queue_list(&mut self, objects: Vec<O>) -> (Vec<u64>, usize) {
        let items: Vec<_> = objects.into_iter().map(|o| (o, self.fresh_id())).collect();
        let ids = items.iter().map(|(_, id)| *id).collect();
        let depth = self.fifo.push(Item::Replace(items));
        (ids, depth)
    }

    /// Queues a resync of every object in the store.
    pub fn queue_resync(&mut self) -> usize {
        self.fifo.push(Item::Resync)
    }

    /// Queues a note, to come out in stream order.
    pub fn queue_note(&mut self, note: N) -> usize {
        self.fifo.push(Item::Note(note))
    }

    /// HandleDeltas on the oldest FIFO item; `None` when the FIFO is empty.
    pub fn process_one(&mut self) -> Option<Processed<N, O>> {
        let mut out = Vec::new();
        match self.fifo.pop()? {
            Item::Note(note) => return Some(Processed::Note(note)),
            Item::Delta { kind, object, id } => self.handle(kind, object, id, false, &mut out),
            Item::Replace(items) => self.replace(items, &mut out),
            Item::Resync => self.resync(&mut out),
        }
        Some(Processed::Distributed(out))
    }

    /// Takes the oldest notification from listener `index`'s buffer.
    pub fn pop(&mut self, index: usize) -> Option<Notification<O>> {
        let buffer = &mut self.listeners.get_mut(index)?.buffer;
        let n = buffer.pop_front();
        crate::drained::Drained::shrink_when_drained(buffer);
        n
    }

    /// The Indexer (read-only).
    pub fn indexer(&self) -> &Indexer<O> {
        &self.indexer
    }

    /// True once the first LIST is in the store (client-go's `HasSynced`).
    pub fn has_synced(&self) -> bool {
        self.synced
    }

    /// Items waiting in the FIFO.
    pub fn fifo_len(&self) -> usize {
        self.fifo.len()
    }

    /// Listeners' names, in registration order.
    pub fn listener_names(&self) -> impl Iterator<Item = &str> {
        self.listeners.iter().map(|l| l.name.as_str())
    }

    /// Notifications waiting in listener `index`'s buffer.
    pub fn buffered(&self, index: usize) -> usize {
        self.listeners.get(index).map_or(0, |l| l.buffer.len())
    }

    fn fresh_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// One delta: to the Indexer, then to the listeners.
    fn handle(
        &mut self,
        kind: DeltaType,
        object: O,
        id: u64,
        synthesized: bool,
        out: &mut Vec<Distribution<O>>,
    ) {
        let key = object.key().to_string();
        let mut n = Notification {
            id,
            key: key.clone(),
            kind: Kind::Add,
            object: object.clone(),
            old: None,
            final_state_unknown: false,
            resync: false,
            listed: kind == DeltaType::Replaced,
        };
        if kind == DeltaType::Deleted {
            n.kind = Kind::Delete;
            n.old = self.indexer.remove(&key);
        } else {
            n.old = self.indexer.upsert(&key, object);
            if let Some(old) = &n.old {
                n.kind = Kind::Update;
                n.resync = match kind {
                    DeltaType::Sync => true,
                    DeltaType::Replaced => old.resource_version() == n.object.resource_version(),
                    _ => false,
                };
            }
        }
        self.distribute(n, synthesized, out);
    }

    /// A LIST: every item as a Replaced delta, then a deletion for each key
    /// the store held that the LIST no longer has.
    fn replace(&mut self, items: Vec<(O, u64)>, out: &mut Vec<Distribution<O>>) {
        let listed: HashSet<Arc<str>> = items.iter().map(|(o, _)| o.key()).collect();
        let mut vanished: Vec<String> = self
            .indexer
            .keys()
            .filter(|k| !listed.contains(*k))
            .map(String::from)
            .collect();
        vanished.sort();
        for (object, id) in items {
            self.handle(DeltaType::Replaced, object, id, false, out);
        }
        for key in vanished {
            let Some(last) = self.indexer.remove(&key) else {
                continue;
            };
            let n = Notification {
                id: self.fresh_id(),
                key,
                kind: Kind::Delete,
                object: last.clone(),
                old: Some(last),
                final_state_unknown: true,
                resync: false,
                listed: true,
            };
            self.distribute(n, true, out);
        }
        self.synced = true;
    }

    /// A resync: every stored object as a Sync delta.
    fn resync(&mut self, out: &mut Vec<Distribution<O>>) {
        for listener in &mut self.listeners {
            listener.syncing = listener.resyncs;
        }
        let mut keys: Vec<String> = self.indexer.keys().map(String::from).collect();
        keys.sort();
        for key in keys {
            if let Some(object) = self.indexer.get(&key).cloned() {
                let id = self.fresh_id();
                self.handle(DeltaType::Sync, object, id, true, out);
            }
        }
    }

    /// client-go's `sharedProcessor.distribute`: a resync goes only to the
    /// syncing listeners, anything else to all.
    fn distribute(
        &mut self,
        n: Notification<O>,
        synthesized: bool,
        out: &mut Vec<Distribution<O>>,
    ) {
        let mut listeners = Vec::new();
        for (index, listener) in self.listeners.iter_mut().enumerate() {
            if n.resync && !listener.syncing {
                continue;
            }
            listener.buffer.push_back(n.clone());
            listeners.push((index, listener.buffer.len()));
        }
        out.push(Distribution {
            notification: n,
            listeners,
            synthesized,
        });
    }
}

#[cfg(test)]
mod tests;
