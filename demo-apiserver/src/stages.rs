//! The control plane's server-side stages as tokio tasks.

use std::time::Duration;
use watchlife_controlplane::control_plane::stages::Sleeper;
use watchlife_controlplane::limits::Limits;
use watchlife_controlplane::resource;
use watchlife_controlplane::{Clock, ControlPlane, Profile};

/// tokio's timer.
#[derive(Debug, Clone, Copy)]
pub struct TokioSleeper;

impl Sleeper for TokioSleeper {
    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> {
        tokio::time::sleep(duration)
    }
}

/// A staged control plane on the system clock within `limits`, bookmarks
/// every `bookmark_frequency` µs, its stages running on the current tokio
/// runtime: two tasks per type (the Cacher's Reflector, the dispatcher).
///
/// Its server behaves as [`Profile::default()`] (1.36, every gate on).
pub fn start(limits: Limits, bookmark_frequency: u64) -> ControlPlane {
    start_with_profile(limits, bookmark_frequency, Profile::default())
}

/// [`start`] with a server that behaves as `profile` (the Kubernetes
/// release and feature gates a speaker chose): the demo API reads it from
/// the control plane ([`ControlPlane::profile`]).
pub fn start_with_profile(
    limits: Limits,
    bookmark_frequency: u64,
    profile: Profile,
) -> ControlPlane {
    let cp =
        ControlPlane::staged_with_profile(Clock::system(), limits, bookmark_frequency, profile);
    for rt in resource::ALL {
        tokio::spawn(cp.reflector_task(rt, TokioSleeper));
        tokio::spawn(cp.dispatcher_task(rt, TokioSleeper));
    }
    cp
}
