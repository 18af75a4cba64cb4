//! A Kubernetes watch event as the bridge relays it.

use crate::stage::StageTimes;
use serde::{Deserialize, Serialize};

pub use watchlife_watch::EventType;

/// Which object an event is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ObjectRef {
    /// Resource as watched: a plural, with its API group when not core
    /// (`pods`, `deployments.apps`).
    pub resource: String,
    /// The object's kind (`Pod`, `Deployment`).
    pub kind: String,
    /// Namespace; absent for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectRef {
    /// The informer's key for this object: `namespace/name`, or `name` when
    /// cluster-scoped (client-go's `MetaNamespaceKeyFunc`).
    pub fn key(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}/{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// One watch event with the measured times of the stages it passed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatchEvent {
    #[serde(rename = "event")]
    pub event_type: EventType,
    /// The object the event is about. For BOOKMARK and ERROR events the name is empty.
    pub target: ObjectRef,
    /// The object's resourceVersion after this event: the store revision that
    /// wrote it (for DELETED, the revision of the deletion).
    pub resource_version: String,
    /// The object as relayed: Secret values redacted, `managedFields` dropped,
    /// oversized objects cut with a marker. `null` for BOOKMARK. Its JSON
    /// text as the bridge keeps it, spliced into the frame unchanged.
    /// `null` too when the body comes as [`WatchEvent::patch`].
    pub object: crate::ObjectJson,
    /// For a viewer that asked for patches (`/ws?bodies=patch`): a MODIFIED
    /// event's body as a merge patch against the object's previous version
    /// in the stream, when that is smaller; `object` is then `null`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<Box<crate::patch::BodyPatch>>,
    /// When the event reached each observed stage (lean on the wire, see
    /// [`crate::lean_stages`]).
    #[serde(with = "crate::lean_stages")]
    pub stages: StageTimes,
    /// True when the event comes from a LIST (the initial list or a relist)
    /// rather than from the watch stream: the Reflector turns each listed
    /// object into an ADDED (or, on relist, a sync) delta.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub initial: bool,
    /// True when the event's key was already waiting in the workqueue, so this
    /// event merged into the queued item instead of adding one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub coalesced: bool,
    /// What the informer did with the event after its Indexer: the handler
    /// calls, the reconcile. Empty for BOOKMARK and ERROR, and in recordings
    /// made before it existed.
    #[serde(default, skip_serializing_if = "Handled::is_empty")]
    pub handled: Handled,
    /// The server-side hops of the event, where the server reports them
    /// (the demo's apiserver).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<Box<crate::ServerPath>>,
}

/// The informer's side of one event, as client-go's sharedIndexInformer
/// would report it: what the Indexer held before, which listeners were
/// called with what, and the reconcile that covered the event's key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handled {
    /// The resourceVersion the Indexer held for the key before this event
    /// (the `old` object of OnUpdate); absent when the key was new.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_resource_version: Option<String>,
    /// A deletion found by a relist rather than seen on the watch: handlers
    /// got a `DeletedFinalStateUnknown` holding the Indexer's last copy, and
    /// `resource_version` is that copy's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub final_state_unknown: bool,
    /// Delivered as a resync: a Sync delta, or a relisted object whose
    /// resourceVersion did not change. Only listeners due for a resync get it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resync: bool,
    /// OnAdd's `isInInitialList` (client-go ≥ 1.27): the object came with
    /// the informer's first list. Never set by v1.20's rules, whose OnAdd
    /// has no such argument.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_initial_list: bool,
    /// Each listener that was called, in the order listeners registered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<HandlerCall>,
    /// The reconcile that covered this event's key, when a handler queued it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconcile: Option<ReconcileRun>,
}

impl Handled {
    /// True when the informer left no trace (markers, old recordings).
    pub fn is_empty(&self) -> bool {
        *self == Handled::default()
    }
}

/// Which callback of a handler ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Callback {
    OnAdd,
    OnUpdate,
    OnDelete,
}

impl Callback {
    /// client-go's spelling: `OnAdd`, `OnUpdate`, `OnDelete`.
    pub fn as_str(self) -> &'static str {
        match self {
            Callback::OnAdd => "OnAdd",
            Callback::OnUpdate => "OnUpdate",
            Callback::OnDelete => "OnDelete",
        }
    }
}

/// One listener's handling of one notification (client-go's processorListener).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandlerCall {
    /// The listener's name, as its lane is labelled.
    pub listener: String,
    pub callback: Callback,
    /// Notifications in the listener's buffer just after this one entered it.
    pub depth: u32,
    /// When the listener's task took the notification from its buffer.
    pub dequeued: crate::Micros,
    /// When the handler returned.
    pub returned: crate::Micros,
}

/// The workqueue worker's run over the event's key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReconcileRun {
    /// Which worker (0-based) took the key.
    pub worker: u32,
    /// When the worker took the key from the workqueue.
    pub started: crate::Micros,
    /// When the reconcile returned.
    pub finished: crate::Micros,
    /// The resourceVersion the worker read from the Indexer; absent when the
    /// object was gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen_resource_version: Option<String>,
    /// The reconcile failed and the key was requeued with the rate limiter's delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeued_after_ms: Option<u64>,
}
