//! The bench's flags, and the sizes they choose.

use clap::Parser;
use std::path::PathBuf;

/// Measures watchlife and writes BENCHMARKS.md.
#[derive(Debug, Parser)]
pub struct Args {
    /// Where to write the report.
    #[arg(long, default_value = "BENCHMARKS.md")]
    pub out: PathBuf,
    /// Where to write the latency plot (SVG), relative to the report's folder.
    #[arg(long, default_value = "docs/bench/latency.svg")]
    pub plot: PathBuf,
    /// The `watchlife` binary the fan-out and LIST figures run.
    #[arg(long, default_value = "target/release/watchlife")]
    pub watchlife: PathBuf,
    /// The browser app as built (`make frontend`).
    #[arg(long, default_value = "dist")]
    pub dist: PathBuf,
    /// The folder `make embed` writes: the replay page, the player and the in-page demo.
    #[arg(long, default_value = "embed")]
    pub embed: PathBuf,
    /// Repetitions of each in-process measurement.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Repetitions of each measurement that runs the `watchlife` binary.
    #[arg(long, default_value_t = 3)]
    process_runs: usize,
    /// Most WebSocket viewers to connect at once.
    #[arg(long, default_value_t = 10_000)]
    pub viewers: usize,
    /// Small sizes and one run each: to check the bench itself, not to publish.
    #[arg(long)]
    pub quick: bool,
    /// Objects of the big-cluster measurement, one run each (comma
    /// separated; by default 10000,50000,150000, or 2000 with --quick).
    #[arg(long, value_delimiter = ',', env = "WATCHLIFE_BENCH_BIG_SIZES")]
    pub big_sizes: Vec<usize>,
    /// Idle viewers of the big-cluster measurement, in steps (comma
    /// separated; by default 1000,10000, or 100,1000 with --quick).
    #[arg(long, value_delimiter = ',')]
    pub big_viewers: Vec<usize>,
    /// Objects of the first-sync measurement (by default 150000, or 2000
    /// with --quick).
    #[arg(long)]
    pub first_sync_objects: Option<usize>,
    /// How long the phone section keeps the page open at the busier rate
    /// while it reads the tab's memory (by default 10 minutes, or 2 with
    /// --quick); longer shows whether growth levels off.
    #[arg(long)]
    pub soak_minutes: Option<u64>,
    /// Only these measurements (comma separated: controlplane,
    /// server-stages, apiserver, latency, etcd, upstream, fanout, pipeline,
    /// informer, scale, page, browser, phone, big-cluster, first-sync, wire,
    /// tap). The report then keeps what the file at --out holds of the
    /// others.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// The command to name in the report.
    #[arg(long, default_value = "make bench")]
    pub command: String,
}

impl Args {
    /// Repetitions of each in-process measurement: one with `--quick`.
    pub fn runs(&self) -> usize {
        if self.quick { 1 } else { self.runs.max(1) }
    }

    /// Repetitions of each measurement that runs the `watchlife` binary:
    /// one with `--quick`.
    pub fn process_runs(&self) -> usize {
        if self.quick {
            1
        } else {
            self.process_runs.max(1)
        }
    }

    /// `quick` with `--quick`, else `full`.
    pub fn sized<T>(&self, quick: T, full: T) -> T {
        if self.quick { quick } else { full }
    }

    /// Whether the run measures the section `name` (every one without `--only`).
    pub fn wants(&self, name: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o == name)
    }
}
