//! What a Reflector tells of itself as it goes, in the order it happens.

use serde::{Deserialize, Serialize};

/// One thing the Reflector of one resource did or met in its ListAndWatch
/// loop: a state drawn on its node.
///
/// A resourceVersion here is as sent or received: "0", "" (the most recent,
/// a consistent read) or exact. The Reflector's machine reports every state
/// but two, which only the driver that performs its requests can see:
/// `ListProgress` and `Answered`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ReflectorState {
    /// A LIST request went out (`resource_version` as requested: "0", "" or
    /// exact), asking for pages of `limit` items (0: the whole list at once,
    /// which lets the watch cache serve it).
    ListStarted {
        resource_version: String,
        #[serde(default)]
        limit: u64,
    },
    /// A long LIST is still coming in: `bytes` of its answer have arrived so
    /// far (the bridge reports it at most every
    /// `watchlife_protocol::LIST_PROGRESS_EVERY_MS` while it lasts).
    ListProgress { bytes: u64 },
    /// The LIST (all its pages) came back.
    ListFinished {
        count: u64,
        resource_version: String,
    },
    /// A WATCH request went out from this resourceVersion, asking the server
    /// to end it after `timeout_seconds`.
    WatchStarted {
        resource_version: String,
        #[serde(default)]
        timeout_seconds: u64,
    },
    /// A streaming list went out (Kubernetes ≥ 1.27 servers, client-go ≥ 1.35
    /// informers): one WATCH with `sendInitialEvents=true` and
    /// `resourceVersionMatch=NotOlderThan` from `resource_version` (empty:
    /// the most recent, as a consistent read), whose first events are the
    /// current objects.
    StreamingListStarted {
        resource_version: String,
        #[serde(default)]
        timeout_seconds: u64,
    },
    /// The BOOKMARK annotated `k8s.io/initial-events-end` came: the `count`
    /// objects streamed are the whole list at `resource_version`, and the
    /// same stream goes on as a watch.
    InitialEventsEnd {
        count: u64,
        resource_version: String,
    },
    /// The streaming list could not be had (the server refused it, say 422
    /// from a server without WatchList, or it broke): the Reflector falls
    /// back to LIST, then WATCH, in the same cycle.
    StreamingListFailed { reason: String },
    /// A BOOKMARK moved the last synced resourceVersion on.
    Bookmark { resource_version: String },
    /// The watch ended normally (timeout or server close); it re-watches from
    /// the last synced resourceVersion.
    WatchEnded {
        resource_version: String,
        reason: String,
    },
    /// The server answered 410 Gone: the resourceVersion was compacted away.
    Gone {
        resource_version: String,
        message: String,
    },
    /// The Reflector lists again from scratch (after 410 Gone or a lost watch).
    Relist { reason: String },
    /// A request failed; the next try waits `delay_ms`.
    Backoff { delay_ms: u64, error: String },
    /// Who answered the last LIST or WATCH, where the server tells (the
    /// demo's apiserver does; a real cluster's does not).
    Answered { answer: crate::ServerAnswer },
}
