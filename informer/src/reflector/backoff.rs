//! How long the Reflector waits after a failed list-watch cycle: client-go's
//! `wait.NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0)`, which both
//! its `backoffManager` and its `initConnBackoffManager` use.
//!
//! Written out (a dozen lines) rather than taken from a backoff crate: the
//! schedule itself — its start, its cap, its jitter and when it resets — is
//! part of what watchlife shows, and must match client-go's exactly. The
//! caller gives the time and the jitter, so the schedule is testable and runs
//! in a page as well as in the bridge.

use crate::Micros;
use std::time::Duration;

/// First delay: client-go's reflector starts at 800 ms.
pub const INITIAL: Duration = Duration::from_millis(800);

/// Longest base delay: client-go caps the reflector's backoff at 30 s.
pub const CAP: Duration = Duration::from_secs(30);

/// Each backoff in a row doubles the base delay.
pub const FACTOR: u32 = 2;

/// When the last backoff started longer ago than this, the next one starts
/// again at [`INITIAL`]: client-go assumes the apiserver healthy after two
/// minutes without a backoff.
pub const RESET_AFTER: Duration = Duration::from_secs(120);

/// An exponential backoff with jitter: each delay is the base delay plus a
/// random fraction (up to 100%) of it, so that many clients that failed
/// together do not come back together. Delays lie in `[base, 2 × base)`:
/// from 0.8–1.6 s up to 30–60 s.
#[derive(Debug, Clone)]
pub struct Backoff {
    /// The base of the next delay; `None` until the first one (client-go's
    /// manager starts "reset": its last backoff began at the zero time).
    base: Option<Duration>,
    last_start: Option<Micros>,
    /// The longest base delay: [`CAP`] unless [`Backoff::capped`].
    cap: Duration,
}

impl Default for Backoff {
    /// client-go's schedule.
    fn default() -> Self {
        Backoff::capped(CAP)
    }
}

impl Backoff {
    /// client-go's schedule with base delays up to `cap` (at least
    /// [`INITIAL`]) instead of [`CAP`].
    pub fn capped(cap: Duration) -> Self {
        Backoff {
            base: None,
            last_start: None,
            cap: cap.max(INITIAL),
        }
    }

    /// The delay of a backoff starting at `now`, with `jitter` in `[0, 1)`.
    pub fn next_delay(&mut self, now: Micros, jitter: f64) -> Duration {
        let healthy = self
            .last_start
            .is_none_or(|t| now.saturating_sub(t) > RESET_AFTER.as_micros() as u64);
        if healthy {
            self.base = Some(INITIAL);
        }
        self.last_start = Some(now);
        let base = self.base.unwrap_or(INITIAL);
        self.base = Some((base * FACTOR).min(self.cap));
        base + base.mul_f64(jitter.clamp(0.0, 1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Micros = 1_000_000;

    #[test]
    fn doubles_from_800ms_to_the_cap() {
        let mut b = Backoff::default();
        let ms: Vec<_> = (0..8)
            .map(|i| b.next_delay(i * SECOND, 0.0).as_millis())
            .collect();
        assert_eq!(ms, vec![800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]);
    }

    #[test]
    fn a_lower_cap_stops_the_doubling_sooner() {
        let mut b = Backoff::capped(Duration::from_secs(2));
        let ms: Vec<_> = (0..4)
            .map(|i| b.next_delay(i * SECOND, 0.0).as_millis())
            .collect();
        assert_eq!(ms, vec![800, 1600, 2000, 2000]);
    }

    #[test]
    fn jitter_adds_up_to_the_base_delay() {
        let mut b = Backoff::default();
        assert_eq!(b.next_delay(0, 0.5).as_millis(), 1200);
        assert_eq!(b.next_delay(SECOND, 0.999).as_millis(), 3198);
    }

    #[test]
    fn resets_only_after_two_minutes_without_a_backoff() {
        let mut b = Backoff::default();
        for i in 0..5 {
            b.next_delay(i * SECOND, 0.0);
        }
        // Exactly two minutes after the last start is not yet "longer than".
        let at_the_limit = 4 * SECOND + RESET_AFTER.as_micros() as u64;
        assert_eq!(b.next_delay(at_the_limit, 0.0).as_millis(), 25600);
        let later = at_the_limit + RESET_AFTER.as_micros() as u64 + 1;
        assert_eq!(b.next_delay(later, 0.0), INITIAL);
    }
}
