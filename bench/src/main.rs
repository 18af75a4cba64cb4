//! `make bench`: measures watchlife against its references in one run, on
//! one machine, and writes BENCHMARKS.md and a plot of the latencies.
//!
//! # Layout
//! - [`controlplane`]: the demo control plane's writes with 1, 100, 1,000 watchers.
//! - [`fanout`]: many WebSocket viewers of one `watchlife` process.
//! - [`pipeline`]: watch bytes → FIFO → Indexer → handlers → workqueue → reconcile on one core;
//!   [`kube_watcher`], kube-rs's watcher and reflector on the same bytes.
//! - [`informer`]: the bridge's informer pipeline under a steady load, stage by stage; a
//!   slow handler's cost to the other listeners; LISTs per fault beside client-go.
//! - [`scale`]: memory per cached object, and the initial LIST of 150k objects.
//! - [`page`]: the browser app's weight, gzipped; [`browser`]: its frame rate under load.
//! - [`apiserver`]: the demo API beside kube-apiserver + etcd, with 1, 100, 1,000 watchers.
//! - [`kubectl_latency`]: on kube-apiserver, the same writes seen by `kubectl get -w`,
//!   watchlife's Reflector, a WebSocket viewer and the page.
//! - [`big_cluster`]: on kube-apiserver, 10k–150k configmaps written straight into etcd: the
//!   bridge's LIST and memory per object, a new viewer's snapshot, the page, idle viewers.
//! - [`first_sync`]: on a v1.36 apiserver, 150k custom objects written straight into etcd: the
//!   first sync of watchlife and of client-go v0.36.4's informer, streaming list beside
//!   LIST+WATCH.
//! - [`etcd_order`]: on kube-apiserver with `--etcd-endpoints`, whether etcd's notification
//!   of a write reaches watchlife before the Reflector's event.
//! - [`upstream_cost`]: watches and apiserver/etcd CPU with 1, 100, 1,000 viewers,
//!   watchlife beside a naive relay.
//! - [`stats`], [`alloc`], [`machine`]: percentiles and spread, heap counting, `/proc`.
//! - [`report`] and [`plot`]: BENCHMARKS.md, the summary, and the SVG; [`merge`]: a run of
//!   some sections (`--only`) put into the BENCHMARKS.md of an earlier run.

/// Prints a progress line with the time since the bench started.
macro_rules! progress {
    ($($arg:tt)*) => {
        eprintln!("[bench {:>5.0} s] {}", crate::started().elapsed().as_secs_f64(), format!($($arg)*))
    };
}

mod alloc;
mod apiserver;
mod big_cluster;
mod browser;
mod controlplane;
mod etcd_order;
mod fanout;
mod first_sync;
mod informer;
mod kube_watcher;
mod kubectl_latency;
mod machine;
mod merge;
mod objects;
mod page;
mod pipeline;
mod plot;
mod process;
mod report;
mod scale;
mod server_stages;
mod stats;
mod upstream_cost;

use clap::Parser;
use report::Report;
use std::path::PathBuf;
use std::time::Instant;

/// When the bench started.
fn started() -> Instant {
    static STARTED: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *STARTED.get_or_init(Instant::now)
}

#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

/// Measures watchlife and writes BENCHMARKS.md.
#[derive(Debug, Parser)]
struct Args {
    /// Where to write the report.
    #[arg(long, default_value = "BENCHMARKS.md")]
    out: PathBuf,
    /// Where to write the latency plot (SVG), relative to the report's folder.
    #[arg(long, default_value = "docs/bench/latency.svg")]
    plot: PathBuf,
    /// The `watchlife` binary the fan-out and LIST figures run.
    #[arg(long, default_value = "target/release/watchlife")]
    watchlife: PathBuf,
    /// The browser app as built (`make frontend`).
    #[arg(long, default_value = "dist")]
    dist: PathBuf,
    /// Repetitions of each in-process measurement.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Repetitions of each measurement that runs the `watchlife` binary.
    #[arg(long, default_value_t = 3)]
    process_runs: usize,
    /// Most WebSocket viewers to connect at once.
    #[arg(long, default_value_t = 10_000)]
    viewers: usize,
    /// Small sizes and one run each: to check the bench itself, not to publish.
    #[arg(long)]
    quick: bool,
    /// Objects of the big-cluster measurement, one run each (comma
    /// separated; by default 10000,50000,150000, or 2000 with --quick).
    #[arg(long, value_delimiter = ',', env = "WATCHLIFE_BENCH_BIG_SIZES")]
    big_sizes: Vec<usize>,
    /// Idle viewers of the big-cluster measurement, in steps (comma
    /// separated; by default 1000,10000, or 100,1000 with --quick).
    #[arg(long, value_delimiter = ',')]
    big_viewers: Vec<usize>,
    /// Objects of the first-sync measurement (by default 150000, or 2000
    /// with --quick).
    #[arg(long)]
    first_sync_objects: Option<usize>,
    /// Only these measurements (comma separated: controlplane,
    /// server-stages, apiserver, latency, etcd, upstream, fanout, pipeline,
    /// informer, scale, page, browser, big-cluster, first-sync). The
    /// report then keeps what the file at --out holds of the others.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// The command to name in the report.
    #[arg(long, default_value = "make bench")]
    command: String,
}

fn main() {
    let args = Args::parse();
    let started = started();
    let wanted = |name: &str| args.only.is_empty() || args.only.iter().any(|o| o == name);
    let (runs, process_runs) = if args.quick {
        (1, 1)
    } else {
        (args.runs.max(1), args.process_runs.max(1))
    };
    let mut report = Report {
        machine: machine::Machine::describe(),
        command: args.command.clone(),
        sections: Vec::new(),
        headlines: Vec::new(),
        series: Vec::new(),
        not_measured: Vec::new(),
        plot_path: args.plot.display().to_string(),
        total_seconds: 0.0,
    };
    progress!(
        "{} CPUs, load {}, commit {}",
        report.machine.cpus,
        report.machine.load_at_start,
        report.machine.commit
    );

    if wanted("controlplane") {
        let config = controlplane::Config {
            runs,
            watchers: vec![1, 100, 1000],
            writes: if args.quick { 1000 } else { 5000 },
            paced_writes: if args.quick { 100 } else { 400 },
        };
        controlplane::run(&mut report, &config);
    }
    if wanted("server-stages") {
        let config = server_stages::Config {
            rates: vec![10, 1000, 10_000],
            watchers: vec![1, 1000],
            seconds: if args.quick { 1.0 } else { 3.0 },
        };
        server_stages::run(&mut report, &config);
    }
    if wanted("apiserver") {
        let config = apiserver::Config {
            runs: process_runs,
            watchers: if args.quick {
                vec![1, 100]
            } else {
                vec![1, 100, 1000]
            },
            writes: if args.quick { 100 } else { 200 },
            paced_writes: if args.quick { 50 } else { 100 },
        };
        apiserver::run(&mut report, &config);
    }
    if wanted("latency") {
        let config = kubectl_latency::Config {
            runs: process_runs,
            watchlife: args.watchlife.clone(),
        };
        kubectl_latency::run(&mut report, &config);
    }
    if wanted("etcd") {
        let config = etcd_order::Config {
            runs: process_runs,
            watchlife: args.watchlife.clone(),
        };
        etcd_order::run(&mut report, &config);
    }
    if wanted("upstream") {
        let config = upstream_cost::Config {
            runs: process_runs,
            watchlife: args.watchlife.clone(),
            viewers: if args.quick {
                vec![1, 100]
            } else {
                vec![1, 100, 1000]
            },
        };
        upstream_cost::run(&mut report, &config);
    }
    if wanted("fanout") {
        let config = fanout::Config {
            runs: process_runs,
            watchlife: args.watchlife.clone(),
            viewers: args.viewers,
            quick: args.quick,
        };
        fanout::run(&mut report, &config);
    }
    if wanted("pipeline") {
        let config = pipeline::Config {
            runs,
            events: if args.quick { 20_000 } else { 50_000 },
        };
        pipeline::run(&mut report, &config);
    }
    if wanted("informer") {
        let config = informer::Config {
            runs: process_runs,
            seconds: if args.quick { 1.0 } else { 2.0 },
            rates: vec![1000.0, 10_000.0],
            watchlife: args.watchlife.clone(),
        };
        informer::run(&mut report, &config);
    }
    if wanted("scale") {
        let config = scale::Config {
            runs: process_runs,
            watchlife: args.watchlife.clone(),
            sizes: if args.quick {
                vec![10_000]
            } else {
                vec![10_000, 150_000]
            },
        };
        scale::run(&mut report, &config);
    }
    if wanted("page") {
        page::run(&mut report, &args.dist);
    }
    if wanted("browser") {
        // Two runs: a page under load takes most of a minute to measure.
        let config = browser::Config {
            runs: process_runs.min(2),
            watchlife: args.watchlife.clone(),
            targets: if args.quick {
                vec![1000]
            } else {
                vec![1000, 5000]
            },
        };
        browser::run(&mut report, &config);
    }
    if wanted("big-cluster") {
        let or = |given: &Vec<usize>, quick: &[usize], full: &[usize]| {
            if !given.is_empty() {
                given.clone()
            } else if args.quick {
                quick.to_vec()
            } else {
                full.to_vec()
            }
        };
        let config = big_cluster::Config {
            watchlife: args.watchlife.clone(),
            sizes: or(&args.big_sizes, &[2000], &[10_000, 50_000, 150_000]),
            viewers: or(&args.big_viewers, &[100, 1000], &[1000, 10_000]),
        };
        big_cluster::run(&mut report, &config);
    }
    if wanted("first-sync") {
        let config = first_sync::Config {
            watchlife: args.watchlife.clone(),
            objects: args
                .first_sync_objects
                .unwrap_or(if args.quick { 2000 } else { 150_000 }),
            runs: process_runs,
        };
        first_sync::run(&mut report, &config);
    }
    not_measured(&mut report, &wanted);

    report.total_seconds = started.elapsed().as_secs_f64();
    let earlier = std::fs::read_to_string(&args.out).ok();
    match earlier.filter(|_| !args.only.is_empty()) {
        Some(earlier) => {
            // Some sections only: the rest of the page, and the plot of
            // every section's latencies, stay as the earlier run wrote them.
            let command = partial_command();
            std::fs::write(&args.out, merge::merge(&earlier, &report, &command))
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", args.out.display()));
            report.plot_path.clear();
        }
        None => write_all(&args, &report),
    }
    println!("{}", report.summary(&args.out.display().to_string()));
}

/// How a run of some sections was started, as the report names it: the
/// bench's flags but `--watchlife`, whose path is this checkout's.
fn partial_command() -> String {
    let mut words = vec!["watchlife-bench".to_string()];
    let mut given = std::env::args().skip(1);
    while let Some(word) = given.next() {
        if word == "--watchlife" {
            given.next();
        } else if !word.starts_with("--watchlife=") {
            words.push(word);
        }
    }
    words.join(" ")
}

/// The whole report, and the plot of its latencies.
fn write_all(args: &Args, report: &Report) {
    let plot_file = args
        .out
        .parent()
        .map(|d| d.join(&args.plot))
        .unwrap_or_else(|| args.plot.clone());
    if let Some(dir) = plot_file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    std::fs::write(&plot_file, plot::svg(&report.series))
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", plot_file.display()));
    std::fs::write(&args.out, report.markdown())
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", args.out.display()));
}

/// What the bench does not measure (yet), said plainly in the report.
fn not_measured(report: &mut Report, wanted: &dyn Fn(&str) -> bool) {
    for (name, what) in [
        (
            "controlplane",
            "the demo control plane (left out of this run with --only)",
        ),
        (
            "server-stages",
            "the demo's server side, stage by stage (left out of this run with --only)",
        ),
        (
            "latency",
            "latency on a real kube-apiserver beside kubectl (left out of this run with --only)",
        ),
        (
            "etcd",
            "etcd's notification beside the Reflector's event (left out of this run with --only)",
        ),
        (
            "upstream",
            "the upstream cost of viewers beside a naive relay (left out of this run with --only)",
        ),
        (
            "fanout",
            "the fan-out to WebSocket viewers (left out of this run with --only)",
        ),
        (
            "pipeline",
            "the informer pipeline (left out of this run with --only)",
        ),
        (
            "informer",
            "the informer's stages under a steady load, a slow handler and LISTs per fault (left out of this run with --only)",
        ),
        (
            "scale",
            "memory per cached object and the initial LIST (left out of this run with --only)",
        ),
        (
            "page",
            "the browser app's weight (left out of this run with --only)",
        ),
        (
            "big-cluster",
            "a big cluster: 10k–150k objects on a real kube-apiserver, idle viewers (left out of this run with --only)",
        ),
        (
            "first-sync",
            "the first sync of 150k objects on a v1.36 apiserver beside client-go (left out of this run with --only)",
        ),
    ] {
        if !wanted(name) {
            report.not_measured.push(what.into());
        }
    }
}
