//! The bridge's library API, as far as the bench uses it: the one file that
//! names the `watchlife` crate. Every other section drives the bridge as a
//! user does, through the `watchlife` binary and its HTTP and WebSocket
//! endpoints; the in-process sections ([`crate::pipeline`],
//! [`crate::informer`]) measure the bridge's own informer pipeline and hub,
//! which only the library exposes.

use std::time::Duration;

pub use watchlife::downstream::hub::{Bodies, Hub};
pub use watchlife::upstream::pipeline::{Pipeline, SlowListener};
pub use watchlife::upstream::redact::{Received, redact_text};

/// Worker threads of the runtime the bridge runs its sources and informers
/// on, apart from the viewers' connections.
pub const UPSTREAM_THREADS: usize = watchlife::upstream::runtime::THREADS;

/// How the bridge paces the writes to viewers that take batches, as its
/// `viewer` module sets it.
pub struct ViewerPacing {
    /// Most WebSocket messages a second to all viewers together.
    pub writes_per_second: u32,
    /// The pause between two writes to one viewer, for the crowd described.
    pub interval: Duration,
    /// The longest pause, however many viewers.
    pub max_interval: Duration,
}

impl ViewerPacing {
    /// The pacing with `viewers` connected.
    pub fn describe(viewers: usize) -> ViewerPacing {
        use watchlife::downstream::viewer::{
            MAX_BATCH_INTERVAL, WRITES_PER_SECOND, batch_interval,
        };
        ViewerPacing {
            writes_per_second: WRITES_PER_SECOND,
            interval: batch_interval(viewers),
            max_interval: MAX_BATCH_INTERVAL,
        }
    }
}
