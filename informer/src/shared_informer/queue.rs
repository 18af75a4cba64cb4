//! The queue between the Reflector and HandleDeltas, as each release has it.
//!
//! - **DeltaFIFO** (client-go v1.20.2, `tools/cache/delta_fifo.go`): one
//!   entry per key, holding that key's deltas in order. A second change to a
//!   queued key joins its entry (it keeps its place in the queue); two
//!   deletions in a row keep one (`dedupDeltas`). `Replace` queues a
//!   `Replaced` delta per listed object and, at once, a deletion carrying
//!   `DeletedFinalStateUnknown` for every key the Indexer knows that the list
//!   lacks. `Resync` queues a `Sync` delta for every known key that has
//!   nothing queued.
//! - **RealFIFO** (client-go v0.36.4, `tools/cache/the_real_fifo.go`): every
//!   delta its own entry, in arrival order. With `AtomicFIFO` a relist is one
//!   entry (`ReplacedAll`), applied whole when popped: deletions first, then
//!   the listed objects (`processReplacedAllInfo`), and a resync is one
//!   `SyncAll` entry. Without it, `Replace` queues the deletions (of queued
//!   keys, then of known keys, `reconcileReplacement`) and then one
//!   `Replaced` entry per object, and `Resync` skips keys that are queued.
//!
//! Both tell, as client-go's `HasSynced` does, when the entries queued by the
//! first relist have all been popped; RealFIFO's pop says whether the entry
//! was part of that initial list (`isInInitialList`).

use super::indexer_keys_sorted;
use crate::Micros;
use crate::fifo::{DeltaType, Fifo};
use crate::indexer::Indexer;
use crate::object::Stored;
use crate::profile::{Gate, Profile, Release};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

/// Which queue an informer uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueModel {
    /// v1.20's DeltaFIFO.
    DeltaFifo,
    /// RealFIFO; `atomic` with the `AtomicFIFO` gate.
    RealFifo { atomic: bool },
}

impl QueueModel {
    /// The queue of `profile`'s informers.
    pub fn of(profile: &Profile) -> Self {
        match profile.release() {
            Release::V1_20 => QueueModel::DeltaFifo,
            Release::V1_36 if profile.real_fifo() => QueueModel::RealFifo {
                atomic: profile.enabled(Gate::AtomicFifo),
            },
            Release::V1_36 => QueueModel::DeltaFifo,
        }
    }
}

impl Default for QueueModel {
    /// RealFIFO with atomic relists, as client-go v0.36.
    fn default() -> Self {
        QueueModel::RealFifo { atomic: true }
    }
}

/// One delta, with the id that follows it to its notification.
#[derive(Debug, Clone)]
pub(super) struct Delta<O> {
    pub kind: DeltaType,
    pub object: O,
    pub id: u64,
    /// A deletion found by a relist (`DeletedFinalStateUnknown`).
    pub final_state_unknown: bool,
    /// For a delta the informer made itself (a relist's deletion, a
    /// resync), when the relist or resync that made it was queued.
    pub queued_at: Option<Micros>,
}

/// What a pop hands to HandleDeltas.
#[derive(Debug)]
pub(super) enum Popped<N, O> {
    Note(N),
    /// One key's deltas (DeltaFIFO), or one delta (RealFIFO).
    Deltas(Vec<Delta<O>>),
    /// An atomic relist: the listed objects with their ids, and when it
    /// was queued.
    ReplacedAll(Vec<(O, u64)>, Micros),
    /// An atomic resync of the whole store, and when it was queued.
    SyncAll(Micros),
}

/// A RealFIFO entry.
#[derive(Debug)]
enum Entry<N, O> {
    Delta(Delta<O>),
    ReplacedAll(Vec<(O, u64)>, Micros),
    SyncAll(Micros),
    Note(N),
}

/// A DeltaFIFO slot in the queue's order.
#[derive(Debug)]
enum Slot<N> {
    Key(Arc<str>),
    Note(N),
}

/// The queue, with the bookkeeping of `HasSynced`.
#[derive(Debug)]
pub(super) struct Queue<N, O> {
    model: QueueModel,
    real: Fifo<Entry<N, O>>,
    order: VecDeque<Slot<N>>,
    deltas: HashMap<Arc<str>, Vec<Delta<O>>>,
    /// `populated`: a relist was queued.
    populated: bool,
    /// `initialPopulationCount`: entries of the first relist still queued.
    initial: usize,
    /// Notes waiting: they are no item of client-go's queue, so they count
    /// toward no `HasSynced`.
    notes: usize,
}

impl<N, O: Stored> Queue<N, O> {
    pub fn new(model: QueueModel) -> Self {
        Queue {
            model,
            real: Fifo::default(),
            order: VecDeque::new(),
            deltas: HashMap::new(),
            populated: false,
            initial: 0,
            notes: 0,
        }
    }

    /// Queues one delta; returns the depth after it and the id of a delta
    /// that deduplication dropped (DeltaFIFO's two deletions in a row).
    pub fn push(&mut self, delta: Delta<O>) -> (usize, Option<u64>) {
        if matches!(self.model, QueueModel::RealFifo { .. }) {
            return (self.real.push(Entry::Delta(delta)), None);
        }
        let key = delta.object.key();
        let dropped = match self.deltas.get_mut(&key) {
            Some(queued) => {
                queued.push(delta);
                dedup_deletions(queued)
            }
            None => {
                self.deltas.insert(key.clone(), vec![delta]);
                self.order.push_back(Slot::Key(key));
                None
            }
        };
        (self.order.len(), dropped)
    }

    /// Queues a relist of `items` against what `known` holds, at
    /// `queued_at`; `fresh_id` numbers the deletions it finds. Returns the
    /// depth after it.
    pub fn replace(
        &mut self,
        items: Vec<(O, u64)>,
        known: &Indexer<O>,
        mut fresh_id: impl FnMut() -> u64,
        queued_at: Micros,
    ) -> usize {
        let tombstone = |last, id| tombstone(last, id, queued_at);
        let depth = match self.model {
            QueueModel::RealFifo { atomic: true } => {
                self.real.push(Entry::ReplacedAll(items, queued_at))
            }
            QueueModel::RealFifo { atomic: false } => {
                let listed: HashSet<Arc<str>> = items.iter().map(|(o, _)| o.key()).collect();
                let vanished: Vec<O> = self
                    .last_queued()
                    .into_iter()
                    .filter(|(key, last)| !listed.contains(key) && last.kind != DeltaType::Deleted)
                    .map(|(_, last)| last.object.clone())
                    .collect();
                for last in vanished {
                    let delta = tombstone(last, fresh_id());
                    self.real.push(Entry::Delta(delta));
                }
                let queued: HashSet<Arc<str>> = self.queued_keys();
                for key in indexer_keys_sorted(known) {
                    if listed.contains(&*key) || queued.contains(&*key) {
                        continue;
                    }
                    if let Some(last) = known.get(&key) {
                        let delta = tombstone(last.clone(), fresh_id());
                        self.real.push(Entry::Delta(delta));
                    }
                }
                let mut depth = self.real.len();
                for (object, id) in items {
                    depth = self.real.push(Entry::Delta(replaced(object, id)));
                }
                depth
            }
            QueueModel::DeltaFifo => {
                let listed: HashSet<Arc<str>> = items.iter().map(|(o, _)| o.key()).collect();
                for (object, id) in items {
                    self.push(replaced(object, id));
                }
                // v1.20 finds deletions against the Indexer only.
                for key in indexer_keys_sorted(known) {
                    if listed.contains(&*key) {
                        continue;
                    }
                    if let Some(last) = known.get(&key) {
                        self.push(tombstone(last.clone(), fresh_id()));
                    }
                }
                self.order.len()
            }
        };
        if !self.populated {
            self.populated = true;
            self.initial = self.len() - self.notes;
        }
        depth
    }

    /// Queues a resync of what `known` holds, at `queued_at`. Returns the
    /// depth after it.
    pub fn resync(
        &mut self,
        known: &Indexer<O>,
        mut fresh_id: impl FnMut() -> u64,
        queued_at: Micros,
    ) -> usize {
        if self.model == (QueueModel::RealFifo { atomic: true }) {
            return self.real.push(Entry::SyncAll(queued_at));
        }
        let queued = self.queued_keys();
        for key in indexer_keys_sorted(known) {
            if queued.contains(&*key) {
                continue;
            }
            if let Some(object) = known.get(&key) {
                let delta = Delta {
                    kind: DeltaType::Sync,
                    object: object.clone(),
                    id: fresh_id(),
                    final_state_unknown: false,
                    queued_at: Some(queued_at),
                };
                self.push(delta);
            }
        }
        self.len()
    }

    /// Queues a note, to come out in stream order.
    pub fn note(&mut self, note: N) -> usize {
        self.notes += 1;
        match self.model {
            QueueModel::RealFifo { .. } => self.real.push(Entry::Note(note)),
            QueueModel::DeltaFifo => {
                self.order.push_back(Slot::Note(note));
                self.order.len()
            }
        }
    }

    /// The oldest entry, and whether it is part of the initial list (popped
    /// before the queue had synced).
    pub fn pop(&mut self) -> Option<(Popped<N, O>, bool)> {
        let in_initial_list = !self.has_synced();
        let popped = match self.model {
            QueueModel::RealFifo { .. } => match self.real.pop()? {
                Entry::Note(n) => {
                    self.notes -= 1;
                    return Some((Popped::Note(n), in_initial_list));
                }
                Entry::Delta(d) => Popped::Deltas(vec![d]),
                Entry::ReplacedAll(items, at) => Popped::ReplacedAll(items, at),
                Entry::SyncAll(at) => Popped::SyncAll(at),
            },
            QueueModel::DeltaFifo => {
                let slot = self.order.pop_front();
                crate::drained::Drained::shrink_when_drained(&mut self.order);
                match slot? {
                    Slot::Note(n) => {
                        self.notes -= 1;
                        return Some((Popped::Note(n), in_initial_list));
                    }
                    Slot::Key(key) => Popped::Deltas(self.deltas.remove(&key).unwrap_or_default()),
                }
            }
        };
        self.initial = self.initial.saturating_sub(1);
        Some((popped, in_initial_list))
    }

    /// client-go's `HasSynced`: the first relist was queued and every entry
    /// it queued has been popped.
    pub fn has_synced(&self) -> bool {
        self.populated && self.initial == 0
    }

    /// Entries waiting (DeltaFIFO: keys and notes).
    pub fn len(&self) -> usize {
        match self.model {
            QueueModel::RealFifo { .. } => self.real.len(),
            QueueModel::DeltaFifo => self.order.len(),
        }
    }

    /// The keys with something queued.
    fn queued_keys(&self) -> HashSet<Arc<str>> {
        match self.model {
            QueueModel::DeltaFifo => self.deltas.keys().cloned().collect(),
            QueueModel::RealFifo { .. } => self.last_queued().into_iter().map(|(k, _)| k).collect(),
        }
    }

    /// RealFIFO: each queued key's last delta, in the order keys were first
    /// queued.
    fn last_queued(&self) -> Vec<(Arc<str>, &Delta<O>)> {
        let mut order: Vec<Arc<str>> = Vec::new();
        let mut last: HashMap<Arc<str>, &Delta<O>> = HashMap::new();
        for entry in self.real.iter() {
            if let Entry::Delta(d) = entry {
                let key = d.object.key();
                if last.insert(key.clone(), d).is_none() {
                    order.push(key);
                }
            }
        }
        order
            .into_iter()
            .map(|k| {
                let d = last[&k];
                (k, d)
            })
            .collect()
    }
}

fn replaced<O>(object: O, id: u64) -> Delta<O> {
    Delta {
        kind: DeltaType::Replaced,
        object,
        id,
        final_state_unknown: false,
        queued_at: None,
    }
}

/// A relist's deletion of `last`, made by a relist queued at `queued_at`.
fn tombstone<O>(last: O, id: u64, queued_at: Micros) -> Delta<O> {
    Delta {
        kind: DeltaType::Deleted,
        object: last,
        id,
        final_state_unknown: true,
        queued_at: Some(queued_at),
    }
}

/// `dedupDeltas`: when the last two deltas are both deletions, keep the one
/// with more information (the older one when the newer is a tombstone).
/// Returns the id of the one dropped.
fn dedup_deletions<O>(deltas: &mut Vec<Delta<O>>) -> Option<u64> {
    let n = deltas.len();
    if n < 2 || deltas[n - 1].kind != DeltaType::Deleted || deltas[n - 2].kind != DeltaType::Deleted
    {
        return None;
    }
    let newer = deltas.pop()?;
    if newer.final_state_unknown {
        return Some(newer.id);
    }
    let older = std::mem::replace(&mut deltas[n - 2], newer);
    Some(older.id)
}
