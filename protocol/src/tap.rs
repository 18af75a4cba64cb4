//! The tap's wire: what `watchlife-tap`, inside a user's kube-rs controller,
//! sends to a running watchlife.
//!
//! # Connection
//! The tap opens a WebSocket to `ws://HOST/tap` ([`TAP_PATH`]) with the
//! viewers' token (`?token=` or `Authorization: Bearer`) and sends JSON text
//! frames, one [`TapFrame`] each, starting with [`TapFrame::Hello`]. It never
//! reads anything back but pings' pongs; a bridge that does not accept taps
//! closes or refuses the connection, and the tap reconnects with backoff.
//!
//! # Ordering and loss
//! Every frame carries `seq`, numbered by the tap when it *recorded* the fact
//! (before it could be dropped), from 1, in one order for the whole tap. A gap
//! in `seq` is a frame the tap dropped (buffer full, bridge away or slow);
//! [`TapFrame::Stats`] counts them. Within one connection frames arrive in
//! `seq` order; after a reconnect, `seq` goes on from where the buffer was.
//!
//! # What is observed
//! Only what kube-runtime lets a library see without a fork: the watcher's
//! events (a stream combinator), the HTTP requests kube-client makes (its
//! `HTTP` tracing spans), the reconcile's reason (kube-runtime's
//! `reconciling object` span) and the reconciler's and error policy's calls
//! (wrappers). A field that is `None` was not observed; [`Hello::unobserved`]
//! names the stages this tap cannot see at all.
//!
//! Times are microseconds since the Unix epoch on the controller's clock
//! (`at_us`), or durations in microseconds measured on its monotonic clock.

use serde::{Deserialize, Serialize};

use crate::Micros;

/// The path a bridge accepts taps on.
pub const TAP_PATH: &str = "/tap";

/// This wire's version, in [`Hello::version`]. A bridge refuses versions it
/// does not know rather than guess at their fields.
pub const TAP_PROTOCOL_VERSION: u32 = 1;

/// A tap's frame as a bridge relays it to its viewers: the stream frame of
/// type `tap`, numbered in the bridge's one order with its own events.
///
/// Exactly one of `frame` and `left` is set. The tap's own `seq` stays in
/// `frame`: a gap in it is a frame the tap dropped, told in its `stats`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TapRelay {
    /// The tap's connection, numbered by the bridge from 1 in the order taps
    /// connected: two controllers of one name are two lanes, and a tap that
    /// reconnects is a new number with the same `controller`.
    pub tap: u64,
    /// The controller's name, from the connection's [`Hello`].
    pub controller: String,
    /// When the bridge received it, on the bridge's clock (the clock of its
    /// own events' client stages).
    pub received: Micros,
    /// What the tap said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame: Option<TapFrame>,
    /// The tap's connection ended, and why (closed by the tap, broken, or
    /// closed by the bridge for a frame it refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left: Option<String>,
}

/// One frame from a tap: `{"type": ..., "seq": ..., "at_us": ..., ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TapFrame {
    /// The first frame of every connection.
    Hello(Hello),
    /// A watcher event, as the watcher stream yielded it.
    Watcher(WatcherFrame),
    /// An error the watcher stream yielded (it retries after its backoff).
    WatcherError(WatcherErrorFrame),
    /// An HTTP request kube-client made (LIST, WATCH, and the reconciler's).
    Request(RequestFrame),
    /// The reconciler was called.
    ReconcileStart(ReconcileStart),
    /// The reconciler's future finished.
    ReconcileEnd(ReconcileEnd),
    /// The error policy was called for a failed reconcile.
    ErrorPolicy(ErrorPolicyFrame),
    /// Counters, sent periodically.
    Stats(Stats),
}

impl TapFrame {
    /// The frame's sequence number (`0` for [`TapFrame::Hello`], which is
    /// sent once per connection, not recorded).
    pub fn seq(&self) -> u64 {
        match self {
            TapFrame::Hello(_) => 0,
            TapFrame::Watcher(f) => f.seq,
            TapFrame::WatcherError(f) => f.seq,
            TapFrame::Request(f) => f.seq,
            TapFrame::ReconcileStart(f) => f.seq,
            TapFrame::ReconcileEnd(f) => f.seq,
            TapFrame::ErrorPolicy(f) => f.seq,
            TapFrame::Stats(f) => f.seq,
        }
    }
}

/// Who is talking: sent first on every connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    /// [`TAP_PROTOCOL_VERSION`].
    pub version: u32,
    /// The controller's name, as its author gave it (a lane's title).
    pub controller: String,
    /// The tap crate's version.
    pub tap_version: String,
    /// The kube-rs release line the tap was built for (e.g. `5.x`).
    pub kube_runtime: String,
    /// When the tap started.
    pub started_at_us: u64,
    /// Stages of kube-runtime's pipeline this tap cannot observe, by name
    /// (`scheduler`, `runner`): their time is only seen summed, in
    /// [`ReconcileStart::since_watcher_event_us`].
    pub unobserved: Vec<String>,
}

/// An object's reference.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TapObjectRef {
    /// `group/version` or `version` (e.g. `apps/v1`).
    pub api_version: String,
    pub kind: String,
    /// `None` for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

impl TapObjectRef {
    /// The reference of the object `namespace/name` of type `kind` in
    /// `api_version` (e.g. `apps/v1`, `Deployment`, `default`, `web`).
    pub fn namespaced(api_version: &str, kind: &str, namespace: &str, name: &str) -> Self {
        TapObjectRef {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: Some(namespace.into()),
            name: name.into(),
        }
    }
}

/// Which watcher event (kube-runtime's `watcher::Event`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WatcherEventKind {
    /// The watch (re)starts: a LIST or streaming list follows.
    Init,
    /// An object of the initial list.
    InitApply,
    /// The initial list is complete.
    InitDone,
    /// An object was added or modified.
    Apply,
    /// An object was deleted.
    Delete,
}

/// A watcher event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatcherFrame {
    pub seq: u64,
    pub at_us: u64,
    /// The watched resource, as the controller author named the stream
    /// (e.g. `deployments.apps`).
    pub resource: String,
    pub event: WatcherEventKind,
    /// `None` for `Init` and `InitDone`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<TapObjectRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// `Some(true)` when the tap saw the event after the reflector applied it
    /// to its store (the combinator placed after `reflector`), `None` when
    /// not observed (placed before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_to_store: Option<bool>,
}

/// A watcher error: the watcher retries after its backoff, whose length the
/// tap does not see (kube-runtime gives no hook).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatcherErrorFrame {
    pub seq: u64,
    pub at_us: u64,
    pub resource: String,
    pub message: String,
}

/// One HTTP request kube-client made, from its `HTTP` tracing span.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestFrame {
    pub seq: u64,
    /// When the request started.
    pub at_us: u64,
    pub method: String,
    /// Path and query, with the parameters asked (`watch`,
    /// `resourceVersion`, `sendInitialEvents`, `limit`, ...).
    pub url: String,
    /// `list`, `watch`, or `other`, read from the URL's query.
    pub verb: RequestVerb,
    /// `None` when no response came (a connection error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// From the request's start until its span closed: for a WATCH, until
    /// the watch ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_us: Option<u64>,
}

/// What kind of request, for the page's watcher stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestVerb {
    List,
    Watch,
    Other,
}

/// Why the reconcile ran: kube-runtime's `ReconcileReason`, as read from its
/// `reconciling object` span (the text its `Display` writes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reason {
    ObjectUpdated,
    /// `related`: the related object's reference as kube-runtime wrote it
    /// (e.g. `ConfigMap.v1./web.default`).
    RelatedObjectUpdated {
        related: String,
    },
    ReconcilerRequestedRetry,
    ErrorPolicyRequestedRetry,
    BulkReconcile,
    Unknown,
    /// A custom reason (`ReconcileReason::Custom`), or a text this version
    /// does not know.
    Custom {
        text: String,
    },
}

/// The reconciler was called.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReconcileStart {
    pub seq: u64,
    pub at_us: u64,
    /// Numbers this reconcile for its [`ReconcileEnd`] and [`ErrorPolicyFrame`].
    pub reconcile: u64,
    pub object: TapObjectRef,
    /// The object's resourceVersion as the reconciler got it (from the store).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// `None` when the `reconciling object` span was not seen (the tap's
    /// tracing layer is not installed, or a filter disabled the span).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
    /// Time from the last watcher event the tap saw for this object until
    /// this start: the store, trigger, scheduler (debounce) and runner
    /// (waiting while the same object is reconciled) together, which
    /// kube-runtime gives no hook to tell apart. `None` when the tap saw no
    /// watcher event of this object (its stream is not tapped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_watcher_event_us: Option<u64>,
}

/// The reconciler's future finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReconcileEnd {
    pub seq: u64,
    pub at_us: u64,
    pub reconcile: u64,
    pub object: TapObjectRef,
    pub duration_us: u64,
    pub result: ReconcileResult,
}

/// What the reconciler returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReconcileResult {
    /// `Ok(Action)`.
    Action { action: Requeue },
    /// `Err(e)`, by its `Display`; the error policy's answer follows in an
    /// [`ErrorPolicyFrame`].
    Error { message: String },
}

/// kube-runtime's `Action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Requeue {
    /// `Action::requeue(after)`.
    After { after_us: u64 },
    /// `Action::await_change()`.
    AwaitChange,
}

/// The error policy's answer for a failed reconcile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorPolicyFrame {
    pub seq: u64,
    pub at_us: u64,
    /// The failed reconcile's number, `None` when the error policy ran
    /// outside a tapped reconciler's span.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconcile: Option<u64>,
    pub object: TapObjectRef,
    pub message: String,
    pub action: Requeue,
}

/// The tap's counters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub seq: u64,
    pub at_us: u64,
    /// Frames recorded since the tap started.
    pub recorded: u64,
    /// Frames dropped since the tap started (buffer full, or lost with a
    /// broken connection).
    pub dropped: u64,
}
