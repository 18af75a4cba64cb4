//! How many messages a viewer (or a tap) may send: a token bucket per
//! connection, and the count of what it turned away, so that a person
//! clicking fast is slowed down (told `rate_limited`) while a client that
//! goes on flooding is closed.

use std::time::Duration;
use tokio::time::Instant;

/// Messages a viewer may send per second, on average. The app sends one
/// message per filter change or demo action: a person clicking as fast as
/// they can makes a few a second.
pub const MESSAGES_PER_SECOND: f64 = 10.0;

/// Messages a viewer may send at once before the rate applies: a page that
/// restores a view sends a handful together.
pub const MESSAGE_BURST: f64 = 20.0;

/// A viewer's messages over the rate the bridge forgives, minus what it forgave at
/// [`MESSAGES_PER_SECOND`], before it closes the connection: a client that
/// goes on sending after being told `rate_limited` is a flood, not a person.
pub const FLOOD_LIMIT: f64 = 100.0;

/// At most one `rate_limited` error frame this often: answering every message
/// of a flood would make the bridge flood back.
pub const RATE_ERROR_EVERY: Duration = Duration::from_secs(1);

/// A bucket's size and refill: how many messages at once, how many a
/// second, and how many over the rate make a flood.
#[derive(Debug, Clone, Copy)]
pub struct Rate {
    pub per_second: f64,
    pub burst: f64,
    pub flood: f64,
}

/// A viewer's rate: [`MESSAGES_PER_SECOND`], [`MESSAGE_BURST`], [`FLOOD_LIMIT`].
pub const VIEWER_RATE: Rate = Rate {
    per_second: MESSAGES_PER_SECOND,
    burst: MESSAGE_BURST,
    flood: FLOOD_LIMIT,
};

/// The per-connection token bucket, and the count of messages it turned away.
pub struct RateLimiter {
    rate: Rate,
    tokens: f64,
    /// Messages turned away, forgiven at [`MESSAGES_PER_SECOND`].
    excess: f64,
    at: Instant,
    last_told: Option<Instant>,
}

pub enum Admit {
    Yes,
    /// Over the rate: drop it; `tell` when an error frame is due.
    No {
        tell: bool,
    },
    /// A sustained flood: close.
    Flood,
}

impl RateLimiter {
    /// A viewer's bucket ([`VIEWER_RATE`]).
    pub fn new(now: Instant) -> Self {
        RateLimiter::at_rate(VIEWER_RATE, now)
    }

    /// A full bucket of `rate`.
    pub fn at_rate(rate: Rate, now: Instant) -> Self {
        RateLimiter {
            rate,
            tokens: rate.burst,
            excess: 0.0,
            at: now,
            last_told: None,
        }
    }

    pub fn admit(&mut self, now: Instant) -> Admit {
        let refill = now.duration_since(self.at).as_secs_f64() * self.rate.per_second;
        self.at = now;
        self.tokens = (self.tokens + refill).min(self.rate.burst);
        self.excess = (self.excess - refill).max(0.0);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Admit::Yes;
        }
        self.excess += 1.0;
        if self.excess > self.rate.flood {
            return Admit::Flood;
        }
        let tell = self
            .last_told
            .is_none_or(|t| now.duration_since(t) >= RATE_ERROR_EVERY);
        if tell {
            self.last_told = Some(now);
        }
        Admit::No { tell }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_allows_a_burst_then_the_rate_then_calls_a_flood() {
        let start = Instant::now();
        let mut limiter = RateLimiter::new(start);
        for _ in 0..MESSAGE_BURST as usize {
            assert!(matches!(limiter.admit(start), Admit::Yes));
        }
        assert!(matches!(limiter.admit(start), Admit::No { tell: true }));
        assert!(matches!(limiter.admit(start), Admit::No { tell: false }));
        // A tenth of a second later, one more message is allowed.
        let later = start + Duration::from_millis(100);
        assert!(matches!(limiter.admit(later), Admit::Yes));
        // Going on at once is a flood.
        let mut outcome = Admit::Yes;
        for _ in 0..FLOOD_LIMIT as usize + 1 {
            outcome = limiter.admit(later);
            if matches!(outcome, Admit::Flood) {
                break;
            }
        }
        assert!(matches!(outcome, Admit::Flood));
    }

    #[test]
    fn sending_at_the_rate_is_never_a_flood() {
        let start = Instant::now();
        let mut limiter = RateLimiter::new(start);
        let step = Duration::from_secs_f64(1.0 / MESSAGES_PER_SECOND);
        for i in 0..10_000u32 {
            assert!(matches!(limiter.admit(start + step * i), Admit::Yes));
        }
    }
}
