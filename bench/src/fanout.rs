//! Fan-out: many real WebSocket viewers of one `watchlife --demo` process.
//!
//! The viewers are tokio-tungstenite clients in the bench process, added in
//! steps to one `watchlife`: 1, 100 and 1,000 viewers of the demo's story
//! at [`FULL_RATE`] changes per second; and a crowd (10,000 when the file
//! limit allows) of a demo with no story, while the bench writes a configmap
//! at each of [`CROWD_RATES`]. At each step, once the new viewers have caught
//! up, a window of [`WINDOW`] measures:
//!
//! - **delivery latency**: for every [`SAMPLE_EVERY`]th event frame a viewer
//!   reads, the time from the frame's `reflector` stage (the event's arrival
//!   from upstream) and from its `reconcile` stage (when the hub got it) to
//!   the read. Both clocks are this machine's;
//! - **what each viewer got**: event frames per viewer against the events
//!   the hub published, and `resync`s (a viewer that fell behind);
//! - **the cost**: CPU time of `watchlife` and of the bench (the viewers)
//!   over the window, and `watchlife`'s resident memory.
//!
//! Memory per viewer is measured as the crowd joins, before any write, when
//! nothing but the viewers makes the process grow.

use crate::bridge;
use crate::machine::{cpu_time, fd_limit, now_micros, rss_bytes};
use crate::process::{Watchlife, get, metric, metric_sum};
use crate::report::{Report, Section, Table};
use crate::scenario::{Scenario, stopped_early};
use crate::stats::{Histogram, Spread, bytes, count, micros, num, percent, plural, share};
use futures_util::StreamExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use watchlife_protocol::connection::split_batch;

/// How long each step is measured.
const WINDOW: Duration = Duration::from_secs(6);
/// How long new viewers get at least to take their snapshot before a window
/// starts; then they get up to [`SETTLE_MAX`] to catch up with the stream.
const SETTLE: Duration = Duration::from_secs(2);
const SETTLE_MAX: Duration = Duration::from_secs(20);
/// Viewers connecting at once.
const CONNECTING: usize = 64;
/// The demo's pace for up to 1,000 viewers.
const FULL_RATE: u32 = 1000;
/// Writes per second the bench makes for the largest crowd of viewers.
const CROWD_RATES: [u32; 3] = [10, 100, 1000];
/// File descriptors kept free for everything else in the bench.
const SPARE_FDS: u64 = 512;

#[derive(Debug, Clone)]
pub struct Config {
    pub runs: usize,
    pub watchlife: PathBuf,
    pub viewers: usize,
    pub quick: bool,
}

/// One measured step: `viewers` viewers of a demo at `rate` changes per second.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Step {
    viewers: usize,
    rate: u32,
}

#[derive(Default)]
pub struct Figures {
    reflector_p50: Spread,
    reflector_p99: Spread,
    hub_p50: Spread,
    hub_p99: Spread,
    informer_p50: Spread,
    published_per_second: Spread,
    delivered_share: Spread,
    resyncs_per_viewer_minute: Spread,
    cpu_percent: Spread,
    /// watchlife's CPU time per frame written to a viewer, and per message.
    cpu_per_frame: Spread,
    cpu_per_message: Spread,
    viewers_cpu_percent: Spread,
    rss: Spread,
    reflector: Histogram,
}

/// Per step, on a bridge with no workload.
#[derive(Default)]
pub struct Idle {
    rss_per_viewer: Spread,
    connects_per_second: Spread,
}

/// The steps one run measures, as the file limit and `--quick` allow.
struct Plan {
    /// The largest crowd this process can hold.
    crowd: usize,
    /// Viewers of the demo's story at [`FULL_RATE`].
    busy: Vec<Step>,
    /// The crowd, at each of the bench's write rates.
    crowded: Vec<Step>,
    /// Crowd sizes whose memory per viewer is measured.
    memory_steps: Vec<usize>,
    /// Why the crowd is smaller than asked, if it is.
    limited: Option<String>,
}

impl Plan {
    fn new(config: &Config) -> Plan {
        let limit = fd_limit();
        let affordable = limit.saturating_sub(SPARE_FDS) as usize;
        let crowd = config.viewers.min(affordable);
        let limited = (config.viewers > affordable).then(|| {
            format!(
                "This process may open {limit} files, so the largest step is {} viewers instead \
                 of {}: raise the limit (`ulimit -n`) to measure more.",
                count(crowd),
                count(config.viewers)
            )
        });
        // At the demo's full pace, up to 1,000 viewers: beyond that, every viewer
        // reading every event is more frames per second than two cores can write
        // and read (see the notes). The crowd gets paced writes instead.
        let mut busy: Vec<Step> = [1, 100, 1000]
            .into_iter()
            .filter(|n| *n <= crowd)
            .map(|viewers| Step {
                viewers,
                rate: FULL_RATE,
            })
            .collect();
        let mut crowded: Vec<Step> = CROWD_RATES
            .iter()
            .map(|&rate| Step {
                viewers: crowd,
                rate,
            })
            .collect();
        let mut memory_steps: Vec<usize> = [100, 1000, crowd]
            .into_iter()
            .filter(|n| *n <= crowd)
            .collect();
        memory_steps.dedup();
        if config.quick {
            busy.retain(|s| s.viewers <= 100);
            memory_steps.retain(|n| *n <= 1000);
            crowded = vec![Step {
                viewers: *memory_steps.last().unwrap_or(&1),
                rate: CROWD_RATES[0],
            }];
        }
        Plan {
            crowd,
            busy,
            crowded,
            memory_steps,
            limited,
        }
    }

    /// Every step with viewers under load: the busy ones, then the crowd's.
    fn steps(&self) -> Vec<Step> {
        self.busy.iter().chain(&self.crowded).copied().collect()
    }
}

/// What every run found.
pub struct Gathered {
    plan: Plan,
    /// One entry per step of [`Plan::steps`].
    figures: Vec<Figures>,
    /// One entry per step of [`Plan::memory_steps`].
    idle: Vec<Idle>,
    /// watchlife's CPU and frames published with no viewer.
    quiet_cpu: Spread,
    quiet_rate: Spread,
    /// Viewer connections that failed or were closed.
    failures: u64,
    /// Why the runs stopped early, if they did.
    failure: Option<String>,
}

impl Scenario for Config {
    type Figures = Gathered;

    fn measure(&self) -> Gathered {
        let plan = Plan::new(self);
        let runtime = crate::machine::two_thread_runtime();
        let mut gathered = Gathered {
            figures: plan.steps().iter().map(|_| Figures::default()).collect(),
            idle: plan.memory_steps.iter().map(|_| Idle::default()).collect(),
            plan,
            quiet_cpu: Spread::default(),
            quiet_rate: Spread::default(),
            failures: 0,
            failure: None,
        };
        for run in 0..self.runs {
            match runtime.block_on(self.one_run(run, &mut gathered)) {
                Ok(lost) => gathered.failures += lost,
                Err(e) => {
                    progress!("fan-out failed: {e}");
                    gathered.failure = Some(e);
                    break;
                }
            }
        }
        // The viewers' sockets close as the runtime goes.
        runtime.shutdown_timeout(Duration::from_secs(5));
        gathered
    }

    fn report(&self, gathered: Gathered, report: &mut Report, seconds: f64) {
        let tables = vec![steps_table(&gathered, report), memory_table(&gathered)];
        let notes = notes(&gathered);
        let summary = summary(&gathered);
        headlines(&gathered, report);
        report.sections.push(Section {
            title: "Fan-out: WebSocket viewers of one watchlife".into(),
            method: self.method(),
            tables,
            notes,
            summary,
            seconds,
        });
    }
}

impl Config {
    /// One run: the crowd on an idle demo, then the demo's story at full pace.
    /// Returns the viewer connections lost.
    async fn one_run(&self, run: usize, gathered: &mut Gathered) -> Result<u64, String> {
        let plan = &gathered.plan;
        progress!("fan-out: run {}/{}, the crowd", run + 1, self.runs);
        let (busy_figures, crowd_figures) = gathered.figures.split_at_mut(plan.busy.len());
        let rates: Vec<u32> = plan.crowded.iter().map(|s| s.rate).collect();
        let lost_crowd = crowd_run(
            self,
            &plan.memory_steps,
            &rates,
            &mut gathered.idle,
            crowd_figures,
        )
        .await?;
        progress!(
            "fan-out: run {}/{}, {FULL_RATE} changes/s",
            run + 1,
            self.runs
        );
        let (cpu, rate, lost) = busy_run(self, FULL_RATE, &plan.busy, busy_figures).await?;
        gathered.quiet_cpu.push(cpu);
        gathered.quiet_rate.push(rate);
        Ok(lost + lost_crowd)
    }

    fn method(&self) -> String {
        format!(
            "`{} --demo --demo-rate N` (its demo API on a free port), and real WebSocket \
             viewers (tokio-tungstenite, on two threads in the bench) added in steps to the \
             same process; each step is measured for {} s once the new viewers have caught up \
             with the stream (at least {} s, at most {} s more). A viewer asks \
             for batches as the page does, reads every frame of every message and looks only \
             at its type and stage times, without parsing the JSON; it records the delivery \
             times of every {}th event, a uniform sample (histograms shared by every viewer are \
             memory both cores contend for, on the cores the bridge is measured on). {} runs, \
             each with fresh `watchlife` processes.",
            self.watchlife.display(),
            WINDOW.as_secs(),
            SETTLE.as_secs(),
            SETTLE_MAX.as_secs(),
            SAMPLE_EVERY,
            self.runs
        )
    }
}

/// One row per step under load; each step's latencies go to the plot.
fn steps_table(gathered: &Gathered, report: &mut Report) -> Table {
    let mut table = Table::new(
        "",
        &[
            "viewers",
            "workload",
            "changes/s asked → events/s published",
            "upstream arrival → viewer p50",
            "p99",
            "hub → viewer p50",
            "p99",
            "upstream arrival → hub p50",
            "events each viewer got ÷ published",
            "resyncs per viewer-minute",
            "watchlife CPU (100% = one core)",
            "watchlife CPU per frame sent",
            "per message sent",
            "the viewers' CPU (the bench)",
            "watchlife RSS",
        ],
    );
    let busy = &gathered.plan.busy;
    for (f, s) in gathered.figures.iter().zip(&gathered.plan.steps()) {
        let workload = if busy.contains(s) {
            "the demo's story"
        } else {
            "the bench's writes"
        };
        table.row(vec![
            count(s.viewers),
            workload.to_string(),
            format!(
                "{} → {}",
                count(s.rate as usize),
                num(f.published_per_second.median())
            ),
            f.reflector_p50.show(micros),
            f.reflector_p99.show(micros),
            f.hub_p50.show(micros),
            f.hub_p99.show(micros),
            f.informer_p50.show(micros),
            f.delivered_share.show(share),
            f.resyncs_per_viewer_minute.show(num),
            f.cpu_percent.show(percent),
            f.cpu_per_frame.show(micros),
            f.cpu_per_message.show(micros),
            f.viewers_cpu_percent.show(percent),
            f.rss.show(bytes),
        ]);
        let changes = if busy.contains(s) {
            "changes"
        } else {
            "writes"
        };
        report.series(
            "fan-out: upstream arrival → WebSocket viewer",
            &format!(
                "{} viewer{}, {} {changes}/s",
                count(s.viewers),
                plural(s.viewers),
                count(s.rate as usize),
            ),
            f.reflector.shape(),
        );
    }
    table
}

/// Memory per viewer as the crowd joins an idle demo.
fn memory_table(gathered: &Gathered) -> Table {
    let mut memory = Table::new(
        "Memory per viewer, as the crowd joins `watchlife --demo --demo-idle` (no workload, \
         so nothing else grows meanwhile):",
        &["viewers", "RSS per viewer", "viewers connected per second"],
    );
    for (f, n) in gathered.idle.iter().zip(&gathered.plan.memory_steps) {
        memory.row(vec![
            count(*n),
            f.rss_per_viewer.show(bytes),
            f.connects_per_second.show(num),
        ]);
    }
    memory
}

fn notes(gathered: &Gathered) -> Vec<String> {
    let mut notes = vec![format!(
        "With no viewer, `watchlife --demo --demo-rate {FULL_RATE}` published {} stream \
         frames per second and used {} of a core: the demo's workload, its control plane, \
         its HTTP API and the bridge's list-watch of it all run in that one process. \
         \"Upstream arrival\" is the event's `reflector` stage, so that latency includes \
         the informer's stages before the hub; \"hub\" is its `reconcile` stage, right \
         before the hub publishes it, so that latency is the fan-out alone. \"Events each \
         viewer got\" counts, over the window, the event frames the viewers read against \
         those the hub published; a viewer still reading an earlier backlog can exceed \
         100%.",
        gathered.quiet_rate.show(num),
        gathered.quiet_cpu.show(percent)
    )];
    notes.extend(gathered.plan.limited.clone());
    notes.extend(informer_note(gathered));
    notes.push(crowd_note(gathered.plan.crowd));
    notes.push(
        "The viewers run in the bench, on the same two cores as `watchlife`: at the larger \
         steps they compete with it for CPU, and their reading is part of the latency."
            .to_string(),
    );
    if gathered.failures > 0 {
        notes.push(format!(
            "{} viewer connections failed or were closed by `watchlife` over all runs.",
            gathered.failures
        ));
    }
    notes.extend(stopped_early(gathered.failure.as_deref()));
    notes
}

/// The informer's share of the latency, step by step on the demo's story.
fn informer_note(gathered: &Gathered) -> Option<String> {
    let busy = &gathered.plan.busy;
    if busy.len() < 2 {
        return None;
    }
    let cells: Vec<String> = gathered.figures[..busy.len()]
        .iter()
        .zip(busy)
        .map(|(f, s)| {
            format!(
                "{} with {} viewer{}",
                micros(f.informer_p50.median()),
                count(s.viewers),
                plural(s.viewers)
            )
        })
        .collect();
    Some(format!(
        "**Where the time goes inside `watchlife`.** On the demo's story at {FULL_RATE} \
         changes/s, the time from an event's arrival at the Reflector to the hub (its \
         `reconcile` stage: the informer's FIFO, Indexer, handlers and workqueue) is, at the \
         median, {}. The source and the informer run on a runtime of their own, apart from \
         the viewers' connections, so a crowd slows them only by the CPU the kernel gives \
         the viewers' threads; what the viewers wait beyond that is the fan-out itself.",
        cells.join(", ")
    ))
}

/// How the crowd is paced, with the bridge's pacing rules.
fn crowd_note(crowd: usize) -> String {
    let pacing = bridge::ViewerPacing::describe(crowd);
    format!(
        "**The crowd.** Every viewer asks for batches (`/ws?batch=true`), as the page does, \
         and reads every frame of every message. A write per event to each of {} viewers at \
         {} writes/s would be {} million WebSocket messages a second through loopback, \
         written by `watchlife` and read by the bench on the same two cores; the bridge \
         paces each viewer's writes instead, so that all of them together stay under {} \
         messages a second (an interval of {} with {} viewers, never over {}), and frames \
         that arrive meanwhile share a message. Connecting a crowd that large to a demo \
         already running its story took minutes, so the crowd joins a demo with no story of \
         its own, and the bench then updates one configmap through the demo's API at {} \
         writes/s: one event, one frame per viewer, per write. Where the viewers cannot keep \
         up, the table shows it as a share of the events under 100% and as resyncs: the \
         bridge's slow-viewer policy (a bounded queue per viewer, then `resync` and a \
         snapshot) at work, while the upstream → hub time shows whether the stream itself \
         stayed on time.",
        count(crowd),
        count(*CROWD_RATES.last().unwrap_or(&1) as usize),
        num(crowd as f64 * *CROWD_RATES.last().unwrap_or(&1) as f64 / 1e6),
        count(pacing.writes_per_second as usize),
        micros(pacing.interval.as_micros() as f64),
        count(crowd),
        micros(pacing.max_interval.as_micros() as f64),
        CROWD_RATES.map(|r| count(r as usize)).join(", "),
    )
}

fn summary(gathered: &Gathered) -> Vec<String> {
    let mut summary = Vec::new();
    for (f, s) in gathered.figures.iter().zip(&gathered.plan.steps()) {
        summary.push(format!(
            "{} viewers at {}/s: upstream → viewer p50 {} p99 {}, hub → viewer p50 {}; got {:.0}% of events; CPU {:.0}%",
            count(s.viewers),
            count(s.rate as usize),
            micros(f.reflector_p50.median()),
            micros(f.reflector_p99.median()),
            micros(f.hub_p50.median()),
            f.delivered_share.median() * 100.0,
            f.cpu_percent.median()
        ));
    }
    if let (Some(f), Some(n)) = (gathered.idle.last(), gathered.plan.memory_steps.last()) {
        summary.push(format!(
            "memory per viewer at {}: {} (no workload)",
            count(*n),
            bytes(f.rss_per_viewer.median())
        ));
    }
    summary
}

/// The most viewers of the demo's story beside one, hub → viewer and upstream → hub.
fn headlines(gathered: &Gathered, report: &mut Report) {
    let busy = &gathered.plan.busy;
    let figures = &gathered.figures;
    let (Some(first), Some(last)) = (figures.first(), figures.get(busy.len().saturating_sub(1)))
    else {
        return;
    };
    let most = count(busy.last().map_or(1, |s| s.viewers));
    report.ratio_headline(
        format!("fan-out: hub → viewer p50, {most} viewers ÷ 1 viewer, at {FULL_RATE} changes/s"),
        &last.hub_p50,
        &first.hub_p50,
    );
    report.ratio_headline(
        format!(
            "fan-out: upstream arrival → hub p50 (the informer inside watchlife), {most} viewers ÷ 1 viewer"
        ),
        &last.informer_p50,
        &first.informer_p50,
    );
}

/// What every viewer task shares.
struct Shared {
    /// 0 when not recording; else the step's index + 1.
    recording: AtomicUsize,
    reflector: Vec<Histogram>,
    hub: Vec<Histogram>,
    informer: Vec<Histogram>,
    events: AtomicU64,
    resyncs: AtomicU64,
    failures: AtomicU64,
}

impl Shared {
    fn new(steps: usize) -> Shared {
        Shared {
            recording: AtomicUsize::new(0),
            reflector: (0..steps).map(|_| Histogram::new()).collect(),
            hub: (0..steps).map(|_| Histogram::new()).collect(),
            informer: (0..steps).map(|_| Histogram::new()).collect(),
            events: AtomicU64::new(0),
            resyncs: AtomicU64::new(0),
            failures: AtomicU64::new(0),
        }
    }
}

/// One `watchlife` at `rate`, viewers added step by step. Returns its CPU
/// (% of a core) and frames published per second with no viewer, and the
/// viewer connections that failed.
async fn busy_run(
    config: &Config,
    rate: u32,
    steps: &[Step],
    figures: &mut [Figures],
) -> Result<(f64, f64, u64), String> {
    let rate_arg = rate.to_string();
    let bridge =
        Watchlife::start_demo(&config.watchlife, &rate_arg, &["--max-viewers", "1000000"])?;
    // The demo's story takes a moment to reach its pace.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let quiet = window(&bridge, WINDOW / 2).await?;

    let shared = Arc::new(Shared::new(steps.len()));
    let mut viewers = Vec::new();
    let gate = Arc::new(Semaphore::new(CONNECTING));
    for (i, step) in steps.iter().enumerate() {
        let n = step.viewers;
        progress!("fan-out: {n} viewers");
        connect(&bridge, n, &mut viewers, &shared, &gate).await;
        settle(&bridge, &shared, n).await;
        measure_step(&bridge, &shared, i, n, &mut figures[i]).await?;
    }
    for v in &viewers {
        v.abort();
    }
    drop(bridge);
    Ok((
        quiet.cpu / quiet.seconds * 100.0,
        quiet.frames_published / quiet.seconds,
        shared.failures.load(Ordering::Relaxed),
    ))
}

/// Measures one step for [`WINDOW`]: the viewers' latency (recorded under
/// `i`), what they got, and the cost.
async fn measure_step(
    bridge: &Watchlife,
    shared: &Shared,
    i: usize,
    n: usize,
    f: &mut Figures,
) -> Result<(), String> {
    let pid = bridge.pid();
    let events_before = shared.events.load(Ordering::Relaxed);
    let resyncs_before = shared.resyncs.load(Ordering::Relaxed);
    shared.recording.store(i + 1, Ordering::Relaxed);
    let measured = window(bridge, WINDOW).await?;
    shared.recording.store(0, Ordering::Relaxed);
    let seconds = measured.seconds;
    let events = (shared.events.load(Ordering::Relaxed) - events_before) as f64;
    let resyncs = (shared.resyncs.load(Ordering::Relaxed) - resyncs_before) as f64;
    let rss = rss_bytes(pid).ok_or("watchlife is gone")? as f64;
    let q = |h: &Histogram, p: f64| h.quantile(p).unwrap_or(f64::NAN);
    f.reflector_p50.push(q(&shared.reflector[i], 0.5));
    f.reflector_p99.push(q(&shared.reflector[i], 0.99));
    f.hub_p50.push(q(&shared.hub[i], 0.5));
    f.hub_p99.push(q(&shared.hub[i], 0.99));
    f.informer_p50.push(q(&shared.informer[i], 0.5));
    f.reflector.merge(&shared.reflector[i]);
    f.published_per_second
        .push(measured.events_published / seconds);
    if measured.events_published > 0.0 {
        f.delivered_share
            .push(events / n as f64 / measured.events_published);
    }
    f.resyncs_per_viewer_minute
        .push(resyncs / n as f64 / seconds * 60.0);
    f.cpu_percent.push(measured.cpu / seconds * 100.0);
    if measured.frames_sent > 0.0 {
        f.cpu_per_frame
            .push(measured.cpu * 1e6 / measured.frames_sent);
        f.cpu_per_message
            .push(measured.cpu * 1e6 / measured.messages_sent.max(1.0));
    }
    f.viewers_cpu_percent
        .push(measured.viewers_cpu / seconds * 100.0);
    f.rss.push(rss);
    Ok(())
}

/// Waits [`SETTLE`], then until the `n` viewers read no more events than the
/// hub publishes (they have caught up with their snapshots and any backlog),
/// or [`SETTLE_MAX`] has passed.
async fn settle(bridge: &Watchlife, shared: &Shared, n: usize) {
    tokio::time::sleep(SETTLE).await;
    let deadline = Instant::now() + SETTLE_MAX;
    while Instant::now() < deadline {
        let before = shared.events.load(Ordering::Relaxed);
        let Ok(w) = window(bridge, Duration::from_secs(1)).await else {
            return;
        };
        let read = (shared.events.load(Ordering::Relaxed) - before) as f64 / n as f64;
        if read <= w.events_published * 1.05 + 1.0 {
            return;
        }
    }
}

/// Connects viewers until there are `n`; returns when each has connected or failed.
async fn connect(
    bridge: &Watchlife,
    n: usize,
    viewers: &mut Vec<tokio::task::JoinHandle<()>>,
    shared: &Arc<Shared>,
    gate: &Arc<Semaphore>,
) {
    while viewers.len() < n {
        let permit = gate.clone().acquire_owned().await.expect("never closed");
        // As the page asks: several frames to a message when they come fast.
        let url = format!("{}?batch=true", bridge.ws_url());
        let shared = shared.clone();
        viewers.push(tokio::spawn(async move {
            view(url, shared, permit).await;
        }));
    }
    // Every viewer has connected (or failed) once the gate is whole again.
    let all = gate
        .acquire_many(CONNECTING as u32)
        .await
        .expect("never closed");
    drop(all);
}

/// The crowd, on a demo with no workload of its own: memory per viewer as
/// viewers join (resident memory after each step, less before the first,
/// per viewer), then the crowd's latency while the bench writes a configmap
/// through the demo API at each of `rates` writes per second.
async fn crowd_run(
    config: &Config,
    steps: &[usize],
    rates: &[u32],
    idle: &mut [Idle],
    figures: &mut [Figures],
) -> Result<u64, String> {
    let api = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?;
    let api_arg = api.to_string();
    let bridge = Watchlife::start(
        &config.watchlife,
        &[
            "--demo",
            "--demo-idle",
            "--demo-api",
            &api_arg,
            "--max-viewers",
            "1000000",
        ],
    )?;
    let pid = bridge.pid();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = rss_bytes(pid).ok_or("no /proc entry for watchlife")? as f64;
    let shared = Arc::new(Shared::new(rates.len()));
    let gate = Arc::new(Semaphore::new(CONNECTING));
    let mut viewers = Vec::new();
    for (i, &n) in steps.iter().enumerate() {
        progress!("fan-out: {n} viewers, no workload");
        let (had, t) = (viewers.len(), Instant::now());
        connect(&bridge, n, &mut viewers, &shared, &gate).await;
        idle[i]
            .connects_per_second
            .push((n - had) as f64 / t.elapsed().as_secs_f64());
        tokio::time::sleep(SETTLE).await;
        let rss = rss_bytes(pid).ok_or("watchlife is gone")? as f64;
        idle[i].rss_per_viewer.push((rss - before) / n as f64);
    }
    let n = viewers.len();
    for (i, &rate) in rates.iter().enumerate() {
        progress!("fan-out: {n} viewers, {rate} writes/s");
        // The writer has a thread of its own: on the viewers' runtime, a
        // crowd busy reading would slow the writes it is measured against.
        let writer = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        writer.spawn(write_configmap(api, rate));
        settle(&bridge, &shared, n).await;
        let measured = measure_step(&bridge, &shared, i, n, &mut figures[i]).await;
        writer.shutdown_background();
        measured?;
    }
    for v in &viewers {
        v.abort();
    }
    Ok(shared.failures.load(Ordering::Relaxed))
}

/// Updates one configmap through the demo API, `rate` times a second, until
/// aborted: one MODIFIED event each.
async fn write_configmap(api: std::net::SocketAddr, rate: u32) {
    let path = "/api/v1/namespaces/default/configmaps";
    let object = |n: u64| crate::objects::numbered_configmap("bench-crowd", n);
    let _ = send(api, "POST", path, &object(0)).await;
    let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for n in 1.. {
        ticks.tick().await;
        let _ = send(api, "PUT", &format!("{path}/bench-crowd"), &object(n)).await;
    }
}

/// One HTTP/1.0 request with a JSON body; whether it was answered 2xx.
async fn send(api: std::net::SocketAddr, method: &str, path: &str, body: &str) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut stream) = tokio::net::TcpStream::connect(api).await else {
        return false;
    };
    let request = format!(
        "{method} {path} HTTP/1.0\r\nHost: {api}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    if stream.write_all(request.as_bytes()).await.is_err() {
        return false;
    }
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    answer.starts_with(b"HTTP/1.0 2") || answer.starts_with(b"HTTP/1.1 2")
}

struct Window {
    seconds: f64,
    cpu: f64,
    /// CPU time of the bench itself: the viewers, mostly.
    viewers_cpu: f64,
    frames_published: f64,
    events_published: f64,
    /// Frames written to viewers, and the WebSocket messages they went in.
    frames_sent: f64,
    messages_sent: f64,
}

/// Watches `watchlife` for `length`: its CPU time and what its hub published.
async fn window(bridge: &Watchlife, length: Duration) -> Result<Window, String> {
    let pid = bridge.pid();
    let read = || async {
        let m = get(bridge.addr, "/metrics").await.unwrap_or_default();
        (
            metric(&m, "watchlife_frames_published_total").unwrap_or(0.0),
            // Events that came out of the informer: what viewers count.
            metric_sum(
                &m,
                "watchlife_stage_latency_seconds_count{stage=\"reconcile\"}",
            ),
            metric(&m, "watchlife_frames_sent_total").unwrap_or(0.0),
            metric(&m, "watchlife_messages_sent_total").unwrap_or(0.0),
        )
    };
    let me = std::process::id();
    let cpu0 = cpu_time(pid).ok_or("watchlife is gone")?;
    let own0 = cpu_time(me).unwrap_or_default();
    let (frames0, events0, sent0, messages0) = read().await;
    let t0 = Instant::now();
    tokio::time::sleep(length).await;
    let cpu1 = cpu_time(pid).ok_or("watchlife is gone")?;
    let own1 = cpu_time(me).unwrap_or_default();
    let (frames1, events1, sent1, messages1) = read().await;
    Ok(Window {
        seconds: t0.elapsed().as_secs_f64(),
        cpu: (cpu1 - cpu0).as_secs_f64(),
        viewers_cpu: own1.saturating_sub(own0).as_secs_f64(),
        frames_published: frames1 - frames0,
        events_published: events1 - events0,
        frames_sent: sent1 - sent0,
        messages_sent: messages1 - messages0,
    })
}

/// One viewer: connects, then reads until aborted.
async fn view(url: String, shared: Arc<Shared>, permit: tokio::sync::OwnedSemaphorePermit) {
    let socket =
        tokio_tungstenite::connect_async_with_config(&url, Some(viewer_config()), true).await;
    drop(permit);
    let Ok((mut ws, _)) = socket else {
        shared.failures.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let mut tally = Tally::default();
    while let Some(message) = ws.next().await {
        let Ok(Message::Text(text)) = message else {
            if message.is_err() {
                shared.failures.fetch_add(1, Ordering::Relaxed);
                return;
            }
            continue;
        };
        let now = now_micros();
        let before = tally;
        for frame in split_batch(text.as_str()) {
            tally.read(frame, now, &shared);
        }
        tally.publish(before, &shared);
    }
}

/// A viewer's WebSocket settings: reads in chunks of [`READ_CHUNK`].
fn viewer_config() -> WebSocketConfig {
    WebSocketConfig::default().read_buffer_size(READ_CHUNK)
}

/// Bytes a viewer's socket reads at a time. tungstenite zeroes its read
/// buffer's free room before each read, and its default (128 KiB) made that
/// a tenth of the viewers' CPU; a batch message is at most 64 KiB.
const READ_CHUNK: usize = 16 * 1024;

/// Every how many events a viewer records the delivery times of one. The
/// crowd reads a million frames a second on the cores the bridge runs on;
/// a histogram shared by every viewer is a cache line both cores fight
/// over, so each viewer records a uniform sample (its every eighth event),
/// which leaves the percentiles as they are.
const SAMPLE_EVERY: u64 = 8;

/// What one viewer has read: its counts go to [`Shared`] once per message,
/// not once per frame, for the same reason as [`SAMPLE_EVERY`].
#[derive(Default, Clone, Copy)]
struct Tally {
    events: u64,
    resyncs: u64,
}

impl Tally {
    /// Counts one frame read at `now`, recording the delivery times of a
    /// sample of the events.
    fn read(&mut self, text: &str, now: u64, shared: &Shared) {
        match frame_type(text) {
            Some("event") => {
                // Only events that passed the informer (not BOOKMARKs).
                let Some(reconciled) = stage_at(text, Stamp::Reconcile) else {
                    return;
                };
                self.events += 1;
                let step = shared.recording.load(Ordering::Relaxed);
                if step > 0 && self.events.is_multiple_of(SAMPLE_EVERY) {
                    shared.hub[step - 1].record(now.saturating_sub(reconciled));
                    if let Some(at) = stage_at(text, Stamp::Reflector) {
                        shared.reflector[step - 1].record(now.saturating_sub(at));
                        shared.informer[step - 1].record(reconciled.saturating_sub(at));
                    }
                }
            }
            Some("resync") => self.resyncs += 1,
            _ => {}
        }
    }

    /// Adds what was read since `before` to the shared counts.
    fn publish(&self, before: Tally, shared: &Shared) {
        if self.events > before.events {
            shared
                .events
                .fetch_add(self.events - before.events, Ordering::Relaxed);
        }
        if self.resyncs > before.resyncs {
            shared
                .resyncs
                .fetch_add(self.resyncs - before.resyncs, Ordering::Relaxed);
        }
    }
}

/// The `type` of a frame as the bridge writes it: `{"seq":N,"type":"…"`.
fn frame_type(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("{\"seq\":")?;
    let rest = &rest[rest.find(",\"type\":\"")? + 9..];
    Some(&rest[..rest.find('"')?])
}

/// The stages a viewer reads the times of.
#[derive(Clone, Copy)]
enum Stamp {
    Reflector,
    Reconcile,
}

/// The viewers run on the same cores as the bridge they measure, so they
/// find stage times with searchers built once, from the frame's end (the
/// stages follow the object's body, whose text may hold anything): reading
/// a frame must cost far less than writing it, or the bench measures itself.
struct Finders {
    reflector: memchr::memmem::FinderRev<'static>,
    reconcile: memchr::memmem::FinderRev<'static>,
}

static FINDERS: std::sync::LazyLock<Finders> = std::sync::LazyLock::new(|| Finders {
    reflector: memchr::memmem::FinderRev::new("\"reflector\":{\"at\":"),
    reconcile: memchr::memmem::FinderRev::new("\"reconcile\":{\"at\":"),
});

/// The `at` of a stage in an event frame.
fn stage_at(frame: &str, stamp: Stamp) -> Option<u64> {
    let finder = match stamp {
        Stamp::Reflector => &FINDERS.reflector,
        Stamp::Reconcile => &FINDERS.reconcile,
    };
    let rest = &frame.as_bytes()[finder.rfind(frame.as_bytes())? + finder.needle().len()..];
    let digits = rest
        .iter()
        .position(|c| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_type_and_stage_times_without_parsing() {
        let frame = r#"{"seq":42,"type":"event","data":{"event":"MODIFIED","object":{"a":1},"stages":{"etcd":{"at":10},"reflector":{"at":1795338904500210},"reconcile":{"at":20,"depth":1}}}}"#;
        let batch = format!("{frame}\n{{\"seq\":43,\"type\":\"resync\",\"data\":{{}}}}\n");
        let types: Vec<_> = split_batch(&batch).map(frame_type).collect();
        assert_eq!(types, vec![Some("event"), Some("resync")]);
        assert_eq!(stage_at(frame, Stamp::Reflector), Some(1795338904500210));
        assert_eq!(stage_at(frame, Stamp::Reconcile), Some(20));
        let bookmark = r#"{"seq":3,"type":"event","data":{"event":"BOOKMARK","stages":{"reflector":{"at":5}}}}"#;
        assert_eq!(stage_at(bookmark, Stamp::Reconcile), None);
        // A body that holds the same text does not fool it: the stages come last.
        let odd = r#"{"seq":4,"type":"event","data":{"object":{"reconcile":{"at":1}},"stages":{"reconcile":{"at":9}},"handled":{"reconcile":{"worker":0}}}}"#;
        assert_eq!(stage_at(odd, Stamp::Reconcile), Some(9));
    }
}
