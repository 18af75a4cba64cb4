//! How long the dispatcher may block on watchers that cannot keep up: the
//! apiserver's `dispatchTimeoutBudget` (`time_budget.go`), read from the
//! clock instead of refreshed by a ticker, so it stays IO-free.

use watchlife_protocol::Micros;

/// Budget added every second: `refreshPerSecond` (50 ms).
pub const REFRESH_PER_SECOND: Micros = 50_000;

/// The most the budget holds: `maxBudget` (100 ms). A dispatcher blocked on
/// slow watchers waits at most this long in a row, however long it was idle.
pub const MAX_BUDGET: Micros = 100_000;

/// The refresh period of the budget: its ticker's one second.
const REFRESH_PERIOD: Micros = 1_000_000;

/// A budget of blocking time, refilled [`REFRESH_PER_SECOND`] every second
/// up to [`MAX_BUDGET`]; like the apiserver's, it starts empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeBudget {
    budget: Micros,
    /// The time of the last refresh tick counted.
    ticked_at: Micros,
}

impl TimeBudget {
    /// An empty budget whose ticker starts at `now`.
    pub fn new(now: Micros) -> Self {
        TimeBudget {
            budget: 0,
            ticked_at: now,
        }
    }

    /// Takes all that is available now (`takeAvailable`).
    pub fn take_available(&mut self, now: Micros) -> Micros {
        self.refresh(now);
        std::mem::take(&mut self.budget)
    }

    /// Gives back what a blocked dispatch did not use (`returnUnused`).
    pub fn return_unused(&mut self, unused: Micros, now: Micros) {
        self.refresh(now);
        self.budget = (self.budget + unused).min(MAX_BUDGET);
    }

    /// What is available now, without taking it.
    pub fn available(&mut self, now: Micros) -> Micros {
        self.refresh(now);
        self.budget
    }

    fn refresh(&mut self, now: Micros) {
        let ticks = now.saturating_sub(self.ticked_at) / REFRESH_PERIOD;
        if ticks > 0 {
            self.ticked_at += ticks * REFRESH_PERIOD;
            self.budget = self
                .budget
                .saturating_add(ticks.saturating_mul(REFRESH_PER_SECOND))
                .min(MAX_BUDGET);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_empty_refills_each_second_and_caps() {
        let mut b = TimeBudget::new(0);
        assert_eq!(b.take_available(999_999), 0);
        assert_eq!(b.take_available(1_000_000), REFRESH_PER_SECOND);
        assert_eq!(
            b.take_available(1_500_000),
            0,
            "taken: empty until the next tick"
        );
        assert_eq!(b.available(10_000_000), MAX_BUDGET);
        let taken = b.take_available(10_000_000);
        b.return_unused(taken - 30_000, 10_000_000);
        assert_eq!(b.available(10_000_000), MAX_BUDGET - 30_000);
        b.return_unused(MAX_BUDGET, 10_000_000);
        assert_eq!(b.available(10_000_000), MAX_BUDGET);
    }
}
