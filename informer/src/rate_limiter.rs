//! How long a key waits before it is retried after a failed reconcile:
//! client-go's `DefaultControllerRateLimiter`, the larger of a per-item
//! exponential delay and an overall token bucket.

use crate::Micros;
use std::collections::HashMap;
use std::time::Duration;

/// First retry delay of a key: client-go's per-item limiter starts at 5 ms.
pub const ITEM_BASE: Duration = Duration::from_millis(5);

/// Longest per-item delay in client-go's default limiter.
pub const ITEM_MAX: Duration = Duration::from_secs(1000);

/// The overall bucket refills at 10 tokens a second…
pub const BUCKET_PER_SECOND: f64 = 10.0;

/// …and holds at most 100, so a burst of 100 retries goes at once.
pub const BUCKET_BURST: f64 = 100.0;

/// Per-item exponential backoff and an overall token bucket; a retry waits
/// for the longer of the two.
#[derive(Debug, Clone)]
pub struct RateLimiter {
    base: Duration,
    max: Duration,
    failures: HashMap<String, u32>,
    tokens: f64,
    /// When the bucket was last brought up to date.
    refilled_at: Option<Micros>,
}

impl Default for RateLimiter {
    /// client-go's `DefaultControllerRateLimiter`.
    fn default() -> Self {
        RateLimiter::new(ITEM_BASE, ITEM_MAX)
    }
}

impl RateLimiter {
    /// A per-item limiter from `base` doubling to `max`, with client-go's bucket.
    pub fn new(base: Duration, max: Duration) -> Self {
        RateLimiter {
            base,
            max,
            failures: HashMap::new(),
            tokens: BUCKET_BURST,
            refilled_at: None,
        }
    }

    /// The delay before `key` is retried, counting this failure.
    pub fn when(&mut self, key: &str, now: Micros) -> Duration {
        let failures = self.failures.entry(key.to_string()).or_insert(0);
        let exponent = *failures;
        *failures = failures.saturating_add(1);
        let item = 2u32
            .checked_pow(exponent)
            .and_then(|factor| self.base.checked_mul(factor))
            .map_or(self.max, |d| d.min(self.max));
        item.max(self.bucket_delay(now))
    }

    /// Failures counted for `key` since it was last forgotten.
    pub fn requeues(&self, key: &str) -> u32 {
        self.failures.get(key).copied().unwrap_or(0)
    }

    /// `key` succeeded: its next failure starts again at the base delay.
    pub fn forget(&mut self, key: &str) {
        self.failures.remove(key);
    }

    /// Takes a token, waiting for one if the bucket is empty (a reservation,
    /// as `rate.Limiter.Reserve` makes: the tokens may go negative).
    fn bucket_delay(&mut self, now: Micros) -> Duration {
        if let Some(then) = self.refilled_at {
            let elapsed = now.saturating_sub(then) as f64 / 1e6;
            self.tokens = (self.tokens + elapsed * BUCKET_PER_SECOND).min(BUCKET_BURST);
        }
        self.refilled_at = Some(now);
        self.tokens -= 1.0;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / BUCKET_PER_SECOND)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_item_delays_double_from_5ms_to_1000s_and_reset_when_forgotten() {
        let mut r = RateLimiter::default();
        let ms: Vec<_> = (0..4)
            .map(|i| r.when("a", i * 1_000_000).as_millis())
            .collect();
        assert_eq!(ms, vec![5, 10, 20, 40]);
        assert_eq!(r.requeues("a"), 4);
        assert_eq!(r.when("b", 5_000_000).as_millis(), 5, "per item");
        for i in 0..40 {
            r.when("a", (10 + i) * 1_000_000);
        }
        assert_eq!(r.when("a", 100_000_000), ITEM_MAX);
        r.forget("a");
        assert_eq!(r.when("a", 200_000_000).as_millis(), 5);
    }

    #[test]
    fn the_bucket_lets_a_burst_of_100_through_then_ten_a_second() {
        let mut r = RateLimiter::default();
        for i in 0..100 {
            assert_eq!(r.when(&format!("k{i}"), 0).as_millis(), 5);
        }
        assert_eq!(r.when("k100", 0).as_millis(), 100);
        assert_eq!(r.when("k101", 0).as_millis(), 200);
        // A second later ten tokens came back, two of them owed already.
        for i in 0..8 {
            assert_eq!(r.when(&format!("j{i}"), 1_000_000).as_millis(), 5);
        }
        assert_eq!(r.when("j8", 1_000_000).as_millis(), 100);
    }
}
