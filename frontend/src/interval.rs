//! The time between two stage marks, said as it was measured.
//!
//! Stage marks are clock reads taken at different places (etcd's watch, the
//! apiserver, the Reflector, the informer's tasks). Their order is the order
//! in which the reads happened, which is not always the pipeline's: a later
//! stage's read may come first. Such an interval is negative and is shown
//! with its sign and the reason, never clamped to zero.

use crate::micros::format_micros;
use watchlife_protocol::{Micros, Stage};

/// `to − from` in µs, negative when `to` was read before `from`.
pub fn interval(from: Micros, to: Micros) -> i64 {
    // Two's complement: exact for any two marks less than 2⁶³ µs apart.
    to.wrapping_sub(from) as i64
}

/// Why an interval ending at a stage after `from` is negative: on a cluster
/// (`etcd_notifies`, see [`crate::narration::etcd_notifies`]) the etcd mark
/// is when etcd's watch told watchlife of the write, which may come after
/// the apiserver's watch delivered it; elsewhere, the later stage's clock
/// read simply came first.
pub fn negative_reason(from: Stage, etcd_notifies: bool) -> &'static str {
    if from == Stage::Etcd && etcd_notifies {
        "etcd's watch heard of it after the apiserver's watch did"
    } else {
        "the later stage's clock read came first"
    }
}

/// An interval from a mark of stage `from` to a later one, in words:
/// `+12 µs`, `−120 µs (the later stage's clock read came first)`, or, for
/// two equal marks, `±0 (same instant: both read at once)`.
pub fn describe(from: Stage, us: i64, etcd_notifies: bool) -> String {
    match us {
        0 => "±0 (same instant: both read at once)".into(),
        us if us < 0 => format!(
            "{} ({})",
            format_micros(us),
            negative_reason(from, etcd_notifies)
        ),
        us => format!("+{}", format_micros(us)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_keeps_its_sign() {
        assert_eq!(interval(1_000, 1_120), 120);
        assert_eq!(interval(1_120, 1_000), -120);
        assert_eq!(
            interval(u64::MAX - 5, 4),
            10,
            "across the wrap, still exact"
        );
    }

    #[test]
    fn a_negative_interval_says_why() {
        assert_eq!(
            describe(Stage::Etcd, -120, true),
            "−120 µs (etcd's watch heard of it after the apiserver's watch did)"
        );
        assert_eq!(
            describe(Stage::Etcd, -120, false),
            "−120 µs (the later stage's clock read came first)"
        );
        assert_eq!(
            describe(Stage::Indexer, -2_500, true),
            "−2.50 ms (the later stage's clock read came first)"
        );
    }

    #[test]
    fn equal_marks_and_positive_intervals() {
        assert_eq!(
            describe(Stage::Fifo, 0, false),
            "±0 (same instant: both read at once)"
        );
        assert_eq!(describe(Stage::Fifo, 12, false), "+12 µs");
        assert_eq!(describe(Stage::Fifo, 1_400_000, false), "+1.4 s");
    }
}
