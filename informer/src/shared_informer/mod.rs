//! client-go's sharedIndexInformer, IO-free: a queue fed by the Reflector
//! (DeltaFIFO or RealFIFO, as the release has it: see [`queue`]),
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
//!   copy) for keys the LIST no longer has (v1.20: the deletions after the
//!   listed objects, found when the relist is queued; v0.36 atomic: the
//!   deletions first, found when it is applied). An update whose resourceVersion
//!   did not change is a resync, and like a Sync delta goes only to the
//!   listeners that take resyncs (all of them until the first resync is due,
//!   as client-go's `syncingListeners`).
//! - Notes (anything the driver wants told in stream order, such as the
//!   Reflector's states) come out of [`SharedInformer::process_one`] in the
//!   order they were queued among the deltas.

pub mod queue;

use crate::Micros;
use crate::fifo::DeltaType;
use crate::indexer::Indexer;
use crate::object::{Object, Stored};
use queue::{Delta, Popped, Queue};
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

pub use queue::QueueModel;

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
    /// OnAdd's `isInInitialList` (v0.36): the delta was part of the
    /// informer's first list. Always false in v1.20, whose OnAdd has none.
    pub in_initial_list: bool,
}

/// What one [`SharedInformer::process_one`] did.
#[derive(Debug)]
pub enum Processed<N, O = Object> {
    /// A note, in its place in the stream.
    Note(N),
    /// Notifications distributed, each with the listeners it went to.
    Distributed(Vec<Distribution<O>>),
}

/// What queueing one delta did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Queued {
    pub id: u64,
    /// The queue's depth just after.
    pub depth: usize,
    /// A delta that DeltaFIFO's deduplication dropped (two deletions in a
    /// row keep one): its notification will never come.
    pub dropped: Option<u64>,
}

/// One notification and where it went.
#[derive(Debug, Clone)]
pub struct Distribution<O = Object> {
    pub notification: Notification<O>,
    /// Indexes of the listeners whose buffers it entered, with each buffer's
    /// depth just after.
    pub listeners: Vec<(usize, usize)>,
    /// The informer made this delta itself (no Reflector event behind it):
    /// when the relist or resync that made it was queued.
    pub synthesized: Option<Micros>,
    /// When this delta was applied to the Indexer, and when its
    /// notification had entered every listener's buffer, by the clock given
    /// to [`SharedInformer::process_one_timed`] (0 without one): each item of
    /// a relist gets its own.
    pub applied_at: Micros,
    pub distributed_at: Micros,
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
    queue: Queue<N, O>,
    /// OnAdd's `isInInitialList` is told (RealFIFO); v1.20's is not.
    tells_initial_list: bool,
    indexer: Indexer<O>,
    listeners: Vec<Listener<O>>,
    next_id: u64,
}

impl<N, O: Stored> Default for SharedInformer<N, O> {
    fn default() -> Self {
        SharedInformer::new(Indexer::default())
    }
}

impl<N, O: Stored> SharedInformer<N, O> {
    /// An informer over `indexer` (with whatever indexes it was given),
    /// queueing through v0.36's RealFIFO.
    pub fn new(indexer: Indexer<O>) -> Self {
        SharedInformer::with_queue(indexer, QueueModel::default())
    }

    /// An informer over `indexer` queueing through `model`.
    pub fn with_queue(indexer: Indexer<O>, model: QueueModel) -> Self {
        SharedInformer {
            queue: Queue::new(model),
            tells_initial_list: matches!(model, QueueModel::RealFifo { .. }),
            indexer,
            listeners: Vec::new(),
            next_id: 0,
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

    /// Queues one watch event's delta.
    pub fn queue_delta(&mut self, kind: DeltaType, object: O) -> Queued {
        let id = self.fresh_id();
        let delta = Delta {
            kind,
            object,
            id,
            final_state_unknown: false,
            queued_at: None,
        };
        let (depth, dropped) = self.queue.push(delta);
        Queued { id, depth, dropped }
    }

    /// Queues a whole LIST at `now`; returns the items' ids and the queue's
    /// depth.
    pub fn queue_list(&mut self, objects: Vec<O>, now: Micros) -> (Vec<u64>, usize) {
        let items: Vec<_> = objects.into_iter().map(|o| (o, self.fresh_id())).collect();
        let ids = items.iter().map(|(_, id)| *id).collect();
        let next_id = &mut self.next_id;
        let fresh_id = || {
            *next_id += 1;
            *next_id
        };
        let depth = self.queue.replace(items, &self.indexer, fresh_id, now);
        (ids, depth)
    }

    /// Queues a resync of every object in the store at `now`.
    pub fn queue_resync(&mut self, now: Micros) -> usize {
        for listener in &mut self.listeners {
            listener.syncing = listener.resyncs;
        }
        let next_id = &mut self.next_id;
        let fresh_id = || {
            *next_id += 1;
            *next_id
        };
        self.queue.resync(&self.indexer, fresh_id, now)
    }

    /// Queues a note, to come out in stream order.
    pub fn queue_note(&mut self, note: N) -> usize {
        self.queue.note(note)
    }

    /// HandleDeltas on the oldest queue entry; `None` when the queue is empty.
    pub fn process_one(&mut self) -> Option<Processed<N, O>> {
        self.process_one_timed(&|| 0)
    }

    /// [`SharedInformer::process_one`], reading `now` as each delta is
    /// applied and as it is distributed.
    pub fn process_one_timed(&mut self, now: &dyn Fn() -> Micros) -> Option<Processed<N, O>> {
        let mut out = Vec::new();
        let (popped, in_initial_list) = self.queue.pop()?;
        let initial = self.tells_initial_list && in_initial_list;
        match popped {
            Popped::Note(note) => return Some(Processed::Note(note)),
            Popped::Deltas(deltas) => {
                for delta in deltas {
                    self.handle(delta, initial, now, &mut out);
                }
            }
            Popped::ReplacedAll(items, queued_at) => {
                self.replace_all(items, queued_at, initial, now, &mut out)
            }
            Popped::SyncAll(queued_at) => self.sync_all(queued_at, now, &mut out),
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
        self.queue.has_synced()
    }

    /// Entries waiting in the queue (DeltaFIFO: keys).
    pub fn fifo_len(&self) -> usize {
        self.queue.len()
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

    /// One delta: to the Indexer, then to the listeners (`HandleDeltas`,
    /// `processDeltas`).
    fn handle(
        &mut self,
        delta: Delta<O>,
        in_initial_list: bool,
        now: &dyn Fn() -> Micros,
        out: &mut Vec<Distribution<O>>,
    ) {
        let applied_at = now();
        let Delta {
            kind,
            object,
            id,
            final_state_unknown,
            queued_at,
        } = delta;
        let key = object.key().to_string();
        let mut n = Notification {
            id,
            key: key.clone(),
            kind: Kind::Add,
            object: object.clone(),
            old: None,
            final_state_unknown,
            resync: false,
            listed: kind == DeltaType::Replaced || final_state_unknown,
            in_initial_list: false,
        };
        if kind == DeltaType::Deleted {
            n.kind = Kind::Delete;
            n.old = self.indexer.remove(&key);
        } else {
            n.old = self.indexer.upsert(&key, object);
            match &n.old {
                Some(old) => {
                    n.kind = Kind::Update;
                    n.resync = match kind {
                        DeltaType::Sync => true,
                        DeltaType::Replaced => {
                            old.resource_version() == n.object.resource_version()
                        }
                        _ => false,
                    };
                }
                None => n.in_initial_list = in_initial_list,
            }
        }
        let synthesized = (final_state_unknown || kind == DeltaType::Sync)
            .then_some(queued_at)
            .flatten();
        self.distribute(n, synthesized, out);
        if let Some(d) = out.last_mut() {
            d.applied_at = applied_at;
            d.distributed_at = now();
        }
    }

    /// An atomic relist (`processReplacedAllInfo`): the deletions of keys the
    /// list lacks first, as `DeletedFinalStateUnknown` with the Indexer's
    /// last copy, then every listed object in list order.
    fn replace_all(
        &mut self,
        items: Vec<(O, u64)>,
        queued_at: Micros,
        in_initial_list: bool,
        now: &dyn Fn() -> Micros,
        out: &mut Vec<Distribution<O>>,
    ) {
        let listed: HashSet<Arc<str>> = items.iter().map(|(o, _)| o.key()).collect();
        for key in indexer_keys_sorted(&self.indexer) {
            if listed.contains(&*key) {
                continue;
            }
            if let Some(last) = self.indexer.get(&key).cloned() {
                let id = self.fresh_id();
                let delta = Delta {
                    kind: DeltaType::Deleted,
                    object: last,
                    id,
                    final_state_unknown: true,
                    queued_at: Some(queued_at),
                };
                self.handle(delta, in_initial_list, now, out);
            }
        }
        for (object, id) in items {
            let delta = Delta {
                kind: DeltaType::Replaced,
                object,
                id,
                final_state_unknown: false,
                queued_at: None,
            };
            self.handle(delta, in_initial_list, now, out);
        }
    }

    /// An atomic resync (`SyncAll`) queued at `queued_at`: every stored
    /// object as a Sync delta.
    fn sync_all(
        &mut self,
        queued_at: Micros,
        now: &dyn Fn() -> Micros,
        out: &mut Vec<Distribution<O>>,
    ) {
        for key in indexer_keys_sorted(&self.indexer) {
            if let Some(object) = self.indexer.get(&key).cloned() {
                let id = self.fresh_id();
                let delta = Delta {
                    kind: DeltaType::Sync,
                    object,
                    id,
                    final_state_unknown: false,
                    queued_at: Some(queued_at),
                };
                self.handle(delta, false, now, out);
            }
        }
    }

    /// client-go's `sharedProcessor.distribute`: a resync goes only to the
    /// syncing listeners, anything else to all.
    fn distribute(
        &mut self,
        n: Notification<O>,
        synthesized: Option<Micros>,
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
            applied_at: 0,
            distributed_at: 0,
        });
    }
}

/// The Indexer's keys in order, so that what the informer makes itself
/// (deletions found by a relist, resyncs) comes in the same order every run
/// (client-go's come in map order).
fn indexer_keys_sorted<O: Stored>(indexer: &Indexer<O>) -> Vec<String> {
    let mut keys: Vec<String> = indexer.keys().map(String::from).collect();
    keys.sort_unstable();
    keys
}

#[cfg(test)]
mod tests;
