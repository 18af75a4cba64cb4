//! Whether a Cacher may serve: its `ready` condition.
//!
//! A Cacher is ready once its Reflector's LIST has replaced the watch
//! cache's contents, and stops being ready when its ListAndWatch ends (the
//! store's watch failed): until the next LIST, the cache is behind the
//! store and nothing may be served from it. A new watch or a LIST from the
//! cache then waits (v1.20, `ready.wait()`) or is refused with 429
//! (v0.36 with `ResilientWatchCacheInitialization`).

use watchlife_protocol::Micros;

/// How long the Cacher waits between the end of one ListAndWatch and the
/// next: `wait.Until(startCaching, time.Second, ...)` in `cacher.go`
/// (`NewCacherFromConfig`, v1.20.2 and v0.36.4 alike). The Cacher calls
/// `ListAndWatch` itself, so client-go's backoff between cycles does not
/// apply.
pub const RELIST_PERIOD: Micros = 1_000_000;

/// What the apiserver says while the cache is (re)initializing
/// (`ready.readGenerationLocked`, `ready.go`, v0.36.4).
pub const NOT_READY_MESSAGE: &str = "storage is (re)initializing";

/// The longest `Retry-After` a not-ready Cacher suggests, in seconds
/// (`calculateRetryAfterForUnreadyCache`, `util.go`, v0.36.4).
pub const MAX_RETRY_AFTER_SECONDS: u64 = 30;

/// The `Retry-After` (seconds) of a 429 from a Cacher that has not been
/// ready for `downtime`: `exp(0.06 × seconds)` bounded to 1..=30 and
/// truncated, as `calculateRetryAfterForUnreadyCache` (`util.go`, v0.36.4)
/// computes it. It grows with the downtime, so that clients back off from a
/// cache that stays down.
pub fn retry_after_seconds(downtime: Micros) -> u64 {
    const FACTOR: f64 = 0.06;
    let seconds = downtime as f64 / 1_000_000.0;
    (FACTOR * seconds)
        .exp()
        .clamp(1.0, MAX_RETRY_AFTER_SECONDS as f64) as u64
}

/// The `ready` condition and when it last changed (`ready.go`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ready {
    ready: bool,
    changed_at: Micros,
}

impl Ready {
    /// Not ready yet: a Cacher starts pending until its first LIST.
    pub fn pending(now: Micros) -> Self {
        Ready {
            ready: false,
            changed_at: now,
        }
    }

    /// Sets the condition; the time of change moves only when it flips
    /// (`ready.set`).
    pub fn set(&mut self, ready: bool, now: Micros) {
        if self.ready != ready {
            self.ready = ready;
            self.changed_at = now;
        }
    }

    pub fn is_ready(&self) -> bool {
        self.ready
    }

    /// `Ok` when ready, else how long it has not been (`ready.check`).
    pub fn check(&self, now: Micros) -> Result<(), Micros> {
        if self.ready {
            Ok(())
        } else {
            Err(now.saturating_sub(self.changed_at))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_grows_with_the_downtime_within_one_and_thirty_seconds() {
        assert_eq!(retry_after_seconds(0), 1);
        assert_eq!(retry_after_seconds(11_000_000), 1, "exp(0.66) = 1.93");
        assert_eq!(retry_after_seconds(12_000_000), 2, "exp(0.72) = 2.05");
        assert_eq!(retry_after_seconds(60_000_000), 30, "exp(3.6) = 36.6");
        assert_eq!(retry_after_seconds(3_600_000_000), 30);
    }

    #[test]
    fn the_time_of_change_moves_only_when_the_condition_flips() {
        let mut r = Ready::pending(5);
        assert_eq!(r.check(9), Err(4));
        r.set(false, 7);
        assert_eq!(r.check(9), Err(4));
        r.set(true, 8);
        assert_eq!(r.check(9), Ok(()));
        r.set(false, 10);
        assert_eq!(r.check(15), Err(5));
    }
}
