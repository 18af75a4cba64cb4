//! The watch caches of the demo control plane: each one's window of recent
//! events (the ring) and its fan-out to the watchers it serves.
//!
//! Only the embedded demo can report this: a real apiserver does not expose
//! its Cacher's ring or its watchers' buffers.

use serde::{Deserialize, Serialize};

/// Every watch cache worth drawing, as of one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchCacheReport {
    /// One entry per resource whose cache holds events or serves watchers,
    /// in the control plane's order of resources.
    pub caches: Vec<CacheState>,
}

/// One resource's watch cache.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheState {
    /// Resource as watched (`pods`, `deployments.apps`).
    pub resource: String,
    /// The ring holds every change after this revision: a watch from an
    /// older resourceVersion is answered 410 Gone.
    pub window_start: u64,
    /// The newest revision the cache has seen.
    pub window_end: u64,
    /// Events in the ring.
    pub len: u32,
    /// Events the ring holds before the oldest is dropped (it grows under
    /// bursts, up to a limit).
    pub capacity: u32,
    /// The watchers the cache dispatches each event to, oldest first: at
    /// most a fixed number of them (the busiest and the most recent), so that
    /// the frame does not grow with the number of clients.
    pub watchers: Vec<WatcherState>,
    /// Watchers the cache serves that `watchers` leaves out.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more_watchers: u64,
    /// Watchers closed because their buffer was full, since the cache started.
    pub closed_slow: u64,
    /// The last few of them, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recently_closed: Vec<ClosedWatcherState>,
    /// Events in the Cacher's `incoming` queue, between the watch cache and
    /// the dispatcher (it holds 100).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub incoming: u32,
}

impl CacheState {
    /// Every watcher the cache serves, listed or not.
    pub fn watcher_count(&self) -> u64 {
        (self.watchers.len() as u64).saturating_add(self.more_watchers)
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

/// One watcher of a cache: a lane of its fan-out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatcherState {
    /// Unique within its cache.
    pub id: u64,
    /// Who watches (`scheduler`, `kubelet node-a`); empty when unnamed.
    pub name: String,
    /// Events sent by the cache and not yet read by the watcher.
    pub buffered: u32,
    /// Events its buffer holds. With it full, the dispatcher waits for it at
    /// most its time budget, then closes it.
    pub capacity: u32,
    /// Whether the dispatcher is waiting on this watcher's full buffer now.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blocking: bool,
}

/// A watcher the cache closed for being too slow.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClosedWatcherState {
    pub id: u64,
    pub name: String,
    /// The revision of the event it could not take.
    pub revision: u64,
}
