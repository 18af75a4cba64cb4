//! What a tap has recorded, sent and dropped: counted by the controller's
//! side as it records, read by the sending task for its `stats` frames.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters shared with the sending task.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) seq: AtomicU64,
    pub(crate) recorded: AtomicU64,
    pub(crate) dropped: AtomicU64,
}

impl Counters {
    /// The next sequence number (from 1).
    pub(crate) fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed) + 1
    }
}
