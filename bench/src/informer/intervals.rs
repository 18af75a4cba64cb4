//! The intervals between an event's stage stamps, and their distribution.
//!
//! An interval is the later stamp less the earlier, in whole microseconds
//! (the protocol's unit), taken as it is: two stamps read in the same
//! microsecond give exactly 0, and stamps read by different tasks from the
//! system clock can give a negative interval. Nothing is clamped; the
//! distribution counts both.

use watchlife_informer::informer::CONTROLLER;
use watchlife_protocol::{Stage, WatchEvent};

/// The intervals of an event's life, in its order, by name; a listener's
/// two (its wait in its buffer, its call) for each listener in `listeners`.
/// An event contributes to an interval only when it has both stamps (a
/// listener's only when that listener called its handler).
pub fn of(events: &[WatchEvent], listeners: &[String]) -> Vec<(String, Vec<i64>)> {
    let mut out: Vec<(String, Vec<i64>)> = Vec::new();
    let mut add = |name: String, f: &dyn Fn(&WatchEvent) -> Option<i64>| {
        out.push((name, events.iter().filter_map(f).collect()));
    };
    let at = |e: &WatchEvent, s: Stage| e.stages.get(&s).map(|m| m.at as i64);
    let between = |a: Stage, b: Stage| move |e: &WatchEvent| Some(at(e, b)? - at(e, a)?);
    add(
        "Reflector → FIFO".into(),
        &between(Stage::Reflector, Stage::Fifo),
    );
    add(
        "FIFO → Indexer (popped and applied)".into(),
        &between(Stage::Fifo, Stage::Indexer),
    );
    add(
        "Indexer → Handlers (in every listener's buffer)".into(),
        &between(Stage::Indexer, Stage::Handlers),
    );
    for listener in listeners {
        add(dequeue_wait(listener), &|e| {
            let call = e.handled.calls.iter().find(|c| c.listener == *listener)?;
            Some(call.dequeued as i64 - at(e, Stage::Handlers)?)
        });
        add(call_time(listener), &|e| {
            let call = e.handled.calls.iter().find(|c| c.listener == *listener)?;
            Some(call.returned as i64 - call.dequeued as i64)
        });
    }
    add(
        format!("`{CONTROLLER}` dequeued → Workqueue (its handler adds the key)"),
        &|e| {
            let call = e.handled.calls.iter().find(|c| c.listener == CONTROLLER)?;
            Some(at(e, Stage::Workqueue)? - call.dequeued as i64)
        },
    );
    add(
        "Workqueue → reconcile started (a worker takes the key)".into(),
        &between(Stage::Workqueue, Stage::Reconcile),
    );
    add("reconcile started → finished".into(), &|e| {
        let run = e.handled.reconcile.as_ref()?;
        Some(run.finished as i64 - run.started as i64)
    });
    add(CONTROLLER_PATH.into(), &|e| {
        let run = e.handled.reconcile.as_ref()?;
        Some(run.finished as i64 - at(e, Stage::Handlers)?)
    });
    add(WHOLE.into(), &|e| {
        let run = e.handled.reconcile.as_ref()?;
        Some(run.finished as i64 - at(e, Stage::Reflector)?)
    });
    out
}

/// The controller → reconcile latency: from the notification entering the
/// controller's buffer to the reconcile of its key returning.
pub const CONTROLLER_PATH: &str =
    "Handlers → reconcile finished (the controller's buffer, handler, workqueue and worker)";

/// The whole informer, on the controller's path.
pub const WHOLE: &str = "Reflector → reconcile finished (the whole informer)";

/// A listener's notification's wait in its buffer.
pub fn dequeue_wait(listener: &str) -> String {
    format!("Handlers → `{listener}` dequeued")
}

/// A listener's handler call.
pub fn call_time(listener: &str) -> String {
    format!("`{listener}` dequeued → returned")
}

/// One run's distribution of one interval (µs).
#[derive(Debug, Clone, Copy)]
pub struct Distribution {
    pub samples: usize,
    pub p50: i64,
    pub p90: i64,
    pub p99: i64,
    pub max: i64,
    /// Samples exactly 0 (both stamps in the same microsecond).
    pub zeros: usize,
    /// Samples below 0.
    pub negative: usize,
}

impl Distribution {
    /// `None` when there is no sample. Percentiles by nearest rank: the
    /// sample below which that share of the samples lie, never interpolated.
    pub fn of(samples: &[i64]) -> Option<Distribution> {
        if samples.is_empty() {
            return None;
        }
        let mut v = samples.to_vec();
        v.sort_unstable();
        let rank = |q: f64| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Some(Distribution {
            samples: v.len(),
            p50: rank(0.50),
            p90: rank(0.90),
            p99: rank(0.99),
            max: v[v.len() - 1],
            zeros: v.iter().filter(|&&s| s == 0).count(),
            negative: v.iter().filter(|&&s| s < 0).count(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_samples_and_nothing_is_clamped() {
        let samples: Vec<i64> = (-2..98).collect();
        let d = Distribution::of(&samples).unwrap();
        assert_eq!((d.p50, d.p90, d.p99, d.max), (47, 87, 96, 97));
        assert_eq!((d.zeros, d.negative, d.samples), (1, 2, 100));
        assert!(Distribution::of(&[]).is_none());
    }
}
