//! The demo's server side under load, stage by stage: a staged control
//! plane (each type's Cacher's Reflector and dispatcher a tokio task, as in
//! `watchlife --demo`) at 10, 1,000 and 10,000 writes/s, with 1 and 1,000
//! watchers of the written type reading as fast as they can.
//!
//! Every delivered event carries its own stamps (commit, the Cacher's
//! Reflector, the watch cache, dispatch, this watcher's buffer) and its
//! reader notes when it wrote it, so each hop's wait is measured, never
//! derived. A rate the two cores cannot carry shows where the queues fill:
//! `incoming` behind a dispatcher that fans out to every watcher, the
//! buffers of readers that fall behind, watchers closed after the budget.

use crate::report::{Report, Section, Table};
use crate::scenario::Scenario;
use crate::stats::{Histogram, count, micros, num};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use watchlife_controlplane::limits::Limits;
use watchlife_controlplane::resource::CONFIGMAPS;
use watchlife_controlplane::{ControlPlane, Delivery};

/// How the run is shaped.
pub struct Config {
    /// Writes per second to try.
    pub rates: Vec<u64>,
    pub watchers: Vec<usize>,
    /// How long each rate is held.
    pub seconds: f64,
}

/// The configmaps written in turn.
const OBJECTS: usize = 100;

/// Writes per tick of the writer's clock: a tick every 10 ms.
const TICK: Duration = Duration::from_millis(10);

/// How long the stages may take to drain after the writer stops.
const DRAIN: Duration = Duration::from_secs(20);

/// Each hop's wait, one histogram per hop.
#[derive(Default)]
pub struct Hops {
    /// Commit → read by the Cacher's Reflector.
    reflect: Histogram,
    /// In the watch cache → taken by the dispatcher (time in `incoming`).
    incoming: Histogram,
    /// Taken by the dispatcher → in this watcher's buffer (the dispatcher
    /// blocked on full buffers before it).
    dispatch: Histogram,
    /// In the buffer → written by its reader.
    buffer: Histogram,
    /// Commit → written.
    total: Histogram,
    delivered: AtomicU64,
}

impl Hops {
    fn record(&self, d: &Delivery, written: u64) {
        let (Some(t), Some(dispatched)) = (d.event.times, d.event.dispatched_at()) else {
            return;
        };
        self.reflect
            .record(t.reflected_at.saturating_sub(t.committed_at));
        self.incoming.record(dispatched.saturating_sub(t.cached_at));
        self.dispatch
            .record(d.buffered_at.saturating_sub(dispatched));
        self.buffer.record(written.saturating_sub(d.buffered_at));
        self.total.record(written.saturating_sub(t.committed_at));
        self.delivered.fetch_add(1, Ordering::Relaxed);
    }
}

pub struct Measured {
    hops: Arc<Hops>,
    writes: u64,
    seconds: f64,
    closed: u64,
}

/// One step: its asked rate, its watchers, and what it measured.
pub struct Step {
    rate: u64,
    watchers: usize,
    measured: Measured,
}

impl Scenario for Config {
    /// Every rate with every watcher count, in that order.
    type Figures = Vec<Step>;

    fn measure(&self) -> Vec<Step> {
        let runtime = crate::machine::two_thread_runtime();
        let mut steps = Vec::new();
        for &rate in &self.rates {
            for &n in &self.watchers {
                progress!("server stages: {rate} writes/s, {n} watchers");
                steps.push(Step {
                    rate,
                    watchers: n,
                    measured: runtime.block_on(measure(rate, n, self.seconds)),
                });
            }
        }
        steps
    }

    fn report(&self, steps: Vec<Step>, report: &mut Report, seconds: f64) {
        let mut table = Table::new(
            "Each hop's wait, p50 / p99 (µs unless marked)",
            &[
                "writes/s asked → done",
                "watchers",
                "delivered",
                "closed slow",
                "commit → Reflector",
                "in incoming",
                "dispatcher → buffer",
                "in the buffer",
                "commit → written",
            ],
        );
        let mut summary = Vec::new();
        for step in &steps {
            let (rate, n, m) = (step.rate, step.watchers, &step.measured);
            let h = &m.hops;
            table.row(row(step));
            summary.push(format!(
                "{rate} writes/s to {n} watchers: in incoming {}, in the buffer {}, {} closed",
                p50_p99(&h.incoming),
                p50_p99(&h.buffer),
                m.closed
            ));
            report.series(
                "demo server: commit → written",
                &format!("{rate}/s, {n} watchers"),
                h.total.shape(),
            );
        }
        report.sections.push(Section {
            title: "The demo's server side, stage by stage".into(),
            method: self.method(),
            tables: vec![table],
            notes: vec![
                "kube-apiserver v1.20 exposes no per-stage latency of its Cacher, only counts: \
                 `apiserver_watch_events_total` (events sent to watchers, by kind) and \
                 `apiserver_terminated_watchers_total` (watchers closed for being slow). The \
                 \"demo API against kube-apiserver\" section reads both beside the demo's own \
                 counts over the same HTTP load."
                    .into(),
                "The demo's watchers share the control plane's two cores with the writer and the \
                 stages: at 1,000 watchers the dispatcher's fan-out is the work, so `incoming` fills \
                 first; at 10,000 writes/s the writer alone is more than the cores carry, and the \
                 achieved rate is shown beside the asked one."
                    .into(),
            ],
            summary,
            seconds,
        });
    }
}

impl Config {
    fn method(&self) -> String {
        format!(
            "A staged control plane (`watchlife_demo_apiserver::stages::start`, as `watchlife \
             --demo` runs it, without the demo's quotas) on a 2-thread tokio runtime. A writer \
             updates {OBJECTS} configmaps in turn, a batch every {} ms, for {} s at each rate; \
             every watcher of configmaps is a task that reads its buffer as fast as it can and \
             notes when it wrote each event. Each hop is measured from the stamps the stages \
             put on the event themselves. A watcher closed for being slow is not re-opened, so \
             it stops counting: \"delivered\" is what reached the watchers that stayed.",
            TICK.as_millis(),
            self.seconds
        )
    }
}

/// "p50 / p99" of a hop.
fn p50_p99(h: &Histogram) -> String {
    format!(
        "{} / {}",
        micros(h.quantile_or_nan(0.5)),
        micros(h.quantile_or_nan(0.99))
    )
}

/// The step's row: rates, delivery, and each hop's wait.
fn row(step: &Step) -> Vec<String> {
    let (m, n) = (&step.measured, step.watchers);
    let h = &m.hops;
    let delivered = h.delivered.load(Ordering::Relaxed);
    let owed = m.writes * n as u64;
    vec![
        format!(
            "{} → {}",
            count(step.rate as usize),
            num(m.writes as f64 / m.seconds)
        ),
        count(n),
        format!(
            "{} of {} ({:.1}%)",
            count(delivered as usize),
            count(owed as usize),
            100.0 * delivered as f64 / owed.max(1) as f64
        ),
        count(m.closed as usize),
        p50_p99(&h.reflect),
        p50_p99(&h.incoming),
        p50_p99(&h.dispatch),
        p50_p99(&h.buffer),
        p50_p99(&h.total),
    ]
}

async fn measure(rate: u64, watchers: usize, seconds: f64) -> Measured {
    let cp = watchlife_demo_apiserver::stages::start(
        Limits::UNBOUNDED,
        watchlife_controlplane::cacher::watcher::DEMO_BOOKMARK_FREQUENCY,
    );
    for i in 0..OBJECTS {
        cp.create(CONFIGMAPS, configmap(i, 0))
            .expect("a fresh store takes the configmaps");
    }
    let hops = Arc::new(Hops::default());
    let from = cp.revision();
    // Let the Cacher catch up with the creates before the watches start.
    while cp.watch_cache_revision(CONFIGMAPS) < from {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for i in 0..watchers {
        let rx = cp
            .watch_named(&format!("w{i}"), CONFIGMAPS, Some(from), None)
            .expect("a watch from the current revision");
        read(rx, cp.clone(), hops.clone());
    }
    let per_tick = (rate as f64 * TICK.as_secs_f64()).max(1.0) as u64;
    let period = if rate as f64 * TICK.as_secs_f64() < 1.0 {
        Duration::from_secs_f64(1.0 / rate as f64)
    } else {
        TICK
    };
    let started = Instant::now();
    let mut ticker = tokio::time::interval(period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut writes = 0u64;
    while started.elapsed().as_secs_f64() < seconds {
        ticker.tick().await;
        for _ in 0..per_tick {
            writes += 1;
            let i = writes as usize % OBJECTS;
            cp.update(CONFIGMAPS, configmap(i, writes))
                .expect("the configmap exists");
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let last = cp.revision();
    let deadline = Instant::now() + DRAIN;
    loop {
        let closed = closed(&cp);
        let open = watchers as u64 - closed.min(watchers as u64);
        let delivered = hops.delivered.load(Ordering::Relaxed);
        let settled = cp.watch_cache_revision(CONFIGMAPS) >= last
            && delivered >= (writes * open).saturating_sub(writes * closed);
        if settled || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Let the readers finish what their buffers hold.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let closed = closed(&cp);
    cp.drop_watchers();
    Measured {
        hops,
        writes,
        seconds: elapsed,
        closed,
    }
}

fn closed(cp: &ControlPlane) -> u64 {
    cp.watchers()
        .into_iter()
        .find(|w| w.resource == CONFIGMAPS)
        .map_or(0, |w| w.closed_slow)
}

/// A reader of one watch: takes each event and notes when it wrote it.
fn read(mut rx: mpsc::Receiver<Delivery>, cp: ControlPlane, hops: Arc<Hops>) {
    tokio::spawn(async move {
        while let Some(d) = rx.recv().await {
            // The writer's work: the event's line, made once for all.
            let line = d.event.line();
            std::hint::black_box(line.len());
            hops.record(&d, cp.now());
        }
    });
}

fn configmap(i: usize, version: u64) -> serde_json::Value {
    json!({
        "metadata": {"name": format!("cm-{i}"), "namespace": "default"},
        "data": {"version": version.to_string(), "payload": "x".repeat(512)},
    })
}
