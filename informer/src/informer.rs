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
use crate::workqueue::Workqueue;
use std::collections::HashMap;
use watchlife_protocol::{
    EventType, FrameBody, HandlerCall, Micros, ObjectRef, ReconcileRun, Stage, StageMark,
    WatchEvent,
};

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

/// An event out of the informer, every stage stamped, and the object it is
/// about (for a deletion, its last state): the same shared text as the
/// event's body, with its parsed [`crate::Meta`], for whoever keeps it next.
#[derive(Debug, Clone)]
pub struct Finished {
    pub event: WatchEvent,
    pub object: Object,
}

impl std::ops::Deref for Finished {
    type Target = WatchEvent;
    fn deref(&self) -> &WatchEvent {
        &self.event
    }
}

/// What one step of the processing loop produced.
#[derive(Debug, Default)]
pub struct Processed {
    /// Notes (Reflector states, BOOKMARK and ERROR markers) to publish now,
    /// in stream order.
    pub notes: Vec<FrameBody>,
    /// Listeners whose buffers got something.
    pub woken: Vec<usize>,
    /// Events finished at once (no listener took them).
    pub finished: Vec<Finished>,
}

/// What one listener run produced.
#[derive(Debug, Default)]
pub struct ListenerRun {
    /// The controller's handler queued a key: wake a worker.
    pub queued: bool,
    pub finished: Vec<Finished>,
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
struct Tracked {
    event: WatchEvent,
    object: Object,
    /// Listener runs and reconciles still to come.
    pending: u32,
    /// Each listener's buffer depth just after the notification entered it.
    depths: Vec<(usize, usize)>,
    /// The listener index of each of `event.handled.calls`, which are kept in
    /// registration order whatever order the listeners ran in.
    called: Vec<usize>,
}

/// The instrumented informer of one resource.
pub struct Informer {
    options: Options,
    shared: SharedInformer<FrameBody>,
    handlers: Vec<Box<dyn Handler>>,
    controller: usize,
    workqueue: Workqueue,
    /// Events not yet finished, by delta id.
    tracked: HashMap<u64, Tracked>,
    /// Events of deltas not yet processed, by delta id.
    queued: HashMap<u64, WatchEvent>,
    /// Events whose delta the queue dropped, finished with the next step.
    coalesced: Vec<Finished>,
}

impl std::fmt::Debug for Informer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Informer")
            .field("resource", &self.options.resource)
            .field("objects", &self.shared.indexer().len())
            .finish()
    }
}

impl Informer {
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

    /// Listener names, in registration order (a listener's index is its
    /// place here).
    pub fn listeners(&self) -> Vec<String> {
        self.shared.listener_names().map(String::from).collect()
    }

    /// The Reflector queues one watch event (ADDED, MODIFIED or DELETED).
    /// BOOKMARK and ERROR events are markers: see [`Informer::enqueue_note`].
    pub fn enqueue(&mut self, mut event: WatchEvent, object: Object, now: Micros) {
        let kind = match event.event_type {
            EventType::Added => DeltaType::Added,
            EventType::Modified => DeltaType::Updated,
            EventType::Deleted => DeltaType::Deleted,
            EventType::Bookmark | EventType::Error => {
                self.enqueue_note(FrameBody::Event(event));
                return;
            }
        };
        let queued = self.shared.queue_delta(kind, object);
        stamp(&mut event, Stage::Fifo, now, Some(queued.depth));
        self.queued.insert(queued.id, event);
        if let Some(dropped) = queued.dropped {
            // DeltaFIFO kept one of two deletions in a row: the other's
            // event ends here, coalesced into it.
            if let Some(mut event) = self.queued.remove(&dropped) {
                event.coalesced = true;
                let object = Object::from_json(event.object.clone());
                self.coalesced.push(Finished { event, object });
            }
        }
    }

    /// The Reflector queues a whole LIST.
    pub fn enqueue_list(&mut self, items: Vec<(WatchEvent, Object)>, now: Micros) {
        let (events, objects): (Vec<_>, Vec<_>) = items.into_iter().unzip();
        let (ids, depth) = self.shared.queue_list(objects, now);
        for (id, mut event) in ids.into_iter().zip(events) {
            stamp(&mut event, Stage::Fifo, now, Some(depth));
            self.queued.insert(id, event);
        }
    }

    /// The Reflector's resync timer fired at `now`.
    pub fn enqueue_resync(&mut self, now: Micros) {
        self.shared.queue_resync(now);
    }

    /// Something to publish in stream order with the events.
    pub fn enqueue_note(&mut self, note: FrameBody) {
        self.shared.queue_note(note);
    }

    /// The processing loop's step: HandleDeltas on one FIFO item. `now` is
    /// read as each delta is applied, and again once it is distributed: the
    /// items of a relist are stamped one by one. `None` when the FIFO is empty.
    pub fn process_one(&mut self, now: &dyn Fn() -> Micros) -> Option<Processed> {
        let processed = self.shared.process_one_timed(now)?;
        let mut out = Processed {
            finished: std::mem::take(&mut self.coalesced),
            ..Processed::default()
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
    pub fn run_listener(&mut self, index: usize, now: &dyn Fn() -> Micros) -> Option<ListenerRun> {
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
    pub fn handle(&mut self, taken: Taken, now: &dyn Fn() -> Micros) -> ListenerRun {
        let Taken {
            index,
            notification: n,
            dequeued,
        } = taken;
        let callback = self.handlers[index].handle(&n);
        let mut out = ListenerRun::default();
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
                stamp(&mut t.event, Stage::Workqueue, at, Some(added.depth));
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
            t.event.handled.calls.insert(
                at,
                HandlerCall {
                    listener: name,
                    callback,
                    depth: depth.min(u32::MAX as usize) as u32,
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
    pub fn run_worker(&mut self, worker: u32, now: &dyn Fn() -> Micros) -> Option<Vec<Finished>> {
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
                stamp(&mut t.event, Stage::Reconcile, started, None);
                t.event.handled.reconcile = Some(ReconcileRun {
                    worker,
                    started,
                    finished: finished_at,
                    seen_resource_version: seen.clone(),
                    requeued_after_ms: None,
                });
            }
            finished.extend(self.settle(id));
        }
        Some(finished)
    }

    /// Runs every stage in turn until nothing moves, in one thread (worker
    /// 0): for benches and tests; a live informer runs each stage in a task
    /// of its own. Returns the events finished.
    pub fn drain(&mut self, now: &dyn Fn() -> Micros) -> Vec<Finished> {
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
    fn track(&mut self, d: Distribution, out: &mut Processed) {
        let (applied_at, distributed_at) = (d.applied_at, d.distributed_at);
        let n = &d.notification;
        let mut event = match self.queued.remove(&n.id) {
            Some(event) => event,
            None => {
                let mut event = self.synthesized(n.kind, &n.object);
                // Queued with the relist or resync that made it.
                if let Some(queued_at) = d.synthesized {
                    stamp(&mut event, Stage::Fifo, queued_at, None);
                }
                event
            }
        };
        if n.listed && n.kind == Kind::Update {
            event.event_type = EventType::Modified;
        }
        event.handled.old_resource_version =
            n.old.as_ref().map(|o| o.resource_version().to_string());
        event.handled.final_state_unknown = n.final_state_unknown;
        event.handled.resync = n.resync;
        event.handled.in_initial_list = n.in_initial_list;
        stamp(&mut event, Stage::Indexer, applied_at, None);
        stamp(&mut event, Stage::Handlers, distributed_at, None);
        let pending = d.listeners.len() as u32;
        out.woken.extend(d.listeners.iter().map(|(i, _)| *i));
        if pending == 0 {
            out.finished.push(Finished {
                event,
                object: n.object.clone(),
            });
        } else {
            let depths = d.listeners.clone();
            self.tracked.insert(
                n.id,
                Tracked {
                    event,
                    object: n.object.clone(),
                    pending,
                    depths,
                    called: Vec::new(),
                },
            );
        }
    }

    /// One part of an event's handling is done; returns the event once
    /// nothing else waits for it.
    fn settle(&mut self, id: u64) -> Option<Finished> {
        let t = self.tracked.get_mut(&id)?;
        t.pending = t.pending.saturating_sub(1);
        if t.pending > 0 {
            return None;
        }
        let finished = self.tracked.remove(&id).map(|t| Finished {
            event: t.event,
            object: t.object,
        });
        self.tracked.shrink_when_drained();
        self.queued.shrink_when_drained();
        finished
    }

    /// The event of a delta the informer made itself: a relist's deletion
    /// (DeletedFinalStateUnknown) or a resync.
    fn synthesized(&self, kind: Kind, object: &Object) -> WatchEvent {
        let meta = object.meta();
        WatchEvent {
            event_type: match kind {
                Kind::Delete => EventType::Deleted,
                Kind::Add => EventType::Added,
                Kind::Update => EventType::Modified,
            },
            target: ObjectRef {
                resource: self.options.resource.clone(),
                kind: self.options.kind.clone(),
                namespace: meta.namespace().map(String::from),
                name: meta.name().to_string(),
            },
            resource_version: object.resource_version().to_string(),
            object: object.json().clone(),
            stages: Default::default(),
            initial: kind == Kind::Delete,
            coalesced: false,
            handled: Default::default(),
            server: None,
        }
        // No Reflector mark: no watch event is behind it. Its FIFO mark is
        // the relist's or resync's that made it ([`Informer::track`]).
    }
}

fn stamp(event: &mut WatchEvent, stage: Stage, at: Micros, depth: Option<usize>) {
    event.stages.insert(
        stage,
        StageMark {
            at,
            depth: depth.map(|d| d.min(u32::MAX as usize) as u32),
        },
    );
}

#[cfg(test)]
mod tests;
