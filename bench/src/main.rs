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
//! - [`page`]: the browser app's weight, gzipped; [`browser`]: its frame rate under load;
//!   [`phone`]: the page on an emulated phone, a quarter of a desktop's CPU;
//!   [`wire`]: bytes per frame on the wire, compressed beside uncompressed.
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
//! - [`tap_cost`]: the example kube-rs controller on the demo without and with `watchlife-tap`
//!   (sending to watchlife, watchlife away, watchlife refusing it): its throughput, latency and
//!   the tap's drops.
//! - [`bridge`]: the one file that names the bridge's library API (the in-process sections).
//! - [`args`]: the flags; [`sections`]: every section in the order it runs, sized by the
//!   flags; [`scenario`]: the measure-then-report shape each section has.
//! - [`stats`], [`alloc`], [`machine`]: percentiles and spread, heap counting, `/proc`;
//!   [`process`]: the `watchlife` binary as a child; [`etcd_fill`]: objects straight into etcd;
//!   [`crowd`]: many WebSocket viewers in the bench, a few connecting at a time.
//! - [`report`] and [`plot`]: BENCHMARKS.md, the summary, and the SVG; [`merge`]: a run of
//!   some sections (`--only`) put into the BENCHMARKS.md of an earlier run.

/// Prints a progress line with the time since the bench started.
macro_rules! progress {
    ($($arg:tt)*) => {
        eprintln!("[bench {:>5.0} s] {}", crate::started().elapsed().as_secs_f64(), format!($($arg)*))
    };
}

mod apiserver;
mod args;
mod big_cluster;
mod bridge;
mod browser;
mod controlplane;
mod crowd;
mod embed_weight;
mod etcd_fill;
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
mod phone;
mod pipeline;
mod plot;
mod process;
mod report;
mod scale;
mod scenario;
mod sections;
mod server_stages;
mod stats;
mod tap_cost;
mod upstream_cost;
mod wire;

use args::Args;
use clap::Parser;
use report::Report;
use std::time::Instant;

/// When the bench started.
fn started() -> Instant {
    static STARTED: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *STARTED.get_or_init(Instant::now)
}

#[global_allocator]
static ALLOCATOR: watchlife_live_heap::Counting = watchlife_live_heap::Counting;

fn main() {
    let args = Args::parse();
    let started = started();
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
    for section in sections::SECTIONS.iter().filter(|s| args.wants(s.name)) {
        (section.run)(&args, &mut report);
    }
    for section in sections::SECTIONS.iter().filter(|s| !args.wants(s.name)) {
        report
            .not_measured
            .extend(section.left_out.map(String::from));
    }

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
