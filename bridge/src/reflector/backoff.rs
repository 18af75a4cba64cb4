//! How long the Reflector waits after a failed request: client-go's
//! schedule, so the UI shows what a real controller would do.
//!
//! Written out (a dozen lines) rather than taken from a backoff crate: the
//! schedule itself — its start, its cap, its jitter and when it resets — is
//! part of what watchlife shows, and must match client-go's exactly.

use rand::Rng;
use std::time::Duration;

/// First delay after a failure: client-go's reflector starts at 800 ms.
pub const INITIAL: Duration = Duration::from_millis(800);

/// Longest base delay: client-go caps the reflector's backoff at 30 s.
pub const CAP: Duration = Duration::from_secs(30);

/// Each failure in a row doubles the base delay.
pub const FACTOR: u32 = 2;

/// After this long without a failure, the next failure starts again at
/// [`INITIAL`]: client-go resets after two minutes of health.
pub const RESET_AFTER: Duration = Duration::from_secs(120);

/// An exponential backoff with full jitter on top: each delay is the base
/// delay plus a random fraction (up to 100%) of it, so many clients that
/// failed together do not come back together. Delays therefore lie in
/// `[base, 2 × base)`: from 0.8–1.6 s up to 30–60 s.
#[derive(Debug, Clone)]
pub struct Backoff {
    base: Duration,
    last_failure: Option<std::time::Instant>,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base: INITIAL,
            last_failure: None,
        }
    }
}

impl Backoff {
    /// The delay before the next try, after a failure now.
    pub fn next_delay(&mut self) -> Duration {
        self.next_delay_at(std::time::Instant::now(), rand::rng().random())
    }

    /// [`Backoff::next_delay`] with the time and the jitter (in `[0, 1)`) given.
    pub fn next_delay_at(&mut self, now: std::time::Instant, jitter: f64) -> Duration {
        if self
            .last_failure
            .is_some_and(|t| now.duration_since(t) >= RESET_AFTER)
        {
            self.base = INITIAL;
        }
        self.last_failure = Some(now);
        let base = self.base;
        self.base = (self.base * FACTOR).min(CAP);
        base + base.mul_f64(jitter.clamp(0.0, 1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn doubles_from_800ms_to_the_cap() {
        let mut b = Backoff::default();
        let now = Instant::now();
        let delays: Vec<_> = (0..8).map(|_| b.next_delay_at(now, 0.0)).collect();
        let ms: Vec<_> = delays.iter().map(|d| d.as_millis()).collect();
        assert_eq!(ms, vec![800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]);
    }

    #[test]
    fn jitter_adds_up_to_the_base_delay() {
        let mut b = Backoff::default();
        assert_eq!(b.next_delay_at(Instant::now(), 0.5).as_millis(), 1200);
    }

    #[test]
    fn resets_after_a_healthy_period() {
        let mut b = Backoff::default();
        let start = Instant::now();
        for _ in 0..5 {
            b.next_delay_at(start, 0.0);
        }
        let later = start + RESET_AFTER;
        assert_eq!(b.next_delay_at(later, 0.0), INITIAL);
    }
}
