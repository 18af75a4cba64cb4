//! A duration in µs as the page writes it, rounded to the clock the marks
//! were read from.

thread_local! {
    /// The smallest step of the clock the marks were read from, in µs.
    static CLOCK_TICK: std::cell::Cell<u64> = const { std::cell::Cell::new(1) };
}

/// Tells [`format_micros`] the step of the clock the marks come from: a
/// browser rounds its clock (often to 100 µs), and a shorter interval then
/// reads as `< 100 µs (clock tick)` rather than as a measured zero.
pub fn set_clock_tick(us: u64) {
    CLOCK_TICK.with(|t| t.set(us.max(1)));
}

/// A duration in µs, in the unit that reads best (`12 µs`, `0.21 ms`,
/// `1.4 s`), with its sign when negative (`−120 µs`). Marks are whole µs,
/// so 0 means under one: `< 1 µs`; with a coarser clock (see
/// [`set_clock_tick`]), anything under its tick says so.
pub fn format_micros(us: i64) -> String {
    let tick = CLOCK_TICK.with(|t| t.get());
    if tick > 1 && us.unsigned_abs() < tick {
        return format!("< {} (clock tick)", format_micros_unsigned(tick));
    }
    if us < 0 {
        return format!("−{}", format_micros_unsigned(us.unsigned_abs()));
    }
    format_micros_unsigned(us.unsigned_abs())
}

fn format_micros_unsigned(us: u64) -> String {
    if us == 0 {
        "< 1 µs".into()
    } else if us < 1_000 {
        format!("{us} µs")
    } else if us < 1_000_000 {
        let ms = us as f64 / 1000.0;
        if ms < 10.0 {
            format!("{ms:.2} ms")
        } else {
            format!("{ms:.0} ms")
        }
    } else {
        format!("{:.1} s", us as f64 / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duration_keeps_its_sign_and_zero_reads_under_a_microsecond() {
        assert_eq!(format_micros(0), "< 1 µs");
        assert_eq!(format_micros(-120), "−120 µs");
        assert_eq!(format_micros(-1_400), "−1.40 ms");
        assert_eq!(format_micros(-25_000), "−25 ms");
        assert_eq!(format_micros(-3_200_000), "−3.2 s");
        assert_eq!(format_micros(i64::MIN).chars().next(), Some('−'));
        set_clock_tick(100);
        assert_eq!(format_micros(40), "< 100 µs (clock tick)");
        assert_eq!(format_micros(0), "< 100 µs (clock tick)");
        assert_eq!(format_micros(250), "250 µs");
        set_clock_tick(1);
    }
}
