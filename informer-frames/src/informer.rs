//! The instrumented informer with protocol events in and out: the
//! Reflector's side hands it [`WatchEvent`]s as read (stamped at the
//! Reflector, with whatever server-side hops it knows), and gets back each
//! event with every stage the informer stamped, and the frames queued to
//! be told in stream order.

use crate::convert::watch_event;
use watchlife_informer::informer::{Options, Taken};
use watchlife_informer::trace::Traced;
use watchlife_informer::{Micros, Object};
use watchlife_protocol::{EventType, FrameBody, WatchEvent};

type Inner = watchlife_informer::Informer<FrameBody, WatchEvent>;

/// An event out of the informer, every stage stamped, and the object it is
/// about (for a deletion, its last state): the same shared text as the
/// event's body, for whoever keeps it next.
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
    /// Frames (Reflector states, BOOKMARK and ERROR markers) to publish
    /// now, in stream order.
    pub notes: Vec<FrameBody>,
    /// Listeners whose buffers got something.
    pub woken: Vec<usize>,
    /// Events finished at once.
    pub finished: Vec<Finished>,
}

/// What one listener run produced.
#[derive(Debug, Default)]
pub struct ListenerRun {
    /// The controller's handler queued a key: wake a worker.
    pub queued: bool,
    pub finished: Vec<Finished>,
}

/// [`watchlife_informer::Informer`], speaking the protocol. Read-only
/// questions (its Indexer, its depths, its listeners) go to the informer
/// itself through `Deref`.
pub struct Informer {
    inner: Inner,
}

impl std::fmt::Debug for Informer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl std::ops::Deref for Informer {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.inner
    }
}

impl Informer {
    /// See [`watchlife_informer::Informer::new`].
    pub fn new(options: Options) -> Self {
        Informer {
            inner: Inner::new(options),
        }
    }

    /// The Reflector queues one watch event and its object. A BOOKMARK or
    /// an ERROR is a marker: published in stream order, no delta.
    pub fn enqueue(&mut self, event: WatchEvent, object: Object, now: Micros) {
        match event.event_type {
            EventType::Bookmark | EventType::Error => self.enqueue_note(FrameBody::Event(event)),
            change => self.inner.enqueue(change, object, event, now),
        }
    }

    /// The Reflector queues a whole LIST.
    pub fn enqueue_list(&mut self, items: Vec<(WatchEvent, Object)>, now: Micros) {
        let items = items.into_iter().map(|(e, o)| (o, e)).collect();
        self.inner.enqueue_list(items, now);
    }

    /// The Reflector's resync timer fired at `now`.
    pub fn enqueue_resync(&mut self, now: Micros) {
        self.inner.enqueue_resync(now);
    }

    /// A frame to publish in stream order with the events.
    pub fn enqueue_note(&mut self, note: FrameBody) {
        self.inner.enqueue_note(note);
    }

    /// See [`watchlife_informer::Informer::process_one`].
    pub fn process_one(&mut self, now: &dyn Fn() -> Micros) -> Option<Processed> {
        let processed = self.inner.process_one(now)?;
        Some(Processed {
            notes: processed.notes,
            woken: processed.woken,
            finished: self.finish(processed.finished),
        })
    }

    /// See [`watchlife_informer::Informer::run_listener`].
    pub fn run_listener(&mut self, index: usize, now: &dyn Fn() -> Micros) -> Option<ListenerRun> {
        let taken = self.take(index, now)?;
        Some(self.handle(taken, now))
    }

    /// See [`watchlife_informer::Informer::take`].
    pub fn take(&mut self, index: usize, now: &dyn Fn() -> Micros) -> Option<Taken> {
        self.inner.take(index, now)
    }

    /// See [`watchlife_informer::Informer::handle`].
    pub fn handle(&mut self, taken: Taken, now: &dyn Fn() -> Micros) -> ListenerRun {
        let run = self.inner.handle(taken, now);
        ListenerRun {
            queued: run.queued,
            finished: self.finish(run.finished),
        }
    }

    /// See [`watchlife_informer::Informer::run_worker`].
    pub fn run_worker(&mut self, worker: u32, now: &dyn Fn() -> Micros) -> Option<Vec<Finished>> {
        let finished = self.inner.run_worker(worker, now)?;
        Some(self.finish(finished))
    }

    /// See [`watchlife_informer::Informer::drain`].
    pub fn drain(&mut self, now: &dyn Fn() -> Micros) -> Vec<Finished> {
        let finished = self.inner.drain(now);
        self.finish(finished)
    }

    fn finish(&self, traced: Vec<Traced<WatchEvent>>) -> Vec<Finished> {
        let options = self.inner.options();
        traced
            .into_iter()
            .map(|t| {
                let object = t.object.clone();
                let event = watch_event(options, t);
                Finished { event, object }
            })
            .collect()
    }
}
