//! Live numbers per stage: rate over a sliding window, the latest queue
//! depth, and p50/p99 latency from the previous observed stage.
//!
//! Every number comes from measured stage times; a stage no event has
//! reached has no numbers (and is drawn as not observed when the source
//! cannot measure it).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use watchlife_protocol::{Stage, StageTimes};

/// Width of the window the rate is computed over: long enough to smooth a
/// bursty demo, short enough that a stopped stream reads 0/s within seconds.
pub const RATE_WINDOW_MS: f64 = 5_000.0;
/// Latency samples kept per stage for the percentiles: enough for a stable
/// p99, small enough to sort on every refresh.
pub const LATENCY_SAMPLES: usize = 512;
/// Arrival times kept per stage for the rate; bounds memory at high rates
/// (the rate then reads as "at least" this many per window).
pub const RATE_SAMPLES: usize = 20_000;

/// Numbers for one stage.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StageStats {
    /// Page-clock times (ms) at which events reached the page, for this stage.
    arrivals: VecDeque<f64>,
    /// Latencies (µs) from the previous observed stage, newest last.
    latencies: VecDeque<u64>,
    /// Queue depth reported with the latest event, where the stage has a queue.
    pub depth: Option<u32>,
    /// Events that have passed this stage since the page opened.
    pub total: u64,
}

impl StageStats {
    /// Events per second over the last [`RATE_WINDOW_MS`] before `now_ms`.
    pub fn rate(&self, now_ms: f64) -> f64 {
        let from = now_ms - RATE_WINDOW_MS;
        let n = self
            .arrivals
            .iter()
            .rev()
            .take_while(|t| **t >= from)
            .count();
        n as f64 * 1000.0 / RATE_WINDOW_MS
    }

    /// The `q` quantile (0..=1) of the kept latencies, in µs.
    pub fn latency_quantile(&self, q: f64) -> Option<u64> {
        quantile(self.latencies.iter().copied().collect(), q)
    }

    /// The kept latency samples (µs), oldest first.
    pub fn latencies(&self) -> impl Iterator<Item = u64> + '_ {
        self.latencies.iter().copied()
    }
}

/// The nearest-rank quantile of `values` (0 ≤ q ≤ 1); `None` when empty.
pub fn quantile(mut values: Vec<u64>, q: f64) -> Option<u64> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    let rank = ((q.clamp(0.0, 1.0) * values.len() as f64).ceil() as usize).max(1);
    Some(values[rank - 1])
}

/// Numbers for every stage, updated one event at a time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PipelineStats {
    stages: BTreeMap<Stage, StageStats>,
    /// Stages some event has carried a time for.
    pub seen: BTreeSet<Stage>,
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
                s.latencies.push_back(mark.at.saturating_sub(prev));
            }
            previous = Some(mark.at);
        }
    }

    /// The numbers of one stage, if any event reached it.
    pub fn stage(&self, stage: Stage) -> Option<&StageStats> {
        self.stages.get(&stage)
    }
}

/// A duration in µs, in the unit that reads best (`12 µs`, `0.21 ms`, `1.4 s`).
pub fn format_micros(us: u64) -> String {
    if us < 1_000 {
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
    fn quantiles_use_the_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(quantile(v.clone(), 0.5), Some(50));
        assert_eq!(quantile(v, 0.99), Some(99));
        assert_eq!(quantile(vec![], 0.5), None);
        assert_eq!(format_micros(12), "12 µs");
        assert_eq!(format_micros(1_400), "1.40 ms");
    }
}
