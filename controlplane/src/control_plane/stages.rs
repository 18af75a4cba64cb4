//! What a viewer may ask about the control plane's own progress.

use super::ControlPlane;
use crate::ledger::StageRecord;
use crate::store::Revision;
use tokio::sync::watch;

impl ControlPlane {
    /// The server-side stage times of the change at `revision` (commit, watch
    /// cache, dispatch), while the ledger remembers it
    /// ([`crate::ledger::LEDGER_CAPACITY`] changes). A client that received
    /// an event over HTTP matches it by its `resourceVersion`.
    pub fn stage_times(&self, revision: Revision) -> Option<StageRecord> {
        self.lock().ledger.get(revision).cloned()
    }

    /// A receiver of the latest revision, marked changed after every write.
    ///
    /// Lets a driver of the controllers sleep until either its next deadline
    /// or a change made by someone else, whichever comes first, without
    /// polling. Sending needs no runtime, so the core stays IO-free.
    pub fn revisions(&self) -> watch::Receiver<Revision> {
        self.lock().revisions.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use crate::clock::Clock;
    use crate::control_plane::ControlPlane;
    use crate::resource::{CONFIGMAPS, PODS};
    use serde_json::json;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn stage_times_are_found_by_resource_version_and_revisions_announce_writes() {
        let tick = Arc::new(AtomicU64::new(100));
        let t = tick.clone();
        let cp = ControlPlane::new(Clock::new(move || t.fetch_add(1, Ordering::SeqCst)));
        let mut revisions = cp.revisions();
        let _watcher = cp.watch_named("bridge", PODS, None, None).unwrap();
        let pod = cp.create(PODS, json!({"metadata": {"name": "p"}})).unwrap();
        cp.create(CONFIGMAPS, json!({"metadata": {"name": "c"}}))
            .unwrap();
        assert!(revisions.has_changed().unwrap());
        assert_eq!(*revisions.borrow_and_update(), cp.revision());
        let rv: u64 = pod["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let stages = cp.stage_times(rv).unwrap();
        assert_eq!(stages.resource, PODS);
        assert_eq!(stages.delivered, 1);
        assert!(stages.committed_at <= stages.cached_at);
        assert!(stages.cached_at <= stages.dispatched_at);
        assert!(cp.stage_times(cp.revision() + 1).is_none());
    }
}
