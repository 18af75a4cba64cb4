//! Percentiles of one run, and the spread of a figure over repeated runs.
//!
//! Latencies go into a [`Histogram`]: log-linear buckets (under 1% relative
//! error), shared by many tasks through atomic counters, so recording a
//! sample never allocates and never takes a lock. A figure measured once per
//! run becomes a [`Spread`]: its median over the runs, with the lowest and
//! highest beside it, because on a shared machine one run proves little.

use std::sync::atomic::{AtomicU64, Ordering};

/// Sub-buckets per power of two: 128 gives a bucket width under 0.8% of its value.
const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;
/// Values up to 2^40 (about 12 days in microseconds) are kept apart; larger ones share the last bucket.
const BUCKETS: usize = ((40 - SUB_BITS + 1) as usize + 1) * SUB as usize;

/// A histogram of non-negative integer samples (microseconds, mostly).
pub struct Histogram {
    counts: Vec<AtomicU64>,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

impl Histogram {
    pub fn new() -> Self {
        Histogram {
            counts: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Records one sample.
    pub fn record(&self, value: u64) {
        self.counts[bucket_of(value)].fetch_add(1, Ordering::Relaxed);
    }

    /// Samples recorded so far.
    pub fn count(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// The value below which a fraction `q` (0..=1) of the samples lie: the
    /// middle of the bucket holding the sample of that rank. `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c.load(Ordering::Relaxed);
            if seen >= rank {
                let (low, high) = bounds_of(i);
                return Some((low + high) as f64 / 2.0);
            }
        }
        None
    }

    /// [`Histogram::quantile`], or NaN when empty: a run's figure that
    /// [`Spread::push`] leaves out.
    pub fn quantile_or_nan(&self, q: f64) -> f64 {
        self.quantile(q).unwrap_or(f64::NAN)
    }

    /// The quantiles the report draws: p1, p25, p50, p75, p99, p99.9.
    pub fn shape(&self) -> Option<Shape> {
        Some(Shape {
            p1: self.quantile(0.01)?,
            p25: self.quantile(0.25)?,
            p50: self.quantile(0.50)?,
            p75: self.quantile(0.75)?,
            p99: self.quantile(0.99)?,
            p999: self.quantile(0.999)?,
            count: self.count(),
        })
    }

    /// Adds another histogram's samples to this one.
    pub fn merge(&self, other: &Histogram) {
        for (mine, theirs) in self.counts.iter().zip(&other.counts) {
            mine.fetch_add(theirs.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }
}

/// Where a distribution lies, as drawn by the plot.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub p1: f64,
    pub p25: f64,
    pub p50: f64,
    pub p75: f64,
    pub p99: f64,
    pub p999: f64,
    pub count: u64,
}

fn bucket_of(value: u64) -> usize {
    if value < SUB {
        return value as usize;
    }
    let exponent = 63 - value.leading_zeros(); // >= SUB_BITS
    let shift = exponent - SUB_BITS;
    let mantissa = (value >> shift) - SUB; // 0..SUB
    let index = (shift as u64 + 1) * SUB + mantissa;
    (index as usize).min(BUCKETS - 1)
}

/// The lowest and highest value a bucket holds.
fn bounds_of(index: usize) -> (u64, u64) {
    let index = index as u64;
    if index < SUB {
        return (index, index);
    }
    let shift = index / SUB - 1;
    let mantissa = index % SUB + SUB;
    (mantissa << shift, ((mantissa + 1) << shift) - 1)
}

/// One figure measured once per run.
#[derive(Debug, Clone, Default)]
pub struct Spread {
    pub runs: Vec<f64>,
}

impl Spread {
    pub fn push(&mut self, value: f64) {
        if value.is_finite() {
            self.runs.push(value);
        }
    }

    fn sorted(&self) -> Vec<f64> {
        let mut v = self.runs.clone();
        v.sort_by(f64::total_cmp);
        v
    }

    /// The median over runs (the mean of the middle two for an even count).
    pub fn median(&self) -> f64 {
        let v = self.sorted();
        match v.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        }
    }

    pub fn min(&self) -> f64 {
        self.sorted().first().copied().unwrap_or(f64::NAN)
    }

    pub fn max(&self) -> f64 {
        self.sorted().last().copied().unwrap_or(f64::NAN)
    }

    /// `median (min–max, n runs)`, each number formatted by `fmt`.
    pub fn show(&self, fmt: impl Fn(f64) -> String) -> String {
        match self.runs.len() {
            0 => "not measured".into(),
            1 => format!("{} (1 run)", fmt(self.median())),
            n => format!(
                "{} ({}–{}, {n} runs)",
                fmt(self.median()),
                fmt(self.min()),
                fmt(self.max())
            ),
        }
    }
}

/// The ratio of two figures run by run (`a[i] / b[i]`), so that a machine
/// busy during one run moves both sides together.
pub fn ratio(a: &Spread, b: &Spread) -> Spread {
    Spread {
        runs: a
            .runs
            .iter()
            .zip(&b.runs)
            .filter(|(_, b)| **b != 0.0)
            .map(|(a, b)| a / b)
            .collect(),
    }
}

/// A number with three significant digits and a thousands separator
/// where it helps: 0.0123, 1.23, 12.3, 123, 1,234, 12,345.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let a = v.abs();
    if a >= 1000.0 {
        let rounded = v.round() as i64;
        let digits = rounded.unsigned_abs().to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        if rounded < 0 {
            out.insert(0, '-');
        }
        out
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a == 0.0 {
        "0".into()
    } else {
        format!("{v:.3}")
    }
}

/// A whole count with a thousands separator: 1, 100, 10,000.
pub fn count(n: usize) -> String {
    if n < 1000 {
        n.to_string()
    } else {
        num(n as f64)
    }
}

/// A duration given in microseconds, in the unit that reads best.
pub fn micros(us: f64) -> String {
    if !us.is_finite() {
        "–".into()
    } else if us.abs() >= 1_000_000.0 {
        format!("{} s", num(us / 1_000_000.0))
    } else if us.abs() >= 1000.0 {
        format!("{} ms", num(us / 1000.0))
    } else {
        format!("{} µs", num(us))
    }
}

/// A ratio: `1.23×`.
pub fn times(v: f64) -> String {
    format!("{}×", num(v))
}

/// A share given as a fraction (0.5), in whole percent: `50%`.
pub fn share(v: f64) -> String {
    format!("{:.0}%", v * 100.0)
}

/// A figure that is a percentage already (CPU, 100 = one core), whole: `42%`.
pub fn percent(v: f64) -> String {
    format!("{v:.0}%")
}

/// "" for one, "s" for more: `"{n} viewer{}"`.
pub fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// A size given in bytes, in the unit that reads best (KiB = 1024 bytes).
pub fn bytes(b: f64) -> String {
    if !b.is_finite() {
        "–".into()
    } else if b >= 1024.0 * 1024.0 {
        format!("{} MiB", num(b / 1024.0 / 1024.0))
    } else if b >= 1024.0 {
        format!("{} KiB", num(b / 1024.0))
    } else {
        format!("{} B", num(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_and_stay_within_one_percent() {
        for v in (0..5000).chain([123_456, 9_999_999, 1 << 39]) {
            let (low, high) = bounds_of(bucket_of(v));
            assert!(low <= v && v <= high, "{v} not in [{low}, {high}]");
            assert!((high - low) as f64 <= (v as f64 * 0.01).max(0.0) + 0.5);
        }
    }

    #[test]
    fn quantiles_of_a_uniform_run() {
        let h = Histogram::new();
        for v in 1..=1000 {
            h.record(v);
        }
        let p50 = h.quantile(0.5).unwrap();
        let p99 = h.quantile(0.99).unwrap();
        assert!((p50 - 500.0).abs() <= 5.0, "{p50}");
        assert!((p99 - 990.0).abs() <= 10.0, "{p99}");
        assert_eq!(Histogram::new().quantile(0.5), None);
    }

    #[test]
    fn spread_is_median_and_range() {
        let s = Spread {
            runs: vec![3.0, 1.0, 2.0],
        };
        assert_eq!(s.show(num), "2.00 (1.00–3.00, 3 runs)");
        let r = ratio(&s, &Spread { runs: vec![1.0; 3] });
        assert_eq!(r.median(), 2.0);
        assert_eq!(num(12345.6), "12,346");
        assert_eq!(micros(1500.0), "1.50 ms");
        assert_eq!(micros(-1500.0), "-1.50 ms");
        assert_eq!(times(2.0), "2.00×");
        assert_eq!(share(0.5), "50%");
        assert_eq!(percent(42.4), "42%");
    }
}
