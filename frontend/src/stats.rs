//! Live numbers per stage: rate over a sliding window, the latest queue
//! depth, and p50/p99 latency from the previous observed stage.
//!
//! Every number comes from measured stage times; a stage no event has
//! reached has no numbers (and is drawn as not observed when the source
//! cannot measure it). A latency is signed: when a stage's clock read came
//! before the previous stage's, the sample is negative and kept as it is
//! (see [`crate::interval`]), in the percentiles and counted apart in the
//! histograms.

use crate::listeners::Listeners;
use crate::quantiles::quantiles;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use watchlife_protocol::{EventType, Stage, StageTimes};

/// Width of the window the rate is computed over: long enough to smooth a
/// bursty demo, short enough that a stopped stream reads 0/s within seconds.
pub const RATE_WINDOW_MS: f64 = 5_000.0;
/// Latency samples kept per stage for the percentiles: enough for a stable
/// p99, small enough to sort on every refresh (twice a second, not per frame).
pub const LATENCY_SAMPLES: usize = 512;
/// Arrival times kept per stage for the rate; bounds memory at high rates
/// (the rate then reads as "at least" this many per window).
pub const RATE_SAMPLES: usize = 20_000;

/// Numbers for one stage.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StageStats {
    /// Page-clock times (ms) at which events reached the page, for this stage.
    arrivals: VecDeque<f64>,
    /// Latencies (µs) from the previous observed stage, newest last;
    /// negative when this stage's mark was read first.
    latencies: VecDeque<i64>,
    /// Queue depth reported with the latest event, where the stage has a queue.
    pub depth: Option<u32>,
    /// Events that have passed this stage since the page opened.
    pub total: u64,
}

impl StageStats {
    /// Events per second over the last [`RATE_WINDOW_MS`] before `now_ms`.
    /// Arrivals are kept in page-time order, so the window is found by
    /// bisection rather than by counting it.
    pub fn rate(&self, now_ms: f64) -> f64 {
        let from = now_ms - RATE_WINDOW_MS;
        let n = self.arrivals.len() - self.arrivals.partition_point(|t| *t < from);
        n as f64 * 1000.0 / RATE_WINDOW_MS
    }

    /// The `q` quantile (0..=1) of the kept latencies, in µs.
    pub fn latency_quantile(&self, q: f64) -> Option<i64> {
        self.latency_quantiles([q]).map(|[v]| v)
    }

    /// Several quantiles of the kept latencies (µs) from one sort.
    pub fn latency_quantiles<const N: usize>(&self, qs: [f64; N]) -> Option<[i64; N]> {
        quantiles(self.latencies.iter().copied().collect(), qs)
    }

    /// The kept latency samples (µs), oldest first.
    pub fn latencies(&self) -> impl Iterator<Item = i64> + '_ {
        self.latencies.iter().copied()
    }

    /// How many of the kept latency samples are negative, and how many are kept.
    pub fn negatives(&self) -> (usize, usize) {
        let n = self.latencies.iter().filter(|l| **l < 0).count();
        (n, self.latencies.len())
    }
}

/// Numbers for every stage, updated one event at a time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PipelineStats {
    stages: BTreeMap<Stage, StageStats>,
    /// Stages some event has carried a time for.
    pub seen: BTreeSet<Stage>,
    /// The event handlers' listeners, one lane each.
    pub listeners: Listeners,
}

impl PipelineStats {
    /// Records one event's stage times, received at page time `now_ms`.
    pub fn record(&mut self, times: &StageTimes, now_ms: f64) {
        let mut previous: Option<u64> = None;
        for (stage, mark) in times {
            self.seen.insert(*stage);
            let s = self.stages.entry(*stage).or_default();
            s.total += 1;
            if s.arrivals.len() == RATE_SAMPLES {
                s.arrivals.pop_front();
            }
            s.arrivals.push_back(now_ms);
            if mark.depth.is_some() {
                s.depth = mark.depth;
            }
            if let Some(prev) = previous {
                if s.latencies.len() == LATENCY_SAMPLES {
                    s.latencies.pop_front();
                }
                s.latencies
                    .push_back(crate::interval::interval(prev, mark.at));
            }
            previous = Some(mark.at);
        }
    }

    /// The numbers of one stage, if any event reached it.
    pub fn stage(&self, stage: Stage) -> Option<&StageStats> {
        self.stages.get(&stage)
    }
}

/// Seconds of history the events-per-second plot keeps and draws.
pub const SERIES_SECONDS: usize = 60;

/// Events received per second of page time, by type, for the last
/// [`SERIES_SECONDS`] seconds: what the rate plot draws.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RateSeries {
    /// `(second, counts)` oldest first; `second` is page time in whole seconds.
    /// Counts are ADDED, MODIFIED, DELETED, then BOOKMARK and ERROR together.
    buckets: VecDeque<(u64, [u32; 4])>,
}

impl RateSeries {
    /// Counts one event received at page time `now_ms`.
    pub fn record(&mut self, event_type: EventType, now_ms: f64) {
        let second = (now_ms.max(0.0) / 1000.0) as u64;
        if self.buckets.back().is_none_or(|b| b.0 != second) {
            self.buckets.push_back((second, [0; 4]));
        }
        while self
            .buckets
            .front()
            .is_some_and(|b| b.0 + SERIES_SECONDS as u64 <= second)
        {
            self.buckets.pop_front();
        }
        let slot = match event_type {
            EventType::Added => 0,
            EventType::Modified => 1,
            EventType::Deleted => 2,
            EventType::Bookmark | EventType::Error => 3,
        };
        if let Some(b) = self.buckets.back_mut() {
            b.1[slot] = b.1[slot].saturating_add(1);
        }
    }

    /// The last [`SERIES_SECONDS`] whole seconds up to (not including) the
    /// one of `now_ms`, oldest first, with zeros for quiet seconds.
    pub fn seconds(&self, now_ms: f64) -> Vec<[u32; 4]> {
        let now = (now_ms.max(0.0) / 1000.0) as u64;
        (1..=SERIES_SECONDS as u64)
            .rev()
            .map(|ago| {
                let second = now.checked_sub(ago);
                self.buckets
                    .iter()
                    .find(|b| Some(b.0) == second)
                    .map_or([0; 4], |b| b.1)
            })
            .collect()
    }
}

/// Upper edges (µs) of the latency histogram's bins, three per decade from
/// 10 µs to 10 s; a last bin takes everything slower.
pub const LATENCY_BINS: [u64; 18] = [
    10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000,
    500_000, 1_000_000, 2_000_000, 5_000_000,
];

/// Latencies counted into the bins of [`LATENCY_BINS`] plus one overflow
/// bin, and the negative ones apart.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    /// Samples from 0 µs up, per bin.
    pub bins: [u32; LATENCY_BINS.len() + 1],
    /// Negative samples: the stage's mark was read before the previous one's.
    pub negative: u32,
}

/// Counts latencies (µs) into a [`Histogram`].
pub fn histogram(latencies: impl Iterator<Item = i64>) -> Histogram {
    let mut h = Histogram::default();
    for us in latencies {
        match u64::try_from(us) {
            Ok(us) => h.bins[LATENCY_BINS.partition_point(|edge| *edge < us)] += 1,
            Err(_) => h.negative += 1,
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::micros::format_micros;
    use crate::quantiles::quantile;
    use watchlife_protocol::StageMark;

    fn times(marks: &[(Stage, u64, Option<u32>)]) -> StageTimes {
        marks
            .iter()
            .map(|(s, at, depth)| {
                (
                    *s,
                    StageMark {
                        at: *at,
                        depth: *depth,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn latency_is_measured_from_the_previous_observed_stage() {
        let mut stats = PipelineStats::default();
        stats.record(
            &times(&[
                (Stage::Etcd, 100, None),
                (Stage::WatchCache, 112, None),
                (Stage::Reflector, 400, None),
            ]),
            0.0,
        );
        let lat = |s| stats.stage(s).unwrap().latency_quantile(0.5);
        assert_eq!(lat(Stage::Etcd), None);
        assert_eq!(lat(Stage::WatchCache), Some(12));
        // watch_stream was not observed: the Reflector's latency runs from the watch cache.
        assert_eq!(lat(Stage::Reflector), Some(288));
        assert!(stats.stage(Stage::WatchStream).is_none());
    }

    #[test]
    fn rate_counts_the_window_only_and_depth_keeps_the_latest() {
        let mut stats = PipelineStats::default();
        stats.record(&times(&[(Stage::Fifo, 1, Some(3))]), 0.0);
        for i in 0..10 {
            stats.record(&times(&[(Stage::Fifo, 2, None)]), 6_000.0 + i as f64);
        }
        let fifo = stats.stage(Stage::Fifo).unwrap();
        assert_eq!(fifo.rate(6_010.0), 2.0);
        assert_eq!(fifo.depth, Some(3));
        assert_eq!(fifo.total, 11);
    }

    #[test]
    fn the_rate_series_buckets_by_second_and_forgets_old_ones() {
        let mut series = RateSeries::default();
        series.record(EventType::Added, 500.0);
        series.record(EventType::Modified, 1_200.0);
        series.record(EventType::Modified, 1_900.0);
        series.record(EventType::Error, 1_950.0);
        let s = series.seconds(2_100.0);
        assert_eq!(s.len(), SERIES_SECONDS);
        assert_eq!(s[SERIES_SECONDS - 1], [0, 2, 0, 1]);
        assert_eq!(s[SERIES_SECONDS - 2], [1, 0, 0, 0]);
        series.record(EventType::Deleted, 120_000.0);
        assert_eq!(series.buckets.len(), 1, "older seconds are dropped");
        assert_eq!(series.seconds(121_000.0)[SERIES_SECONDS - 1], [0, 0, 1, 0]);
    }

    #[test]
    fn latencies_fall_in_log_bins() {
        let h = histogram([1, 10, 11, 150, 9_000, 60_000_000, -3, -40_000].into_iter());
        let bins = h.bins;
        assert_eq!(h.negative, 2, "negative samples are counted apart");
        assert_eq!(bins[0], 2, "up to 10 µs");
        assert_eq!(bins[1], 1, "10 to 20 µs");
        assert_eq!(bins[4], 1, "100 to 200 µs");
        assert_eq!(bins[9], 1, "5 to 10 ms");
        assert_eq!(bins[LATENCY_BINS.len()], 1, "slower than the last edge");
    }

    #[test]
    fn quantiles_use_the_nearest_rank() {
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(quantile(v.clone(), 0.5), Some(50));
        assert_eq!(quantile(v, 0.99), Some(99));
        assert_eq!(quantile(vec![], 0.5), None);
        let mut stats = PipelineStats::default();
        for at in [10, 40, 20, 30] {
            stats.record(
                &times(&[(Stage::Etcd, 0, None), (Stage::Fifo, at, None)]),
                0.0,
            );
        }
        let fifo = stats.stage(Stage::Fifo).unwrap();
        assert_eq!(fifo.latency_quantiles([0.5, 0.99]), Some([20, 40]));
        assert_eq!(
            stats.stage(Stage::Etcd).unwrap().latency_quantiles([0.5]),
            None
        );
        assert_eq!(format_micros(12), "12 µs");
        assert_eq!(format_micros(1_400), "1.40 ms");
    }

    #[test]
    fn negative_latencies_are_kept_in_the_percentiles() {
        let mut stats = PipelineStats::default();
        // The Reflector's mark read before etcd's: −120 µs, kept as it is.
        for (etcd, reflector) in [(1_120, 1_000), (1_000, 1_050), (1_000, 1_040)] {
            stats.record(
                &times(&[
                    (Stage::Etcd, etcd, None),
                    (Stage::Reflector, reflector, None),
                ]),
                0.0,
            );
        }
        let r = stats.stage(Stage::Reflector).unwrap();
        assert_eq!(r.latency_quantiles([0.0, 0.5, 1.0]), Some([-120, 40, 50]));
        assert_eq!(r.negatives(), (1, 3));
        assert_eq!(histogram(r.latencies()).negative, 1);
        assert_eq!(quantile(vec![-5, -1, 3], 0.5), Some(-1));
    }
}
