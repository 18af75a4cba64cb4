//! Test-only faults, for proving that the chaos tests' invariants can fail.
//!
//! `WATCHLIFE_TEST_BREAK` is read once, at startup; unset (as it always is
//! in use), nothing changes. Each value breaks one promise on purpose:
//!
//! - `drop-event`: the hub numbers the 50th event frame but never sends it
//!   (nor keeps it for resuming viewers): a silent gap in `seq`.
//! - `skip-backoff`: the Reflector driver does not wait between list-watch
//!   cycles (client-go always backs off at least 0.8 s).
//! - `skip-resync`: a viewer that must be resynced gets the snapshot without
//!   the `resync` frame that announces it.
//! - `trust-silent-watch`: a watch that says nothing is never taken for
//!   dead (a connection a load balancer forgot is read forever).
//! - `token-read-once`: a token file is read once, at start, and its token
//!   sent for ever, however often the apiserver answers 401.
//! - `vague-failures`: a failed list-watch is told to viewers without its
//!   cause ("list-watch failed"), so the page cannot say what to do.
//!
//! Never set it outside tests: the bridge then loses events or hammers the
//! apiserver by design. It is logged at WARN when set.
//!
//! Only a binary built with the `test-break` feature reads the variable
//! (`make test`'s debug build, or `make test-break`, for the chaos tests);
//! the one that ships does not, and holds neither the variable's name nor
//! the faults' (a test of the release binary checks). Without the feature
//! [`is`] is always `false`, so the compiler drops every fault.

/// One test-only fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Break {
    DropEvent,
    SkipBackoff,
    SkipResync,
    TrustSilentWatch,
    TokenReadOnce,
    VagueFailures,
}

/// The event frame (counting from 1) that `drop-event` drops.
pub const DROPPED_EVENT: u64 = 50;

/// The fault `WATCHLIFE_TEST_BREAK` asks for, if any (read once).
#[cfg(feature = "test-break")]
pub fn active() -> Option<Break> {
    use std::sync::OnceLock;
    static ACTIVE: OnceLock<Option<Break>> = OnceLock::new();
    *ACTIVE.get_or_init(|| {
        let value = std::env::var("WATCHLIFE_TEST_BREAK").ok()?;
        match value.as_str() {
            "drop-event" => Some(Break::DropEvent),
            "skip-backoff" => Some(Break::SkipBackoff),
            "skip-resync" => Some(Break::SkipResync),
            "trust-silent-watch" => Some(Break::TrustSilentWatch),
            "token-read-once" => Some(Break::TokenReadOnce),
            "vague-failures" => Some(Break::VagueFailures),
            "" => None,
            other => {
                tracing::warn!("WATCHLIFE_TEST_BREAK={other} is not a known test fault; ignored");
                None
            }
        }
    })
}

/// No fault: this binary was built without the `test-break` feature.
#[cfg(not(feature = "test-break"))]
#[inline(always)]
pub fn active() -> Option<Break> {
    None
}

/// Whether `fault` is on.
#[inline(always)]
pub fn is(fault: Break) -> bool {
    active() == Some(fault)
}

/// Reads the variable and says so at WARN when a fault is on.
#[cfg(feature = "test-break")]
pub fn announce() {
    if let Some(fault) = active() {
        tracing::warn!(
            "WATCHLIFE_TEST_BREAK: test-only fault {fault:?} is ON; this bridge is broken on purpose"
        );
    }
}

/// Nothing to announce: this binary was built without the `test-break`
/// feature.
#[cfg(not(feature = "test-break"))]
pub fn announce() {}
