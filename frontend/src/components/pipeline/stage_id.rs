//! A stage's name where the page's code and stylesheet select it.

use watchlife_protocol::Stage;

/// The stage name used in selectors (`watch_cache`).
pub fn stage_id(stage: Stage) -> &'static str {
    match stage {
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
