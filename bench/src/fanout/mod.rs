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

mod report;
mod runs;
mod viewer;
mod window;
mod writer;

use crate::crowd;
use crate::report::{Report, Section};
use crate::scenario::Scenario;
use crate::stats::{Histogram, Spread, count};
use report::{headlines, memory_table, notes, steps_table, summary};
use runs::{busy_run, crowd_run};
use std::path::PathBuf;
use std::time::Duration;
use viewer::{DECODE_EVERY, SAMPLE_EVERY};

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

#[derive(Debug, Clone)]
pub struct Config {
    pub runs: usize,
    pub watchlife: PathBuf,
    pub viewers: usize,
    pub quick: bool,
    /// The viewers take their frames as the page does: compressed, updates
    /// as merge patches (`compress=deflate&bodies=patch`).
    pub compress: bool,
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
    /// For the crowd: resident memory less the bridge's before any viewer,
    /// per viewer, while they read.
    rss_per_busy_viewer: Spread,
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
        let (limit, affordable) = crowd::affordable();
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
        headlines(&gathered, self.name(), report);
        let title = match self.compress {
            false => "Fan-out: WebSocket viewers of one watchlife",
            true => "Fan-out, compressed: the same viewers taking `compress=deflate&bodies=patch`",
        };
        report.sections.push(Section {
            title: title.into(),
            method: self.method(),
            tables,
            notes,
            summary,
            seconds,
        });
    }
}

impl Config {
    /// The name its headlines go by.
    fn name(&self) -> &'static str {
        match self.compress {
            false => "fan-out",
            true => "fan-out (compressed)",
        }
    }

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
             each with fresh `watchlife` processes.{}",
            self.watchlife.display(),
            WINDOW.as_secs(),
            SETTLE.as_secs(),
            SETTLE_MAX.as_secs(),
            SAMPLE_EVERY,
            self.runs,
            if self.compress {
                format!(
                    " Every viewer asks for its frames as the page does, compressed and \
                     updates as merge patches (`&compress=deflate&bodies=patch`), and \
                     takes every byte of every message; one in {DECODE_EVERY}, by order of \
                     joining, decompresses them as a page does and reads its frames, and the \
                     counts and delivery times are theirs (inflating every viewer's stream, \
                     1.7 GB/s at 10,000 viewers and 100 events/s, is more than the bench's \
                     share of the cores: it measured itself). The bridge writes the same bytes \
                     to every viewer either way."
                )
            } else {
                String::new()
            }
        )
    }
}

/// The fan-out measured twice in one bench run: viewers that take their
/// frames uncompressed, then the same steps with viewers that take them
/// compressed, as the page does; their CPU per frame compared step by step.
pub struct Compared {
    pub plain: Config,
    pub compressed: Config,
}

impl Scenario for Compared {
    /// Each half's figures and the seconds it took.
    type Figures = ((Gathered, f64), (Gathered, f64));

    fn measure(&self) -> Self::Figures {
        let timed = |config: &Config| {
            let started = std::time::Instant::now();
            let gathered = config.measure();
            (gathered, started.elapsed().as_secs_f64())
        };
        (timed(&self.plain), timed(&self.compressed))
    }

    fn report(&self, (plain, compressed): Self::Figures, report: &mut Report, _seconds: f64) {
        compare_cpu(&plain.0, &compressed.0, report);
        self.plain.report(plain.0, report, plain.1);
        self.compressed.report(compressed.0, report, compressed.1);
    }
}

/// Headlines of watchlife's CPU per frame sent, compressed ÷ uncompressed,
/// at the largest busy step and at the crowd with 100 writes a second.
fn compare_cpu(plain: &Gathered, compressed: &Gathered, report: &mut Report) {
    let busy = plain.plan.busy.len();
    for (i, step) in plain.plan.steps().iter().enumerate() {
        let compared = if i < busy {
            i + 1 == busy
        } else {
            step.rate == CROWD_RATES[1]
        };
        let (Some(p), Some(c)) = (plain.figures.get(i), compressed.figures.get(i)) else {
            continue;
        };
        if compared && compressed.plan.steps().get(i) == Some(step) {
            report.ratio_headline(
                format!(
                    "fan-out: watchlife CPU per frame sent, compressed ÷ uncompressed, {} viewers at {} changes/s",
                    count(step.viewers),
                    step.rate
                ),
                &c.cpu_per_frame,
                &p.cpu_per_frame,
            );
        }
    }
}
