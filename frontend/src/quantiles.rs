//! Nearest-rank quantiles: the p50/p99 of the stages' latencies and of the
//! handlers' durations, every one a sample that was measured.

/// The nearest-rank quantile of `values` (0 ≤ q ≤ 1); `None` when empty.
pub fn quantile(values: Vec<i64>, q: f64) -> Option<i64> {
    quantiles(values, [q]).map(|[v]| v)
}

/// Several nearest-rank quantiles of `values` from one sort; `None` when empty.
pub fn quantiles<const N: usize>(mut values: Vec<i64>, qs: [f64; N]) -> Option<[i64; N]> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    Some(qs.map(|q| nearest_rank(&values, q)))
}

/// The nearest-rank quantile of `sorted`, which is sorted and not empty.
fn nearest_rank(sorted: &[i64], q: f64) -> i64 {
    let rank = ((q.clamp(0.0, 1.0) * sorted.len() as f64).ceil() as usize).max(1);
    sorted[rank - 1]
}
