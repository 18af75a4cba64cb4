//! What `watchlife-tap` costs a controller: the example controller
//! (`examples/configmap-per-deployment`) on the demo, without its tap and
//! with it, side by side in one run.
//!
//! One `watchlife --demo --demo-idle --accept-taps` (its demo API is the
//! cluster the controller works on), and a second `watchlife` that accepts
//! taps only with a `--token` the tap does not send. Per run, the four
//! [`VARIANTS`] in turn (A, B, C, D, then again), so that whatever else the
//! machine does falls on all of them alike; each is a fresh controller with
//! a fresh journal, on a thread of its own with a current-thread runtime (as
//! in a process of its own; the tap's layer is that thread's subscriber):
//! - A: `run`, no tap and no tracing subscriber at all;
//! - B: `run_tapped`, its tap sending to the first watchlife;
//! - C: `run_tapped`, its tap sending where nobody listens;
//! - D: `run_tapped`, its tap sending to the watchlife that refuses it.
//!
//! Each variant creates [`Config::deployments`] Deployments of its own at 0
//! replicas, waits for their ConfigMaps and for the controller to go quiet,
//! then scales them all at once [`Config::rounds`] times, to 1 and 0 in turn
//! (the demo's own pods stay few). A change's latency runs from just before
//! its PATCH is sent to when the bench's own watch of ConfigMaps sees
//! `data.replicas` say the new count; the controller's throughput is the
//! reconciles its journal logged from the first PATCH to the last ConfigMap
//! seen, over that time. Then the controller stops and the bench deletes its
//! Deployments and ConfigMaps.

use crate::machine::{thread_cpu_time, thread_id};
use crate::process::{self, Watchlife};
use crate::report::{Report, Section, Table};
use crate::scenario::{Runs, Scenario, stopped_early};
use crate::stats::{Histogram, Spread, bytes, count, micros, num, ratio, times};
use configmap_per_deployment::{Journal, configmap_name, run, run_tapped};
use futures_util::StreamExt;
use futures_util::future::join_all;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, oneshot};
use tracing_subscriber::prelude::*;
use watchlife_live_heap::live_bytes;
use watchlife_tap::{Tap, TapConfig};

/// Deployments each variant scales at once: enough that a round keeps the
/// controller's reconciles running side by side (kube-runtime runs them
/// concurrently), few enough that the demo's own controllers, which react
/// to every scale too, finish a round in well under a second.
pub const DEPLOYMENTS: usize = 20;
/// Rounds of scaling per variant and run: 20 × 80 = 1,600 changes, so that
/// a run's p99 is its 16th slowest change, not its slowest, and a run's
/// reconciles (some 5,000) last a few seconds; the tap records some 20,000
/// frames, several times what its buffer holds, so that C and D drop. The
/// section (5 runs of 4 variants and a warm-up) takes about 90 s.
pub const ROUNDS: usize = 80;
/// With `--quick`: enough to see that every part works.
pub const QUICK_ROUNDS: usize = 4;

/// The namespace of the bench's Deployments, apart from the demo's own.
const NAMESPACE: &str = "bench-tap";
/// The token the refusing watchlife wants; the tap sends none.
const REFUSED_TOKEN: &str = "not-the-taps";
/// The controller's name, as its tap says it.
const CONTROLLER: &str = "bench";
/// No reconcile for this long: the controller is done with the Deployments
/// just created (and the demo with their first status), and the rounds may
/// begin.
const QUIET: Duration = Duration::from_millis(500);
/// How long a change may take to reach its ConfigMap before the run gives
/// up (a bound on waiting, never a measured result).
const PATIENCE: Duration = Duration::from_secs(60);

#[derive(Debug, Clone)]
pub struct Config {
    pub runs: usize,
    pub watchlife: PathBuf,
    pub deployments: usize,
    pub rounds: usize,
}

/// The controller as each variant runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    Untapped,
    Tapped,
    Away,
    Refused,
}

/// The variants, in the order each run measures them.
const VARIANTS: [Variant; 4] = [
    Variant::Untapped,
    Variant::Tapped,
    Variant::Away,
    Variant::Refused,
];

impl Variant {
    fn letter(self) -> &'static str {
        match self {
            Variant::Untapped => "a",
            Variant::Tapped => "b",
            Variant::Away => "c",
            Variant::Refused => "d",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Variant::Untapped => "A: without the tap (`run`)",
            Variant::Tapped => "B: with the tap, sending to watchlife",
            Variant::Away => "C: with the tap, watchlife away",
            Variant::Refused => "D: with the tap, watchlife refusing its token",
        }
    }

    /// Where its tap sends, if it has one.
    fn tap_url(self, targets: &Targets) -> Option<String> {
        match self {
            Variant::Untapped => None,
            Variant::Tapped => Some(targets.watchlife.clone()),
            Variant::Away => Some(targets.away.clone()),
            Variant::Refused => Some(targets.refusing.clone()),
        }
    }
}

/// Where the taps send.
struct Targets {
    /// The watchlife whose demo the controller works on.
    watchlife: String,
    /// A port nobody listens on.
    away: String,
    /// The watchlife that wants a token.
    refusing: String,
}

/// One variant's figures over the runs.
#[derive(Default)]
pub struct Figures {
    p50: Spread,
    p99: Spread,
    per_second: Spread,
    reconciles: Spread,
    /// CPU time of the controller's thread per reconcile, µs.
    cpu: Spread,
    heap: Spread,
    /// Frames the tap recorded per reconcile, over the whole variant.
    frames_per_reconcile: Spread,
    recorded: Spread,
    dropped: Spread,
    /// Frames watchlife relayed, and dropped over its rate (B only).
    relayed: Spread,
    over_rate: Spread,
    /// Every run's changes together, for the plot.
    pooled: Histogram,
}

/// One variant's run.
struct Trial {
    latencies: Histogram,
    /// Reconciles from the first PATCH to the last ConfigMap seen.
    reconciles: usize,
    seconds: f64,
    /// CPU time of the controller's thread over those seconds.
    cpu: Option<Duration>,
    /// Live heap growth from before the controller started to the last round.
    heap: f64,
    /// Reconciles from its start to its stop.
    all_reconciles: usize,
    tap: Option<TapCounts>,
}

/// What a tap counted when its controller stopped.
struct TapCounts {
    recorded: u64,
    dropped: u64,
}

impl Figures {
    fn add(&mut self, trial: &Trial) {
        self.p50.push(trial.latencies.quantile_or_nan(0.5));
        self.p99.push(trial.latencies.quantile_or_nan(0.99));
        self.per_second
            .push(trial.reconciles as f64 / trial.seconds);
        self.reconciles.push(trial.reconciles as f64);
        if let Some(cpu) = trial.cpu {
            self.cpu
                .push(cpu.as_secs_f64() * 1e6 / trial.reconciles as f64);
        }
        self.heap.push(trial.heap);
        self.pooled.merge(&trial.latencies);
        if let Some(tap) = &trial.tap {
            self.recorded.push(tap.recorded as f64);
            self.dropped.push(tap.dropped as f64);
            self.frames_per_reconcile
                .push(tap.recorded as f64 / trial.all_reconciles as f64);
        }
    }
}

type Gathered = Runs<Vec<Figures>>;

impl Scenario for Config {
    type Figures = Gathered;

    fn measure(&self) -> Gathered {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let mut figures: Vec<Figures> = VARIANTS.iter().map(|_| Figures::default()).collect();
        let failure = runtime.block_on(self.drive(&mut figures)).err();
        Runs { figures, failure }
    }

    fn report(&self, gathered: Gathered, report: &mut Report, seconds: f64) {
        let Runs { figures, failure } = gathered;
        let [untapped, tapped, ..] = &figures[..] else {
            unreachable!("one figure per variant");
        };
        let p99_added = difference(&tapped.p99, &untapped.p99);
        report.ratio_headline(
            "tap: the example controller's reconciles/s, its tap sending to watchlife ÷ \
             without the tap (goal ≥ 0.97×)",
            &tapped.per_second,
            &untapped.per_second,
        );
        report.ratio_headline(
            "tap: the example controller's CPU per reconcile (its thread), its tap sending \
             to watchlife ÷ without the tap",
            &tapped.cpu,
            &untapped.cpu,
        );
        report.headline(
            "tap: the example controller's scale → ConfigMap p99, its tap sending to \
             watchlife − without the tap (goal ≤ 50 µs)",
            p99_added.show(micros),
        );
        for (f, variant) in figures.iter().zip(VARIANTS) {
            report.series(
                "tap: scale PATCH → ConfigMap seen",
                variant.describe(),
                f.pooled.shape(),
            );
        }
        report
            .sections
            .push(self.section(&figures, failure, seconds));
    }
}

/// `b − a`, run by run.
fn difference(b: &Spread, a: &Spread) -> Spread {
    Spread {
        runs: b.runs.iter().zip(&a.runs).map(|(b, a)| b - a).collect(),
    }
}

impl Config {
    /// Starts both watchlifes, warms up, and measures every run; stops at
    /// the first failure.
    async fn drive(&self, figures: &mut [Figures]) -> Result<(), String> {
        progress!("tap: starting watchlife (the demo, accepting taps) and one refusing the tap");
        let demo = ["--demo", "--demo-idle", "--demo-api", "127.0.0.1:0"];
        let bridge = Watchlife::start(&self.watchlife, &[&demo[..], &["--accept-taps"]].concat())?;
        let refusing = Watchlife::start(
            &self.watchlife,
            &[&demo[..], &["--accept-taps", "--token", REFUSED_TOKEN]].concat(),
        )?;
        let targets = Targets {
            watchlife: format!("http://{}", bridge.addr),
            away: nobody_listens()?,
            refusing: format!("http://{}", refusing.addr),
        };
        let cluster = Cluster::connect(bridge.demo_kubeconfig()?).await?;
        progress!("tap: a warm-up without the tap, not counted");
        self.trial(&cluster, Variant::Untapped, "warm-up", &targets)
            .await?;
        for run in 0..self.runs {
            progress!("tap: run {}/{}", run + 1, self.runs);
            for (variant, f) in VARIANTS.into_iter().zip(figures.iter_mut()) {
                let before = tap_frames(&bridge).await;
                let trial = self
                    .trial(&cluster, variant, &run.to_string(), &targets)
                    .await
                    .inspect_err(|e| progress!("tap failed: {e}"))?;
                if variant == Variant::Tapped {
                    let after = tap_frames(&bridge).await;
                    f.relayed.push(after.0 - before.0);
                    f.over_rate.push(after.1 - before.1);
                }
                f.add(&trial);
            }
        }
        Ok(())
    }

    /// One variant's run: a fresh controller, its Deployments, the rounds.
    async fn trial(
        &self,
        cluster: &Cluster,
        variant: Variant,
        run: &str,
        targets: &Targets,
    ) -> Result<Trial, String> {
        let names: Vec<String> = (0..self.deployments)
            .map(|i| format!("tap-{run}-{}-{i}", variant.letter()))
            .collect();
        let latencies = Histogram::new();
        let heap_before = live_bytes();
        let controller = Controller::start(cluster.kubeconfig.clone(), variant.tap_url(targets));
        let measured = self
            .rounds(cluster, &controller, &names, latencies, heap_before)
            .await;
        let all_reconciles = controller.reconciles();
        let tap = controller.stop();
        let deleted = cluster.delete_all(&names).await;
        let trial = measured?;
        deleted?;
        Ok(Trial {
            all_reconciles,
            tap: tap?,
            ..trial
        })
    }

    /// Creates the Deployments `names`, waits for the controller to be done
    /// with them, and scales them all at once, round after round.
    async fn rounds(
        &self,
        cluster: &Cluster,
        controller: &Controller,
        names: &[String],
        latencies: Histogram,
        heap_before: usize,
    ) -> Result<Trial, String> {
        cluster.create_all(names).await?;
        controller.quiet().await;
        cluster.take_latencies();
        let before = controller.reconciles();
        let cpu_before = controller.cpu();
        let first = Instant::now();
        for round in 0..self.rounds {
            // 1, 0, 1, …: created at 0.
            cluster.scale_all(names, (round % 2 == 0).into()).await?;
            for latency in cluster.take_latencies() {
                latencies.record(latency);
            }
        }
        let last = cluster.last_seen().unwrap_or(first);
        let reconciles = controller.reconciles() - before;
        let cpu = controller
            .cpu()
            .zip(cpu_before)
            .map(|(after, before)| after.saturating_sub(before));
        Ok(Trial {
            latencies,
            reconciles,
            seconds: last.duration_since(first).as_secs_f64(),
            cpu,
            heap: live_bytes() as f64 - heap_before as f64,
            all_reconciles: 0,
            tap: None,
        })
    }

    fn section(&self, figures: &[Figures], failure: Option<String>, seconds: f64) -> Section {
        let untapped = &figures[0];
        let mut table = Table::new(
            "",
            &[
                "controller",
                "reconciles/s",
                "÷ A, run by run",
                "scale → ConfigMap p50",
                "p99",
                "p99 − A's, run by run",
                "reconciles in the rounds",
                "controller's CPU per reconcile",
                "live heap growth",
            ],
        );
        for (f, variant) in figures.iter().zip(VARIANTS) {
            let against_a = |cell: String| {
                if variant == Variant::Untapped {
                    "–".to_string()
                } else {
                    cell
                }
            };
            table.row(vec![
                variant.describe().into(),
                f.per_second.show(num),
                against_a(ratio(&f.per_second, &untapped.per_second).show(times)),
                f.p50.show(micros),
                f.p99.show(micros),
                against_a(difference(&f.p99, &untapped.p99).show(micros)),
                f.reconciles.show(|v| count(v as usize)),
                f.cpu.show(micros),
                f.heap.show(bytes),
            ]);
        }
        let mut frames = Table::new(
            "The tap's frames, per run:",
            &[
                "controller",
                "frames recorded",
                "per reconcile",
                "dropped by the tap",
                "relayed by watchlife",
                "dropped by watchlife (over its 1,000/s)",
            ],
        );
        for (f, variant) in figures.iter().zip(VARIANTS).skip(1) {
            let whole = |v: f64| count(v as usize);
            frames.row(vec![
                variant.describe().into(),
                f.recorded.show(whole),
                f.frames_per_reconcile.show(num),
                f.dropped.show(whole),
                f.relayed.show(whole),
                f.over_rate.show(whole),
            ]);
        }
        let mut notes = self.notes(figures);
        notes.extend(stopped_early(failure.as_deref()));
        Section {
            title: "What watchlife-tap costs a controller".into(),
            method: self.method(),
            tables: vec![table, frames],
            notes,
            summary: summary(figures),
            seconds,
        }
    }

    fn method(&self) -> String {
        format!(
            "The example controller of `examples/configmap-per-deployment` (a ConfigMap per \
             Deployment holding its replica count, server-side applied) on the demo API of \
             `{} --demo --demo-idle --accept-taps`, in the bench's process, on a thread of its \
             own with a current-thread runtime. Four variants, each run measuring them in \
             turn (A, B, C, D, then again) with a fresh controller and journal: A without the \
             tap (`run`, no tracing subscriber at all); B with it (`run_tapped`, the tap's \
             layer that thread's subscriber) sending to that watchlife; C with it sending to \
             a port nobody listens on; D with it sending to a second `watchlife --demo \
             --demo-idle --accept-taps --token T`, which refuses it. Each variant creates {} \
             Deployments of its own at 0 replicas, waits for their ConfigMaps and for {} ms \
             without a reconcile, then scales all of them at once, {} rounds, to 1 and 0 in \
             turn, each round waiting for every ConfigMap: {} changes a run. Latency: from \
             just before a change's PATCH is sent to when the bench's watch of ConfigMaps \
             (kube-rs's `watcher`) sees `data.replicas` say the new count. Throughput: the \
             reconciles the controller's journal logged from the first PATCH to the last \
             ConfigMap seen, over that time. One variant A first, not counted, warms up. {} \
             runs.",
            self.watchlife.display(),
            self.deployments,
            QUIET.as_millis(),
            self.rounds,
            count(self.deployments * self.rounds),
            self.runs
        )
    }

    fn notes(&self, figures: &[Figures]) -> Vec<String> {
        let (untapped, tapped) = (&figures[0], &figures[1]);
        let throughput = ratio(&tapped.per_second, &untapped.per_second);
        let p99_added = difference(&tapped.p99, &untapped.p99);
        let cpu_added = difference(&tapped.cpu, &untapped.cpu);
        let refused = &figures[3];
        vec![
            format!(
                "**Against the goal** (the tap costs at most 3% of the controller's \
                 throughput and adds at most 50 µs at p99): B ÷ A is {} and B − A at p99 \
                 {}. A change takes milliseconds end to end (the PATCH, the demo's watch, \
                 the reconcile's own server-side apply, the bench's watch), and A's p99 \
                 alone, of {} changes a run, moves over {}–{} from run to run: far more \
                 than 50 µs, so neither this p99 nor this throughput can tell whether the \
                 goal is met; they would show a cost of several milliseconds or of 10%. \
                 The figure with the least noise is the CPU the controller's thread spends \
                 per reconcile (its `/proc/self/task/TID/schedstat`, in ns; the tap's \
                 sending task runs on that thread too): B − A is {} per reconcile, which \
                 a controller bound by its own CPU would pay in throughput.",
                throughput.show(times),
                p99_added.show(micros),
                count(self.deployments * self.rounds),
                micros(untapped.p99.min()),
                micros(untapped.p99.max()),
                cpu_added.show(micros)
            ),
            format!(
                "**Where the tap's CPU goes.** D − A is recording alone, {} per reconcile: \
                 the layer, the wrappers and each frame handed to the buffer, never sent \
                 (that watchlife refuses the tap). B − D is sending, {} per reconcile: each \
                 frame serialized to JSON and written to the WebSocket, one write and one \
                 flush a frame, on the controller's thread.",
                difference(&refused.cpu, &untapped.cpu).show(micros),
                difference(&tapped.cpu, &refused.cpu).show(micros)
            ),
            "**What B − A holds.** Everything the tap adds to a controller: its `tracing` \
             layer and the registry under it (A has no subscriber, so kube-runtime's and \
             kube-client's spans cost it nothing), the wrappers of the watcher streams, the \
             reconciler and the error policy, a frame built and handed over per record \
             (a `try_send`, never a wait), and the tap's sending task, all on the \
             controller's one thread; and watchlife reading and relaying those frames on \
             the same two cores as the demo API. A controller that already has a \
             subscriber for its logs pays the registry's part of this without the tap."
                .into(),
            "**What shares the machine.** The demo's own controllers (Deployments, \
             ReplicaSets, the scheduler, the kubelet, the garbage collector) react to every \
             scale in the watchlife process that serves the API; the second watchlife idles \
             beside it; the bench's own watch and PATCHes run on the bench's main thread. \
             All of it is the same for every variant, and the interleaving spreads other \
             work on the machine over all four alike. The controller's throughput is of a \
             closed loop (each round waits for every ConfigMap), so it is bounded by a \
             round's latency rather than by the controller's CPU: the ratio says how much \
             slower the same work got, not how many reconciles a tapped controller could \
             do flat out."
                .into(),
            "**Memory.** The controller runs inside the bench, so the process's resident \
             memory is the bench's and is not reported. The live heap growth is counted by \
             the bench's allocator from just before the controller starts to the last \
             round: the controller's client, caches and journal, and (B, C, D) the tap with \
             the frames it holds; the bench's own watch is the same in every variant. With \
             watchlife away or refusing, the tap holds up to its 4,096 frames \
             (`watchlife_tap::BUFFER_FRAMES`) and drops the rest, counted: that buffer is \
             most of C's and D's growth over B."
                .into(),
            format!(
                "**Drops.** C and D count what their tap dropped (`Tap::dropped`) when the \
                 controller stops: every frame beyond the buffer's 4,096, since nothing is \
                 ever sent. B's tap drops nothing while watchlife reads; watchlife itself \
                 drops what a tap sends over 1,000 frames a second (after a burst of \
                 4,096), counted in its `/metrics` \
                 (`watchlife_tap_frames_total{{outcome=\"over_rate\"}}`), shown beside: \
                 in the rounds B sends some {} frames a second ({} reconciles/s × {} \
                 frames each).",
                num(tapped.per_second.median() * tapped.frames_per_reconcile.median()),
                num(tapped.per_second.median()),
                num(tapped.frames_per_reconcile.median())
            ),
        ]
    }
}

/// The lines of the screen summary.
fn summary(figures: &[Figures]) -> Vec<String> {
    let (untapped, tapped) = (&figures[0], &figures[1]);
    let mut lines = vec![format!(
        "reconciles/s with the tap ÷ without: {}, p99 with − without: {} (p99 without: {})",
        times(ratio(&tapped.per_second, &untapped.per_second).median()),
        micros(difference(&tapped.p99, &untapped.p99).median()),
        micros(untapped.p99.median())
    )];
    for (f, variant) in figures.iter().zip(VARIANTS).skip(2) {
        lines.push(format!(
            "{}: {} frames dropped of {}",
            variant.describe(),
            count(f.dropped.median() as usize),
            count(f.recorded.median() as usize)
        ));
    }
    lines
}

/// A URL where nobody listens: a port just freed.
fn nobody_listens() -> Result<String, String> {
    let freed = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let addr = freed.local_addr().map_err(|e| e.to_string())?;
    Ok(format!("http://{addr}"))
}

/// The frames taps sent to `bridge` so far: (relayed, dropped over the rate).
async fn tap_frames(bridge: &Watchlife) -> (f64, f64) {
    let text = process::get(bridge.addr, "/metrics")
        .await
        .unwrap_or_default();
    let outcome = |o: &str| {
        process::metric(
            &text,
            &format!("watchlife_tap_frames_total{{outcome=\"{o}\"}}"),
        )
        .unwrap_or(f64::NAN)
    };
    (outcome("relayed"), outcome("over_rate"))
}

/// A kube client of the cluster a kubeconfig names.
async fn client(kubeconfig: &Path) -> Result<Client, String> {
    let kubeconfig = Kubeconfig::read_from(kubeconfig).map_err(|e| e.to_string())?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| e.to_string())?;
    Client::try_from(config).map_err(|e| e.to_string())
}

/// A controller on a thread of its own, stopped by [`Controller::stop`].
struct Controller {
    journal: Journal,
    /// Its thread's id, for its CPU time.
    thread_id: Option<u32>,
    stop: oneshot::Sender<()>,
    thread: std::thread::JoinHandle<Result<Option<TapCounts>, String>>,
}

impl Controller {
    /// Starts the example controller on the cluster of `kubeconfig`, with a
    /// tap sending to `tap` if given.
    fn start(kubeconfig: PathBuf, tap: Option<String>) -> Controller {
        let journal = Journal::keeping();
        let kept = journal.clone();
        let (stop, stopped) = oneshot::channel();
        let (tell_id, id) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("tap-controller".into())
            .spawn(move || {
                let _ = tell_id.send(thread_id());
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| e.to_string())?
                    .block_on(control(kubeconfig, tap, kept, stopped))
            })
            .expect("a thread");
        Controller {
            journal,
            thread_id: id.recv().ok().flatten(),
            stop,
            thread,
        }
    }

    /// CPU time its thread has used so far.
    fn cpu(&self) -> Option<Duration> {
        thread_cpu_time(self.thread_id?)
    }

    /// Reconciles its journal logged so far.
    fn reconciles(&self) -> usize {
        self.journal.entries().len()
    }

    /// Waits until it has reconciled nothing for [`QUIET`] (at most
    /// [`PATIENCE`]).
    async fn quiet(&self) {
        let deadline = Instant::now() + PATIENCE;
        let mut last = self.reconciles();
        while Instant::now() < deadline {
            tokio::time::sleep(QUIET).await;
            let now = self.reconciles();
            if now == last {
                return;
            }
            last = now;
        }
    }

    /// Stops it; what its tap counted, if it has one.
    fn stop(self) -> Result<Option<TapCounts>, String> {
        let _ = self.stop.send(());
        self.thread
            .join()
            .map_err(|_| "the controller's thread panicked".to_string())?
    }
}

/// Runs the controller until `stopped`, with a tap sending to `tap` if
/// given, its layer this thread's subscriber.
async fn control(
    kubeconfig: PathBuf,
    tap: Option<String>,
    journal: Journal,
    stopped: oneshot::Receiver<()>,
) -> Result<Option<TapCounts>, String> {
    let Some(url) = tap else {
        let client = client(&kubeconfig).await?;
        tokio::select! {
            () = run(client, journal) => {}
            _ = stopped => {}
        }
        return Ok(None);
    };
    let tap = Tap::connect(TapConfig::new(url, CONTROLLER)).map_err(|e| e.to_string())?;
    let _subscriber =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(tap.layer()));
    let client = client(&kubeconfig).await?;
    tokio::select! {
        () = run_tapped(client, journal, tap.clone()) => {}
        _ = stopped => {}
    }
    Ok(Some(TapCounts {
        recorded: tap.recorded(),
        dropped: tap.dropped(),
    }))
}

/// The demo's API as the bench drives it: its client, and its watch of the
/// ConfigMaps in [`NAMESPACE`].
struct Cluster {
    kubeconfig: PathBuf,
    client: Client,
    seen: Arc<Mutex<Seen>>,
    /// Told when the last change awaited is seen.
    all_seen: Arc<Notify>,
    watching: tokio::task::JoinHandle<()>,
}

/// Changes sent and not yet seen, and what was seen.
#[derive(Default)]
struct Seen {
    /// ConfigMap name → the replicas it should say, and when the PATCH left.
    awaited: HashMap<String, (String, Instant)>,
    /// Latencies of the changes seen since they were last taken, µs.
    latencies: Vec<u64>,
    /// When the last awaited change was seen.
    last: Option<Instant>,
}

impl Cluster {
    /// A client of the cluster, [`NAMESPACE`] made, its ConfigMaps watched.
    async fn connect(kubeconfig: PathBuf) -> Result<Cluster, String> {
        let client = client(&kubeconfig).await?;
        let namespace: Namespace = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}
        }))
        .map_err(|e| e.to_string())?;
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .map_err(|e| format!("creating namespace {NAMESPACE}: {e}"))?;
        let seen = Arc::new(Mutex::new(Seen::default()));
        let all_seen = Arc::new(Notify::new());
        let watching = tokio::spawn(watch(
            Api::namespaced(client.clone(), NAMESPACE),
            seen.clone(),
            all_seen.clone(),
        ));
        Ok(Cluster {
            kubeconfig,
            client,
            seen,
            all_seen,
            watching,
        })
    }

    fn deployments(&self) -> Api<Deployment> {
        Api::namespaced(self.client.clone(), NAMESPACE)
    }

    /// Awaits the ConfigMap of Deployment `name` saying `replicas`, from now.
    fn expect(&self, name: &str, replicas: i32) {
        self.seen
            .lock()
            .expect("not poisoned")
            .awaited
            .insert(configmap_name(name), (replicas.to_string(), Instant::now()));
    }

    /// Creates the Deployments `names` at 0 replicas, and waits for their
    /// ConfigMaps.
    async fn create_all(&self, names: &[String]) -> Result<(), String> {
        let api = self.deployments();
        let creates = names.iter().map(|name| {
            let api = &api;
            async move {
                let deployment: Deployment =
                    serde_json::from_value(crate::objects::deployment(name, NAMESPACE, 0))
                        .map_err(|e| e.to_string())?;
                self.expect(name, 0);
                api.create(&PostParams::default(), &deployment)
                    .await
                    .map_err(|e| format!("creating {name}: {e}"))
            }
        });
        join_all(creates)
            .await
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        self.all_seen().await
    }

    /// Scales the Deployments `names` to `replicas`, all at once, and waits
    /// for their ConfigMaps to say so.
    async fn scale_all(&self, names: &[String], replicas: i32) -> Result<(), String> {
        let api = self.deployments();
        let patch = serde_json::json!({"spec": {"replicas": replicas}});
        let scales = names.iter().map(|name| {
            let (api, patch) = (&api, &patch);
            async move {
                self.expect(name, replicas);
                api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
                    .await
                    .map_err(|e| format!("scaling {name}: {e}"))
            }
        });
        join_all(scales)
            .await
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        self.all_seen().await
    }

    /// Waits until every change awaited is seen (at most [`PATIENCE`]).
    async fn all_seen(&self) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let left = self.seen.lock().expect("not poisoned").awaited.len();
            if left == 0 {
                return Ok(());
            }
            tokio::time::timeout_at(deadline, self.all_seen.notified())
                .await
                .map_err(|_| format!("{left} ConfigMaps never said their new count"))?;
        }
    }

    /// The latencies seen since last taken, µs.
    fn take_latencies(&self) -> Vec<u64> {
        std::mem::take(&mut self.seen.lock().expect("not poisoned").latencies)
    }

    fn last_seen(&self) -> Option<Instant> {
        self.seen.lock().expect("not poisoned").last
    }

    /// Deletes the Deployments `names` and their ConfigMaps (the demo's
    /// garbage collector does not collect ConfigMaps).
    async fn delete_all(&self, names: &[String]) -> Result<(), String> {
        let deployments = self.deployments();
        let configmaps: Api<ConfigMap> = Api::namespaced(self.client.clone(), NAMESPACE);
        let params = DeleteParams::default();
        let deletes = names.iter().map(|name| {
            let (deployments, configmaps, params) = (&deployments, &configmaps, &params);
            async move {
                deployments
                    .delete(name, params)
                    .await
                    .map_err(|e| format!("deleting {name}: {e}"))?;
                configmaps
                    .delete(&configmap_name(name), params)
                    .await
                    .map_err(|e| format!("deleting {}: {e}", configmap_name(name)))?;
                Ok::<_, String>(())
            }
        });
        join_all(deletes).await.into_iter().collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.watching.abort();
    }
}

/// Watches the ConfigMaps of `api`: each awaited change seen, its latency.
async fn watch(api: Api<ConfigMap>, seen: Arc<Mutex<Seen>>, all_seen: Arc<Notify>) {
    let mut configmaps = std::pin::pin!(
        watcher(api, watcher::Config::default())
            .default_backoff()
            .applied_objects()
    );
    while let Some(configmap) = configmaps.next().await {
        let Ok(configmap) = configmap else {
            continue;
        };
        let at = Instant::now();
        let says = configmap.data.as_ref().and_then(|d| d.get("replicas"));
        let mut seen = seen.lock().expect("not poisoned");
        let name = configmap.name_any();
        let Some((replicas, sent)) = seen.awaited.get(&name) else {
            continue;
        };
        if says != Some(replicas) {
            continue;
        }
        let latency = u64::try_from(at.duration_since(*sent).as_micros()).unwrap_or(u64::MAX);
        seen.awaited.remove(&name);
        seen.latencies.push(latency);
        seen.last = Some(at);
        if seen.awaited.is_empty() {
            all_seen.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_difference_is_run_by_run() {
        let b = Spread {
            runs: vec![110.0, 205.0, 290.0],
        };
        let a = Spread {
            runs: vec![100.0, 200.0, 300.0],
        };
        assert_eq!(difference(&b, &a).runs, vec![10.0, 5.0, -10.0]);
        assert_eq!(difference(&b, &a).median(), 5.0);
    }
}
