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
