//! What a Reflector tells of itself as it goes: the reports of
//! [`super::Effect::Report`], and the progress a driver sees of a long LIST.

/// One thing the Reflector did or met, in the order it happened.
///
/// A resourceVersion here is as sent or received: "0", "" (the most recent,
/// a consistent read) or exact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReflectorState {
    /// A LIST went out from `resource_version`, in pages of `limit` items
    /// (0: unpaged, which the watch cache can serve).
    ListStarted {
        resource_version: String,
        limit: u64,
    },
    /// `bytes` of a LIST's answer have arrived so far (a driver reports it
    /// while a long answer comes in; the machine never does).
    ListProgress { bytes: u64 },
    /// Every page of the LIST is in: `count` objects at `resource_version`.
    ListFinished {
        count: u64,
        resource_version: String,
    },
    /// A WATCH went out from `resource_version`, which the server is asked
    /// to close after `timeout_seconds`.
    WatchStarted {
        resource_version: String,
        timeout_seconds: u64,
    },
    /// A streaming list went out: a WATCH with `sendInitialEvents=true`
    /// from `resource_version` ("" for the most recent), closed by the
    /// server after `timeout_seconds`.
    StreamingListStarted {
        resource_version: String,
        timeout_seconds: u64,
    },
    /// The initial-events-end BOOKMARK came: the `count` objects streamed
    /// are the list at `resource_version`; the stream goes on as a watch.
    InitialEventsEnd {
        count: u64,
        resource_version: String,
    },
    /// No streaming list to be had (refused, or broken): LIST, then WATCH,
    /// in this same cycle.
    StreamingListFailed { reason: String },
    /// A BOOKMARK moved the last synced resourceVersion to `resource_version`.
    Bookmark { resource_version: String },
    /// The watch closed normally; the next one starts from `resource_version`.
    WatchEnded {
        resource_version: String,
        reason: String,
    },
    /// 410 Gone: `resource_version` has been compacted away.
    Gone {
        resource_version: String,
        message: String,
    },
    /// A new list-watch cycle lists everything again.
    Relist { reason: String },
    /// A request failed with `error`; the next try waits `delay_ms`.
    Backoff { delay_ms: u64, error: String },
}
