//! Who answered a Reflector's request, where the server tells: the demo's
//! apiserver does, a real cluster's does not.

use crate::Micros;
use serde::{Deserialize, Serialize};

/// Who answered a Reflector's request, as the demo's apiserver reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum ServerAnswer {
    /// A LIST served by the watch cache at its revision (`rv="0"`, or a
    /// revision the cache had reached, after `waited_micros` waiting for
    /// it).
    ListFromWatchCache {
        asked: String,
        revision: u64,
        items: u64,
        waited_micros: Micros,
    },
    /// A LIST served by a consistent read from etcd (`rv=""`, a limit with a
    /// revision other than 0, a continue token).
    ListFromEtcd {
        asked: String,
        revision: u64,
        items: u64,
    },
    /// A consistent LIST (`rv=""`) that v1.34+ serves from the watch cache:
    /// the apiserver asked etcd for its current revision
    /// (`store_revision`), waited `waited_micros` for the cache to reach it,
    /// then read the cache at `revision` (`from_cache`), or, when the cache
    /// had not caught up within its bound, read etcd instead.
    ConsistentList {
        asked: String,
        store_revision: u64,
        revision: u64,
        items: u64,
        waited_micros: Micros,
        from_cache: bool,
    },
    /// A WATCH that started by replaying `events` from the window.
    WatchReplayed { asked: String, events: u32 },
    /// A WATCH from 0 that started with `events` synthetic ADDED events, one
    /// per current object.
    WatchSynthetic { asked: String, events: u32 },
}
