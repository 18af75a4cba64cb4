//! The stages of a watch event's life, in the order an event passes them.

use crate::Micros;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One stage of the path etcd → apiserver → informer → controller.
///
/// The order of the variants is the order an event passes them; `Ord` follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Written to etcd; the store's revision becomes the resourceVersion.
    /// The demo's mark is the commit. A real cluster's is when etcd's watch
    /// notification of the write reached watchlife, which watches that etcd
    /// from outside (`--etcd-endpoints`): the commit came a little before.
    Etcd,
    /// Entered the apiserver's watch cache (the Cacher's sliding window).
    WatchCache,
    /// Dispatched by the watch cache to the bridge's watcher, onto the watch stream.
    WatchStream,
    /// Decoded by the Reflector from the watch stream.
    Reflector,
    /// Queued as a delta in the FIFO.
    Fifo,
    /// Popped from the FIFO and applied to the Indexer (the informer's store).
    Indexer,
    /// Delivered to the registered event handlers (OnAdd / OnUpdate / OnDelete).
    Handlers,
    /// Its key added to the workqueue (coalesced when already queued).
    Workqueue,
    /// Its key taken by a worker and reconciled.
    Reconcile,
}

impl Stage {
    /// Every stage, in pipeline order.
    pub const ALL: [Stage; 9] = [
        Stage::Etcd,
        Stage::WatchCache,
        Stage::WatchStream,
        Stage::Reflector,
        Stage::Fifo,
        Stage::Indexer,
        Stage::Handlers,
        Stage::Workqueue,
        Stage::Reconcile,
    ];

    /// Short name as drawn on the pipeline, the same for every source (what
    /// the etcd mark means per source is said beside it, see [`Stage::Etcd`]).
    pub fn label(self) -> &'static str {
        match self {
            Stage::Etcd => "etcd",
            Stage::WatchCache => "watch cache",
            Stage::WatchStream => "watch stream",
            Stage::Reflector => "Reflector",
            Stage::Fifo => "FIFO",
            Stage::Indexer => "Indexer",
            Stage::Handlers => "event handlers",
            Stage::Workqueue => "workqueue",
            Stage::Reconcile => "reconcile",
        }
    }

    /// The stage's name on the wire (`watch_cache`), as serde writes it.
    pub fn wire_name(self) -> &'static str {
        match self {
            Stage::Etcd => "etcd",
            Stage::WatchCache => "watch_cache",
            Stage::WatchStream => "watch_stream",
            Stage::Reflector => "reflector",
            Stage::Fifo => "fifo",
            Stage::Indexer => "indexer",
            Stage::Handlers => "handlers",
            Stage::Workqueue => "workqueue",
            Stage::Reconcile => "reconcile",
        }
    }

    /// Whether the stage runs in the apiserver (and etcd) rather than in the client.
    pub fn is_server_side(self) -> bool {
        matches!(self, Stage::Etcd | Stage::WatchCache | Stage::WatchStream)
    }
}

/// When an event reached a stage, and what the stage looked like then.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageMark {
    /// When the event reached the stage.
    pub at: Micros,
    /// Items waiting in the stage's queue just after the event entered it, where
    /// the stage has a queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
}

impl StageMark {
    /// A mark with no queue depth.
    pub fn at(at: Micros) -> Self {
        StageMark { at, depth: None }
    }
}

/// The measured times of one event. A stage that was not observed is absent:
/// it is never filled in by estimate.
pub type StageTimes = BTreeMap<Stage, StageMark>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_are_ordered_as_the_pipeline() {
        let mut sorted = Stage::ALL;
        sorted.sort();
        assert_eq!(sorted, Stage::ALL);
        assert!(Stage::Etcd < Stage::Reconcile);
    }

    #[test]
    fn stage_times_serialize_with_snake_case_keys() {
        let mut times = StageTimes::new();
        times.insert(Stage::WatchCache, StageMark::at(5));
        times.insert(
            Stage::Fifo,
            StageMark {
                at: 7,
                depth: Some(2),
            },
        );
        let json = serde_json::to_string(&times).unwrap();
        assert_eq!(
            json,
            r#"{"watch_cache":{"at":5},"fifo":{"at":7,"depth":2}}"#
        );
        let back: StageTimes = serde_json::from_str(&json).unwrap();
        assert_eq!(back, times);
    }

    #[test]
    fn the_wire_name_is_serdes() {
        for stage in Stage::ALL {
            let json = serde_json::to_string(&stage).unwrap();
            assert_eq!(json, format!("\"{}\"", stage.wire_name()));
        }
    }
}
