//! What the instrumented [`crate::Informer`] records of each event it
//! carries: when the event reached each of its stages, and what the
//! informer did with it (client-go's sharedIndexInformer would have it:
//! the `old` object, `DeletedFinalStateUnknown`, a resync,
//! `isInInitialList`, each listener's call, the reconcile).
//!
//! The records are the informer's own: whoever shows them (the bridge's
//! frames, the page's model) converts them at its edge.

use crate::handlers::Callback;
use crate::object::Object;
use crate::{EventType, Micros};

/// When an event reached a stage, and how full the stage's queue was then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    pub at: Micros,
    /// Items in the stage's queue just after the event entered it, for a
    /// stage with a queue.
    pub depth: Option<u32>,
}

impl Mark {
    fn new(at: Micros, depth: Option<usize>) -> Self {
        Mark {
            at,
            depth: depth.map(saturate),
        }
    }
}

/// The informer's stages an event reached, each once; `None` where it did
/// not get (yet), never an estimate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Marks {
    /// Queued as a delta (for what the informer made itself, when the
    /// relist or resync that made it was queued).
    pub fifo: Option<Mark>,
    /// Popped and applied to the Indexer.
    pub indexer: Option<Mark>,
    /// Distributed to the listeners.
    pub handlers: Option<Mark>,
    /// Its key added to the workqueue.
    pub workqueue: Option<Mark>,
    /// Its key taken by a worker.
    pub reconcile: Option<Mark>,
}

/// What the informer did with one event after its Indexer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Handling {
    /// The resourceVersion the Indexer held before (OnUpdate's `old`).
    pub old_resource_version: Option<String>,
    /// A deletion found by a relist: handlers got a
    /// `DeletedFinalStateUnknown` with the Indexer's last copy.
    pub final_state_unknown: bool,
    /// Delivered as a resync (only listeners due for one got it).
    pub resync: bool,
    /// OnAdd's `isInInitialList` (client-go ≥ 1.27).
    pub in_initial_list: bool,
    /// Each listener called, in registration order.
    pub calls: Vec<HandlerCall>,
    /// The worker's run over the event's key, when a handler queued it.
    pub reconcile: Option<ReconcileRun>,
}

/// One listener's call (client-go's processorListener running its handler).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandlerCall {
    pub listener: String,
    pub callback: Callback,
    /// Notifications in the listener's buffer just after this one entered.
    pub depth: u32,
    /// When the listener took the notification from its buffer.
    pub dequeued: Micros,
    /// When the handler returned.
    pub returned: Micros,
}

/// A workqueue worker's run over a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReconcileRun {
    /// Which worker (0-based).
    pub worker: u32,
    pub started: Micros,
    pub finished: Micros,
    /// What the worker read from the Indexer; `None` when the key was gone.
    pub seen_resource_version: Option<String>,
}

/// One event's way through the informer, finished once every listener
/// that got it ran and the reconcile of its key (when queued) returned.
///
/// `T` is what the caller handed in with the event (its own record of the
/// Reflector's side); `None` for what the informer made itself: a relist's
/// DeletedFinalStateUnknown, a resync.
#[derive(Debug, Clone)]
pub struct Traced<T> {
    /// As handlers saw it: a relisted object already known is `Modified`.
    pub event_type: EventType,
    /// The object (for a deletion, its last state known).
    pub object: Object,
    /// Came with a LIST (the initial list or a relist), a relist's
    /// deletion included, rather than from the watch stream.
    pub listed: bool,
    /// Merged into another: its delta was dropped by the FIFO, or its key
    /// was already waiting in the workqueue.
    pub coalesced: bool,
    pub marks: Marks,
    pub handling: Handling,
    pub carried: Option<T>,
}

impl<T> Traced<T> {
    /// An event just queued at `fifo`.
    pub(crate) fn queued(
        event_type: EventType,
        object: Object,
        listed: bool,
        fifo: Option<Mark>,
        carried: Option<T>,
    ) -> Self {
        Traced {
            event_type,
            object,
            listed,
            coalesced: false,
            marks: Marks {
                fifo,
                ..Marks::default()
            },
            handling: Handling::default(),
            carried,
        }
    }
}

/// `at`, with `depth` items in the stage's queue.
pub(crate) fn mark(at: Micros, depth: Option<usize>) -> Option<Mark> {
    Some(Mark::new(at, depth))
}

/// A count as the records keep it: `u32::MAX` stands for anything larger.
pub(crate) fn saturate(n: usize) -> u32 {
    n.min(u32::MAX as usize) as u32
}
