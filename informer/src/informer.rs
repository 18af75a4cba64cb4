//! The informer viewers see: a [`SharedInformer`] with the talk's
//! listeners, a [`Workqueue`] and its workers, every stage of every event
//! stamped with the time it got there.
//!
//! ```text
//! Reflector ─► FIFO ─► HandleDeltas ─► Indexer ─► distribute ─┬► listener "scheduler: unscheduled" (pods)
//!                                                              ├► listener "scheduler: scheduled"   (pods)
//!                                                              └► listener "controller" ─► workqueue ─► workers ─► reconcile
//! ```
//!
//! The caller drives each side from whichever task it likes — the
//! Reflector's ([`Informer::enqueue`] and friends), the processing loop
//! ([`Informer::process_one`]), one per listener ([`Informer::run_listener`]),
//! one per worker ([`Informer::run_worker`]) — so the times between stages
//! are real queueing. An event is finished, with every stage stamped, once
//! every listener that got it has run and the reconcile of its key (when a
//! handler queued it) has returned.

use crate::drained::Drained;
use crate::fifo::DeltaType;
use crate::handlers::{Filtering, Handler, Unfiltered, is_scheduled, is_unscheduled};
use crate::indexer::Indexer;
use crate::object::Object;
use crate::shared_informer::{
    Distribution, Kind, Notification, Processed as Popped, QueueModel, SharedInformer,
};
use crate::trace::{HandlerCall, Mark, ReconcileRun, Traced, mark, saturate};
use crate::workqueue::Workqueue;
use crate::{EventType, Micros};
use std::collections::HashMap;

/// The name of the listener whose handler queues every key for the workers.
pub const CONTROLLER: &str = "controller";

/// The mini scheduler's two filtering listeners (pods only).
pub const SCHEDULER_UNSCHEDULED: &str = "scheduler: unscheduled";
pub const SCHEDULER_SCHEDULED: &str = "scheduler: scheduled";

/// What the informer watches and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// Resource as watched (`pods`, `deployments.apps`).
    pub resource: String,
    /// The objects' kind (`Pod`).
    pub kind: String,
    /// Listeners take resyncs (a resync period is set).
    pub resyncs: bool,
    /// The queue between the Reflector and HandleDeltas, as the release has it.
    pub queue: QueueModel,
}

impl Options {
    /// Pods, as the talk's mini scheduler and controller watch them.
    pub fn pods() -> Self {
        Options {
            resource: "pods".into(),
            kind: "Pod".into(),
            resyncs: false,
            queue: QueueModel::default(),
        }
    }
}

/// What one step of the processing loop produced.
#[derive(Debug)]
pub struct Processed<N, T> {
    /// Notes queued with [`Informer::enqueue_note`], reached now, in
    /// stream order.
    pub notes: Vec<N>,
    /// Listeners whose buffers got something.
    pub woken: Vec<usize>,
    /// Events finished at once (no listener took them, or their delta was
    /// dropped).
    pub finished: Vec<Traced<T>>,
}

/// What one listener run produced.
#[derive(Debug)]
pub struct ListenerRun<T> {
    /// The controller's handler queued a key: wake a worker.
    pub queued: bool,
    pub finished: Vec<Traced<T>>,
}

/// A notification taken from a listener's buffer whose handler has not run
/// yet: see [`Informer::take`].
#[derive(Debug)]
pub struct Taken {
    index: usize,
    notification: Notification,
    dequeued: Micros,
}

/// An event on its way: stamped as it goes, finished when nothing waits.
#[derive(Debug)]
struct Tracked<T> {
    event: Traced<T>,
    /// Listener runs and reconciles still to come.
    pending: u32,
    /// Each listener's buffer depth just after the notification entered it.
    depths: Vec<(usize, usize)>,
    /// The listener index of each of `event.handling.calls`, which are kept in
    /// registration order whatever order the listeners ran in.
    called: Vec<usize>,
}

/// The instrumented informer of one resource. `N` is what the caller
/// queues to be told in stream order ([`Informer::enqueue_note`]), `T`
/// what it hands in with each event and gets back with its trace.
pub struct Informer<N, T> {
    options: Options,
    shared: SharedInformer<N>,
    handlers: Vec<Box<dyn Handler>>,
    controller: usize,
    workqueue: Workqueue,
    /// Events not yet finished, by delta id.
    tracked: HashMap<u64, Tracked<T>>,
    /// Events of deltas not yet processed, by delta id.
    queued: HashMap<u64, Traced<T>>,
    /// Events whose delta the queue dropped, finished with the next step.
    coalesced: Vec<Traced<T>>,
}

impl<N, T> std::fmt::Debug for Informer<N, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Informer")
            .field("resource", &self.options.resource)
            .field("objects", &self.shared.indexer().len())
            .finish()
    }
}

impl<N, T> Informer<N, T> {
    /// The informer of `options.resource` with its listeners: the
    /// scheduler's two filtering ones for pods, and the controller's.
    pub fn new(options: Options) -> Self {
        let mut shared = SharedInformer::with_queue(Indexer::default(), options.queue);
        let mut handlers: Vec<Box<dyn Handler>> = Vec::new();
        if options.kind == "Pod" {
            shared.add_listener(SCHEDULER_UNSCHEDULED, options.resyncs);
            handlers.push(Box::new(Filtering::new(is_unscheduled)));
            shared.add_listener(SCHEDULER_SCHEDULED, options.resyncs);
            handlers.push(Box::new(Filtering::new(is_scheduled)));
        }
        let controller = shared.add_listener(CONTROLLER, options.resyncs);
        handlers.push(Box::new(Unfiltered));
        Informer {
            options,
            shared,
            handlers,
            controller,
            workqueue: Workqueue::default(),
            tracked: HashMap::new(),
            queued: HashMap::new(),
            coalesced: Vec::new(),
        }
    }

    /// What it watches and how.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Listener names, in registration order (a listener's index is its
    /// place here).
    pub fn listeners(&self) -> Vec<String> {
        self.shared.listener_names().map(String::from).collect()
    }

    /// The Reflector queues one watch event's object, with what the caller
    /// keeps of the event (`carried`, handed back with its trace).
    /// `event_type` is ADDED, MODIFIED or DELETED: BOOKMARK and ERROR are
    /// no deltas (queue them as notes) and are dropped here.
    pub fn enqueue(&mut self, event_type: EventType, object: Object, carried: T, now: Micros) {
        let kind = match event_type {
            EventType::Added => DeltaType::Added,
            EventType::Modified => DeltaType::Updated,
            EventType::Deleted => DeltaType::Deleted,
            EventType::Bookmark | EventType::Error => return,
        };
        let queued = self.shared.queue_delta(kind, object.clone());
        let fifo = mark(now, Some(queued.depth));
        let event = Traced::queued(event_type, object, false, fifo, Some(carried));
        self.queued.insert(queued.id, event);
        if let Some(dropped) = queued.dropped {
            // DeltaFIFO kept one of two deletions in a row: the other's
            // event ends here, coalesced into it.
            if let Some(mut event) = self.queued.remove(&dropped) {
                event.coalesced = true;
                self.coalesced.push(event);
            }
        }
    }

    /// The Reflector queues a whole LIST: each object as an ADDED, with
    /// what the caller keeps of it.
    pub fn enqueue_list(&mut self, items: Vec<(Object, T)>, now: Micros) {
        let (objects, carried): (Vec<_>, Vec<_>) = items.into_iter().unzip();
        let (ids, depth) = self.shared.queue_list(objects.clone(), now);
        let fifo = mark(now, Some(depth));
        for ((id, object), carried) in ids.into_iter().zip(objects).zip(carried) {
            let event = Traced::queued(EventType::Added, object, true, fifo, Some(carried));
            self.queued.insert(id, event);
        }
    }

    /// The Reflector's resync timer fired at `now`.
    pub fn enqueue_resync(&mut self, now: Micros) {
        self.shared.queue_resync(now);
    }

    /// Something to be told in stream order with the events: it comes out
    /// of [`Informer::process_one`] when the FIFO reaches it.
    pub fn enqueue_note(&mut self, note: N) {
        self.shared.queue_note(note);
    }

    /// The processing loop's step: HandleDeltas on one FIFO item. `now` is
    /// read as each delta is applied, and again once it is distributed: the
    /// items of a relist are stamped one by one. `None` when the FIFO is empty.
    pub fn process_one(&mut self, now: &dyn Fn() -> Micros) -> Option<Processed<N, T>> {
        let processed = self.shared.process_one_timed(now)?;
        let mut out = Processed {
            notes: Vec::new(),
            woken: Vec::new(),
            finished: std::mem::take(&mut self.coalesced),
        };
        match processed {
            Popped::Note(note) => out.notes.push(note),
            Popped::Distributed(distributions) => {
                for d in distributions {
                    self.track(d, &mut out);
                }
            }
        }
        out.woken.sort_unstable();
        out.woken.dedup();
        Some(out)
    }

    /// Listener `index`'s task: takes one notification from its buffer and
    /// runs its handler. `None` when the buffer is empty.
    pub fn run_listener(
        &mut self,
        index: usize,
        now: &dyn Fn() -> Micros,
    ) -> Option<ListenerRun<T>> {
        let taken = self.take(index, now)?;
        Some(self.handle(taken, now))
    }

    /// The first half of [`Informer::run_listener`]: takes one notification
    /// from listener `index`'s buffer and stamps it dequeued. A caller that
    /// must wait between the two halves (a slow handler, for benches and
    /// demos) does so without holding the informer, then calls
    /// [`Informer::handle`]. `None` when the buffer is empty.
    pub fn take(&mut self, index: usize, now: &dyn Fn() -> Micros) -> Option<Taken> {
        if index >= self.handlers.len() {
            return None;
        }
        let notification = self.shared.pop(index)?;
        Some(Taken {
            index,
            notification,
            dequeued: now(),
        })
    }

    /// The second half of [`Informer::run_listener`]: runs the listener's
    /// handler on what [`Informer::take`] took, queues the key when it is
    /// the controller's, and stamps the call's return. `taken` comes from
    /// this informer's [`Informer::take`].
    pub fn handle(&mut self, taken: Taken, now: &dyn Fn() -> Micros) -> ListenerRun<T> {
        let Taken {
            index,
            notification: n,
            dequeued,
        } = taken;
        let callback = self.handlers[index].handle(&n);
        let mut out = ListenerRun {
            queued: false,
            finished: Vec::new(),
        };
        let queue = index == self.controller && callback.is_some();
        let name = self
            .shared
            .listener_names()
            .nth(index)
            .unwrap_or_default()
            .to_string();
        if queue {
            let added = self.workqueue.add(&n.key, [n.id]);
            let at = now();
            if let Some(t) = self.tracked.get_mut(&n.id) {
                t.event.marks.workqueue = mark(at, Some(added.depth));
                t.event.coalesced = added.coalesced;
                t.pending += 1;
            }
            out.queued = true;
        }
        let returned = now();
        if let Some(t) = self.tracked.get_mut(&n.id)
            && let Some(callback) = callback
        {
            let depth = t
                .depths
                .iter()
                .find(|(i, _)| *i == index)
                .map_or(0, |(_, d)| *d);
            let at = t.called.partition_point(|i| *i < index);
            t.called.insert(at, index);
            t.event.handling.calls.insert(
                at,
                HandlerCall {
                    listener: name,
                    callback,
                    depth: saturate(depth),
                    dequeued,
                    returned,
                },
            );
        }
        out.finished.extend(self.settle(n.id));
        out
    }

    /// Worker `worker`'s step: takes a key from the workqueue, reads the
    /// object from the Indexer, and finishes every event merged into the
    /// key. `None` when no key waits.
    pub fn run_worker(&mut self, worker: u32, now: &dyn Fn() -> Micros) -> Option<Vec<Traced<T>>> {
        let started = now();
        let (key, ids) = self.workqueue.get(started)?;
        let seen = self
            .shared
            .indexer()
            .get(&key)
            .map(|o| o.resource_version().to_string());
        self.workqueue.done(&key);
        self.workqueue.forget(&key);
        let finished_at = now();
        let mut finished = Vec::new();
        for id in ids {
            if let Some(t) = self.tracked.get_mut(&id) {
                t.event.marks.reconcile = mark(started, None);
                t.event.handling.reconcile = Some(ReconcileRun {
                    worker,
                    started,
                    finished: finished_at,
                    seen_resource_version: seen.clone(),
                });
            }
            finished.extend(self.settle(id));
        }
        Some(finished)
    }

    /// Runs every stage in turn until nothing moves, in one thread (worker
    /// 0): for benches and tests; a live informer runs each stage in a task
    /// of its own. Returns the events finished.
    pub fn drain(&mut self, now: &dyn Fn() -> Micros) -> Vec<Traced<T>> {
        let mut done = Vec::new();
        loop {
            let mut moved = false;
            while let Some(p) = self.process_one(now) {
                done.extend(p.finished);
                moved = true;
            }
            for index in 0..self.handlers.len() {
                while let Some(run) = self.run_listener(index, now) {
                    done.extend(run.finished);
                    moved = true;
                }
            }
            while let Some(finished) = self.run_worker(0, now) {
                done.extend(finished);
                moved = true;
            }
            if !moved {
                return done;
            }
        }
    }

    /// The Indexer (read-only).
    pub fn indexer(&self) -> &Indexer {
        self.shared.indexer()
    }

    /// Items waiting in the FIFO.
    pub fn fifo_depth(&self) -> usize {
        self.shared.fifo_len()
    }

    /// Notifications waiting in listener `index`'s buffer.
    pub fn buffered(&self, index: usize) -> usize {
        self.shared.buffered(index)
    }

    /// Keys waiting in the workqueue.
    pub fn workqueue_depth(&self) -> usize {
        self.workqueue.len()
    }

    /// Starts tracking a distributed notification's event.
    fn track(&mut self, d: Distribution, out: &mut Processed<N, T>) {
        let n = &d.notification;
        let mut event = match self.queued.remove(&n.id) {
            Some(event) => event,
            // Queued with the relist or resync that made it.
            None => synthesized(
                n.kind,
                &n.object,
                d.synthesized.and_then(|at| mark(at, None)),
            ),
        };
        if n.listed && n.kind == Kind::Update {
            event.event_type = EventType::Modified;
        }
        let handling = &mut event.handling;
        handling.old_resource_version = n.old.as_ref().map(|o| o.resource_version().to_string());
        handling.final_state_unknown = n.final_state_unknown;
        handling.resync = n.resync;
        handling.in_initial_list = n.in_initial_list;
        event.marks.indexer = mark(d.applied_at, None);
        event.marks.handlers = mark(d.distributed_at, None);
        let pending = d.listeners.len() as u32;
        out.woken.extend(d.listeners.iter().map(|(i, _)| *i));
        if pending == 0 {
            out.finished.push(event);
        } else {
            let tracked = Tracked {
                event,
                pending,
                depths: d.listeners,
                called: Vec::new(),
            };
            self.tracked.insert(d.notification.id, tracked);
        }
    }

    /// One part of an event's handling is done; returns the event once
    /// nothing else waits for it.
    fn settle(&mut self, id: u64) -> Option<Traced<T>> {
        let t = self.tracked.get_mut(&id)?;
        t.pending = t.pending.saturating_sub(1);
        if t.pending > 0 {
            return None;
        }
        let finished = self.tracked.remove(&id).map(|t| t.event);
        self.tracked.shrink_when_drained();
        self.queued.shrink_when_drained();
        finished
    }
}

/// The event of a delta the informer made itself: a relist's deletion
/// (DeletedFinalStateUnknown, counted as listed) or a resync. No watch
/// event is behind it, so the caller carried nothing.
fn synthesized<T>(kind: Kind, object: &Object, fifo: Option<Mark>) -> Traced<T> {
    let event_type = match kind {
        Kind::Delete => EventType::Deleted,
        Kind::Add => EventType::Added,
        Kind::Update => EventType::Modified,
    };
    Traced::queued(event_type, object.clone(), kind == Kind::Delete, fifo, None)
}

#[cfg(test)]
mod tests;
