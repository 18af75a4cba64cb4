//! A Kubernetes watch event as the bridge relays it.

use crate::stage::StageTimes;
use serde::{Deserialize, Serialize};

/// The type of a watch event, spelled as the Kubernetes API spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EventType {
    Added,
    Modified,
    Deleted,
    /// A progress notice: no object changed, the resourceVersion moved on.
    Bookmark,
    /// The server ended the watch with a Status (410 Gone among them).
    Error,
}

impl EventType {
    /// The Kubernetes spelling: `ADDED`, `MODIFIED`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
            EventType::Bookmark => "BOOKMARK",
            EventType::Error => "ERROR",
        }
    }
}

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
///
/// Read through [`WireEvent`], the same fields without `flatten`, which
/// would buffer the whole event (its object included) before reading it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "WireEvent")]
pub struct WatchEvent {
    #[serde(rename = "event")]
    pub event_type: EventType,
    /// The object the event is about. For BOOKMARK and ERROR events the name is empty.
    #[serde(flatten)]
    pub target: ObjectRef,
    /// The object's resourceVersion after this event: the store revision that
    /// wrote it (for DELETED, the revision of the deletion).
    pub resource_version: String,
    /// The object as relayed: Secret values redacted, `managedFields` dropped,
    /// oversized objects cut with a marker. `null` for BOOKMARK.
    pub object: serde_json::Value,
    /// When the event reached each observed stage.
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
}

/// A [`WatchEvent`] as it is written: the target's fields side by side with
/// the event's.
#[derive(Deserialize)]
struct WireEvent {
    event: EventType,
    resource: String,
    kind: String,
    #[serde(default)]
    namespace: Option<String>,
    name: String,
    resource_version: String,
    object: serde_json::Value,
    stages: StageTimes,
    #[serde(default)]
    initial: bool,
    #[serde(default)]
    coalesced: bool,
}

impl From<WireEvent> for WatchEvent {
    fn from(w: WireEvent) -> Self {
        WatchEvent {
            event_type: w.event,
            target: ObjectRef {
                resource: w.resource,
                kind: w.kind,
                namespace: w.namespace,
                name: w.name,
            },
            resource_version: w.resource_version,
            object: w.object,
            stages: w.stages,
            initial: w.initial,
            coalesced: w.coalesced,
        }
    }
}
