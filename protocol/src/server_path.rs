//! The server side of one event as the demo's apiserver measured it, hop by
//! hop. A real cluster's apiserver does not report these: its events carry
//! none, and the page says so. How a server answered a Reflector's requests
//! is `watchlife_watch::ServerAnswer`, shared with the informer.

use crate::{Micros, StageMark};
use serde::{Deserialize, Serialize};

/// How a watch stream came to carry an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Dispatched live as the change happened.
    Live,
    /// Replayed from the watch cache's window to a watch that started from
    /// an older resourceVersion: its commit and cache times are the change's
    /// own, its buffer and stream times this stream's.
    Replayed,
    /// A synthetic ADDED event for a current object, sent to a watch from
    /// resourceVersion 0: no change happened, so it has no commit time.
    Synthetic,
}

/// Every server-side hop of one event, each stamped when it happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerPath {
    pub origin: Origin,
    /// Read by the apiserver Cacher's Reflector from etcd's watch (live and
    /// replayed events only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reflected: Option<Micros>,
    /// Taken from the Cacher's `incoming` queue by its dispatcher; `depth`
    /// is what `incoming` held when the event entered it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatched: Option<StageMark>,
    /// Put in this watch's buffer; `depth` is what the buffer held then.
    pub buffered: StageMark,
    /// Written on this watch's stream.
    pub written: Micros,
}
