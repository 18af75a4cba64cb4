//! The demo control plane's core under writes, with 1, 100 and 1,000 watchers.
//!
//! One thread writes (updates of 100 pods, straight into the core: no HTTP);
//! another runs every watcher as a task on one single-threaded runtime and
//! takes each event as the demo API's watch stream would, as the bytes of the
//! watch-stream line (`CachedEvent::line`, encoded once and shared). Three
//! figures per watcher count:
//!
//! - **sustained writes/s**: writes in batches of [`BATCH`], each batch
//!   waited for until every watcher has it (so no watcher is ever closed for
//!   being slow), and the time the write calls themselves take;
//! - **commit → watcher latency** at a steady [`PACED_RATE`] writes/s, from the
//!   store's commit time to the moment the watcher's task has the event;
//! - **memory per watcher**: heap bytes of the watchers' registrations and
//!   buffers, counted by the bench's allocator.
//!
//! The reference: the same 1,000 watchers each encoding the object itself,
//! as a cache without shared encoding would make every watcher do.

use crate::machine::now_micros;
use crate::objects::{pod, pod_name};
use crate::report::{Report, Section, Table};
use crate::scenario::Scenario;
use crate::scenario::WriteLoad;
use crate::stats::{Histogram, Spread, bytes, count, micros, num, plural, ratio, times};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use watchlife_controlplane::resource::PODS;
use watchlife_controlplane::{Clock, ControlPlane, Delivery};
use watchlife_live_heap::live_bytes;

/// Writes sent before every watcher must have them. Below the watchers'
/// buffer of 100, so that a batch never closes a watcher for being slow.
const BATCH: usize = 50;
/// Pods the writes go round.
const OBJECTS: usize = 100;
/// Writes per second while latency is measured: low enough that no watcher
/// count saturates the watchers' thread, so the figure is latency, not queueing.
const PACED_RATE: f64 = 200.0;

#[derive(Debug, Clone)]
pub struct Config {
    pub load: WriteLoad,
}

/// How each watcher takes an event.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Encoding {
    /// The shared line, encoded once for all (what the demo API sends).
    Shared,
    /// Its own encoding of the object (the reference).
    PerWatcher,
}

#[derive(Default)]
pub struct Figures {
    writes_per_second: Spread,
    write_call_micros: Spread,
    p50: Spread,
    p99: Spread,
    bytes_per_watcher: Spread,
}

/// What every run found.
pub struct Gathered {
    /// One entry per watcher count, in [`WriteLoad::watchers`]' order.
    figures: Vec<Figures>,
    /// Every run's commit → watcher latencies, per watcher count.
    pooled: Vec<Histogram>,
    /// Writes/s with the per-watcher encoding, at the most watchers.
    naive: Spread,
    /// Writes/s with the shared line, at the most watchers.
    shared_at_most: Spread,
    encode_micros: Spread,
}

impl Config {
    fn most_watchers(&self) -> usize {
        *self.load.watchers.iter().max().unwrap_or(&1)
    }
}

impl Config {
    /// One row per watcher count.
    fn table(&self, gathered: &Gathered) -> Table {
        let mut table = Table::new(
            "",
            &[
                "watchers",
                "writes/s, delivered to every watcher",
                "time in the write call",
                "commit → watcher p50",
                "commit → watcher p99",
                "heap per watcher",
            ],
        );
        for (f, n) in gathered.figures.iter().zip(&self.load.watchers) {
            table.row(vec![
                count(*n),
                f.writes_per_second.show(num),
                f.write_call_micros.show(micros),
                f.p50.show(micros),
                f.p99.show(micros),
                f.bytes_per_watcher.show(bytes),
            ]);
        }
        table
    }

    /// The shared line beside each watcher's own encoding.
    fn reference_table(&self, gathered: &Gathered) -> Table {
        let mut reference = Table::new(
            &format!(
                "The reference, at {} watchers (the per-watcher encoding with {} writes a run: it is slow):",
                count(self.most_watchers()),
                num((self.load.writes / 5) as f64)
            ),
            &["each watcher gets", "writes/s, delivered to every watcher"],
        );
        reference.row(vec![
            "the shared line (encoded once)".into(),
            gathered.shared_at_most.show(num),
        ]);
        reference.row(vec!["its own encoding".into(), gathered.naive.show(num)]);
        reference
    }

    /// The headlines and the note that compare the fewest watchers with the most.
    fn compare(
        &self,
        gathered: &Gathered,
        (first, last): (&Figures, &Figures),
        report: &mut Report,
        notes: &mut Vec<String>,
    ) {
        let most = self.most_watchers();
        let shown = count(most);
        let cost = ratio(&last.write_call_micros, &first.write_call_micros);
        let rate = ratio(&first.writes_per_second, &last.writes_per_second);
        let shared = ratio(&gathered.shared_at_most, &gathered.naive);
        report.headline(
            format!("control plane: time in a write call, {shown} watchers ÷ 1 watcher"),
            cost.show(times),
        );
        report.headline(
            format!("control plane: writes/s delivered to all, 1 watcher ÷ {shown} watchers"),
            rate.show(times),
        );
        report.headline(
            format!(
                "control plane: shared encoding ÷ per-watcher encoding, writes/s at {shown} watchers"
            ),
            shared.show(times),
        );
        notes.push(format!(
            "**Do watchers multiply the cost of a write?** Not its encoding: the event is \
             encoded once, however many watchers take it, and giving every watcher its own \
             encoding instead cuts the sustained rate at {shown} watchers by {}. But the write \
             call does grow with watchers: by {} per extra watcher, against {} to encode the \
             event once. Each watcher costs the write a reference-counted pointer, a send into \
             its buffer and the wake-up of its task, and the cache does that dispatch inside \
             the write, under the control plane's lock; so at {shown} watchers the write call \
             takes {} the time it takes with one. The sustained rate falls by {}, because it \
             also holds the watchers' own work: {shown} deliveries per write, on the one other \
             core.",
            shared.show(times),
            per_extra_watcher(first, last, most).show(|v| format!("{} ns", num(v))),
            gathered.encode_micros.show(micros),
            cost.show(times),
            rate.show(times),
        ));
    }

    /// The screen summary's lines.
    fn summary(&self, first: &Figures, last: &Figures) -> Vec<String> {
        let shown = count(self.most_watchers());
        let per_watcher = per_extra_watcher(first, last, self.most_watchers());
        vec![
            format!(
                "write call: {} at 1 watcher, {} at {shown} ({} per extra watcher)",
                first.write_call_micros.show(micros),
                last.write_call_micros.show(micros),
                per_watcher.show(|v| format!("{} ns", num(v)))
            ),
            format!(
                "writes/s delivered to all: {} at 1, {} at {shown}; heap per watcher {}",
                num(first.writes_per_second.median()),
                num(last.writes_per_second.median()),
                bytes(last.bytes_per_watcher.median())
            ),
            format!(
                "commit → watcher p50/p99 at {shown} watchers: {} / {}",
                micros(last.p50.median()),
                micros(last.p99.median())
            ),
        ]
    }

    fn latency_note(&self) -> String {
        let most = self.most_watchers();
        format!(
            "Latency is measured at {} writes/s for {} writes per run; the watchers all run on one \
             thread, as tasks, so at {} watchers the last watcher of a write waits for the \
             {} before it: that is the spread between p50 and p99. The HTTP layer of the demo API \
             is not in these figures: they are the core's.",
            num(PACED_RATE),
            num(self.load.paced_writes as f64),
            count(most),
            count(most - 1)
        )
    }

    fn method(&self) -> String {
        format!(
            "`ControlPlane::new(Clock::system())`, driven directly in one process: a thread \
             updates {OBJECTS} pods (about 700 bytes of JSON each) with `update`, {} writes per \
             throughput measurement in batches of {BATCH}, each batch waited for until every \
             watcher has it; every watcher is a `watch_named` receiver read by a task on a \
             second thread, which takes each event's watch-stream line. Heap per watcher is \
             the bench allocator's count of live bytes after the watchers were registered, \
             divided by their number. {} runs.",
            num(self.load.writes as f64),
            self.load.runs
        )
    }
}

impl Scenario for Config {
    type Figures = Gathered;

    fn measure(&self) -> Gathered {
        let mut gathered = Gathered {
            figures: self
                .load
                .watchers
                .iter()
                .map(|_| Figures::default())
                .collect(),
            pooled: self
                .load
                .watchers
                .iter()
                .map(|_| Histogram::new())
                .collect(),
            naive: Spread::default(),
            shared_at_most: Spread::default(),
            encode_micros: Spread::default(),
        };
        let most = self.most_watchers();
        for run in 0..self.load.runs {
            for (i, &n) in self.load.watchers.iter().enumerate() {
                progress!(
                    "control plane: run {}/{}, {n} watchers",
                    run + 1,
                    self.load.runs
                );
                let m = measure(n, self, Encoding::Shared, true);
                let f = &mut gathered.figures[i];
                f.writes_per_second.push(m.writes_per_second);
                f.write_call_micros.push(m.write_call_micros);
                f.bytes_per_watcher.push(m.bytes_per_watcher);
                if let Some(l) = &m.latency {
                    f.p50.push(l.quantile_or_nan(0.5));
                    f.p99.push(l.quantile_or_nan(0.99));
                    gathered.pooled[i].merge(l);
                }
                if n == most {
                    gathered.shared_at_most.push(m.writes_per_second);
                }
            }
            progress!(
                "control plane: run {}, {} watchers each encoding",
                run + 1,
                count(most)
            );
            let reference = Config {
                load: WriteLoad {
                    writes: self.load.writes / 5,
                    ..self.load.clone()
                },
            };
            let naive = measure(most, &reference, Encoding::PerWatcher, false);
            gathered.naive.push(naive.writes_per_second);
            gathered.encode_micros.push(encode_cost());
        }
        gathered
    }

    fn report(&self, gathered: Gathered, report: &mut Report, seconds: f64) {
        let tables = vec![self.table(&gathered), self.reference_table(&gathered)];
        let mut notes = Vec::new();
        let mut summary = Vec::new();
        if let (Some(first), Some(last)) = (gathered.figures.first(), gathered.figures.last()) {
            self.compare(&gathered, (first, last), report, &mut notes);
            summary = self.summary(first, last);
        }
        notes.push(self.latency_note());
        for (i, n) in self.load.watchers.iter().enumerate() {
            report.series(
                "control plane: commit → watcher",
                &format!("{} watcher{}", count(*n), plural(*n)),
                gathered.pooled[i].shape(),
            );
        }
        report.sections.push(Section {
            title: "Demo control plane: writes and watchers".into(),
            method: self.method(),
            tables,
            notes,
            summary,
            seconds,
        });
    }
}

/// Nanoseconds each watcher beyond the first adds to a write call, run by run.
fn per_extra_watcher(first: &Figures, last: &Figures, most: usize) -> Spread {
    Spread {
        runs: last
            .write_call_micros
            .runs
            .iter()
            .zip(&first.write_call_micros.runs)
            .map(|(a, b)| (a - b) / (most as f64 - 1.0).max(1.0) * 1000.0)
            .collect(),
    }
}

struct Measured {
    writes_per_second: f64,
    write_call_micros: f64,
    bytes_per_watcher: f64,
    latency: Option<Histogram>,
}

/// One control plane with `n` watchers: throughput, then (when `paced`) latency.
fn measure(n: usize, config: &Config, encoding: Encoding, paced: bool) -> Measured {
    let cp = ControlPlane::new(Clock::system());
    for i in 0..OBJECTS {
        cp.create(PODS, pod(&pod_name(i), 0))
            .expect("a fresh store takes the pods");
    }
    let before = live_bytes();
    let receivers: Vec<mpsc::Receiver<Delivery>> = (0..n)
        .map(|i| {
            cp.watch_named(&format!("w{i}"), PODS, Some(cp.revision()), None)
                .expect("a watch from the current revision starts")
        })
        .collect();
    let bytes_per_watcher = live_bytes().saturating_sub(before) as f64 / n as f64;

    let watchers = Watchers::start(receivers, encoding);
    let mut counter = 0u64;
    let mut write = |cp: &ControlPlane| {
        counter += 1;
        let name = pod_name(counter as usize % OBJECTS);
        let object = pod(&name, counter);
        let t = Instant::now();
        cp.update(PODS, object).expect("the pod exists");
        t.elapsed()
    };
    // Warm up: allocations, the watch cache's window growing, caches.
    for _ in 0..(2 * BATCH) {
        write(&cp);
    }
    let mut expected = (2 * BATCH * n) as u64;
    watchers.wait_for(expected);

    let started = Instant::now();
    let mut in_calls = Duration::ZERO;
    let batches = config.load.writes.div_ceil(BATCH);
    for _ in 0..batches {
        for _ in 0..BATCH {
            in_calls += write(&cp);
        }
        expected += (BATCH * n) as u64;
        watchers.wait_for(expected);
    }
    let elapsed = started.elapsed();
    let writes = (batches * BATCH) as f64;

    let latency = paced.then(|| {
        watchers.recording.store(true, Ordering::Relaxed);
        let period = Duration::from_secs_f64(1.0 / PACED_RATE);
        let start = Instant::now();
        for i in 0..config.load.paced_writes {
            let due = start + period * i as u32;
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            write(&cp);
        }
        expected += (config.load.paced_writes * n) as u64;
        watchers.wait_for(expected);
        watchers.recording.store(false, Ordering::Relaxed);
        let h = Histogram::new();
        h.merge(&watchers.latency);
        h
    });
    drop(cp);
    watchers.join();
    Measured {
        writes_per_second: writes / elapsed.as_secs_f64(),
        write_call_micros: in_calls.as_secs_f64() * 1e6 / writes,
        bytes_per_watcher,
        latency,
    }
}

/// Every watcher as a task on one thread of its own.
struct Watchers {
    received: Arc<AtomicU64>,
    recording: Arc<AtomicBool>,
    latency: Arc<Histogram>,
    thread: std::thread::JoinHandle<()>,
}

impl Watchers {
    fn start(receivers: Vec<mpsc::Receiver<Delivery>>, encoding: Encoding) -> Watchers {
        let received = Arc::new(AtomicU64::new(0));
        let recording = Arc::new(AtomicBool::new(false));
        let latency = Arc::new(Histogram::new());
        let thread = {
            let (received, recording, latency) =
                (received.clone(), recording.clone(), latency.clone());
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .expect("a runtime");
                let local = tokio::task::LocalSet::new();
                for mut rx in receivers {
                    let (received, recording, latency) =
                        (received.clone(), recording.clone(), latency.clone());
                    local.spawn_local(async move {
                        let mut sent = 0usize;
                        while let Some(delivery) = rx.recv().await {
                            if recording.load(Ordering::Relaxed) {
                                let at = now_micros();
                                latency.record(at.saturating_sub(
                                    delivery.event.times.map_or(at, |t| t.committed_at),
                                ));
                            }
                            sent += match encoding {
                                Encoding::Shared => delivery.event.line().len(),
                                Encoding::PerWatcher => serde_json::to_vec(&*delivery.event.object)
                                    .map_or(0, |v| v.len()),
                            };
                            received.fetch_add(1, Ordering::Release);
                        }
                        std::hint::black_box(sent);
                    });
                }
                runtime.block_on(local);
            })
        };
        Watchers {
            received,
            recording,
            latency,
            thread,
        }
    }

    /// Waits until the watchers have taken `total` events between them.
    fn wait_for(&self, total: u64) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.received.load(Ordering::Acquire) < total {
            assert!(
                Instant::now() < deadline,
                "the watchers stopped receiving: {} of {total}",
                self.received.load(Ordering::Acquire)
            );
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    fn join(self) {
        let _ = self.thread.join();
    }
}

/// Microseconds to encode one event's object once (the median of many).
fn encode_cost() -> f64 {
    let object = pod(&pod_name(1), 1);
    let rounds = 2000;
    let start = Instant::now();
    for _ in 0..rounds {
        std::hint::black_box(serde_json::to_vec(std::hint::black_box(&object)).ok());
    }
    start.elapsed().as_secs_f64() * 1e6 / rounds as f64
}
