//! The demo's "compact" action: a compaction that passes the watch caches,
//! as etcd's periodic one does on a busy cluster.

use super::ControlPlane;
use crate::api_error::ApiError;
use crate::resource::EVENTS;
use crate::store::Revision;
use serde_json::json;

/// Namespace of the Event that marks a compaction.
const MARK_NAMESPACE: &str = "default";

impl ControlPlane {
    /// Compacts the store past every watch: an Event is written (a cluster's
    /// store always moves on: Leases, Events, status updates), and the store
    /// and every window are compacted up to it, past the Cachers' own
    /// watches of the store, which end as etcd cancels a watch behind a
    /// compaction (`ErrCompacted`). Each Cacher terminates its watchers and
    /// relists at the compacted revision; each watcher re-watches from its
    /// last resourceVersion, now older than the window: 410 Gone, and its
    /// Reflector lists again. Returns the revision compacted to.
    ///
    /// The demo's Cachers follow the store within microseconds, so the
    /// compaction is made to pass them rather than waited for; without the
    /// mark, a Reflector that a bookmark had brought up to the store's
    /// revision would re-watch from it, which no compaction up to it makes
    /// too old, and nothing would show.
    pub fn compact_past_watches(&self) -> Result<Revision, ApiError> {
        let mark = json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": format!("watchlife-compaction.{:x}", self.clock.now()),
                "namespace": MARK_NAMESPACE,
            },
            "involvedObject": {"kind": "Namespace", "name": MARK_NAMESPACE, "apiVersion": "v1"},
            "reason": "Compacted",
            "message": "the demo compacted the store's history up to this revision",
            "count": 1,
            "type": "Normal",
        });
        self.create(EVENTS, mark)?;
        let now = self.clock.now();
        let mut state = self.lock();
        let revision = state.store.revision();
        state.compact_all(revision);
        for cacher in &mut state.cachers {
            cacher.end_list_and_watch(now);
            cacher.drop_watchers();
        }
        // Wakes the Cachers' Reflectors, to relist.
        state.revisions.send_modify(|_| {});
        Ok(revision)
    }
}
