//! Every section of the bench, in the order it runs and is reported: its
//! `--only` name, what the report says when it is left out, and its sizes as
//! the flags choose them.

use crate::args::Args;
use crate::process::BridgeRuns;
use crate::report::Report;
use crate::scenario::{self, OnRealCluster, Scenario, WriteLoad};
use crate::{
    apiserver, big_cluster, browser, controlplane, etcd_order, fanout, first_sync, informer,
    kubectl_latency, page, phone, pipeline, scale, server_stages, tap_cost, upstream_cost, wire,
};

/// One section of the bench.
pub struct Section {
    /// Its name for `--only`.
    pub name: &'static str,
    /// What "Not measured yet" says when `--only` leaves it out; `None` for
    /// the sections the report does not list there.
    pub left_out: Option<&'static str>,
    /// Measures it with the sizes `args` choose, and reports it.
    pub run: fn(&Args, &mut Report),
}

/// The sections, in the order they run.
pub const SECTIONS: &[Section] = &[
    Section {
        name: "controlplane",
        left_out: Some("the demo control plane (left out of this run with --only)"),
        run: run_controlplane,
    },
    Section {
        name: "server-stages",
        left_out: Some("the demo's server side, stage by stage (left out of this run with --only)"),
        run: run_server_stages,
    },
    Section {
        name: "apiserver",
        left_out: None,
        run: run_apiserver,
    },
    Section {
        name: "latency",
        left_out: Some(
            "latency on a real kube-apiserver beside kubectl (left out of this run with --only)",
        ),
        run: run_latency,
    },
    Section {
        name: "etcd",
        left_out: Some(
            "etcd's notification beside the Reflector's event (left out of this run with --only)",
        ),
        run: run_etcd,
    },
    Section {
        name: "upstream",
        left_out: Some(
            "the upstream cost of viewers beside a naive relay (left out of this run with --only)",
        ),
        run: run_upstream,
    },
    Section {
        name: "fanout",
        left_out: Some("the fan-out to WebSocket viewers (left out of this run with --only)"),
        run: run_fanout,
    },
    Section {
        name: "pipeline",
        left_out: Some("the informer pipeline (left out of this run with --only)"),
        run: run_pipeline,
    },
    Section {
        name: "informer",
        left_out: Some(
            "the informer's stages under a steady load, a slow handler and LISTs per fault (left out of this run with --only)",
        ),
        run: run_informer,
    },
    Section {
        name: "scale",
        left_out: Some(
            "memory per cached object and the initial LIST (left out of this run with --only)",
        ),
        run: run_scale,
    },
    Section {
        name: "page",
        left_out: Some(
            "the browser app's weight, and the player's and the in-page demo's (left out of this run with --only)",
        ),
        run: run_page,
    },
    Section {
        name: "browser",
        left_out: None,
        run: run_browser,
    },
    Section {
        name: "phone",
        left_out: Some(
            "the page on a phone: 360×800, a quarter of a desktop's CPU (and this machine ÷4), 10 minutes of memory (left out of this run with --only)",
        ),
        run: run_phone,
    },
    Section {
        name: "big-cluster",
        left_out: Some(
            "a big cluster: 10k–150k objects on a real kube-apiserver, idle viewers (left out of this run with --only)",
        ),
        run: run_big_cluster,
    },
    Section {
        name: "first-sync",
        left_out: Some(
            "the first sync of 150k objects on a v1.36 apiserver beside client-go (left out of this run with --only)",
        ),
        run: run_first_sync,
    },
    Section {
        name: "wire",
        left_out: Some(
            "bytes on the wire per frame, compressed beside uncompressed (left out of this run with --only)",
        ),
        run: run_wire,
    },
    Section {
        name: "tap",
        left_out: Some(
            "what watchlife-tap costs a controller's reconciles (left out of this run with --only)",
        ),
        run: run_tap,
    },
];

fn run_controlplane(args: &Args, report: &mut Report) {
    let config = controlplane::Config {
        load: WriteLoad {
            runs: args.runs(),
            watchers: vec![1, 100, 1000],
            writes: args.sized(1000, 5000),
            paced_writes: args.sized(100, 400),
        },
    };
    scenario::run(&config, report);
}

fn run_server_stages(args: &Args, report: &mut Report) {
    let config = server_stages::Config {
        rates: vec![10, 1000, 10_000],
        watchers: vec![1, 1000],
        seconds: args.sized(1.0, 3.0),
    };
    scenario::run(&config, report);
}

fn run_apiserver(args: &Args, report: &mut Report) {
    let config = apiserver::Config {
        load: WriteLoad {
            runs: args.process_runs(),
            watchers: args.sized(vec![1, 100], vec![1, 100, 1000]),
            writes: args.sized(100, 200),
            paced_writes: args.sized(50, 100),
        },
    };
    run_on_real_cluster(
        &config,
        "**kube-apiserver + etcd under the same writes** as the demo API: etcd and \
         kube-apiserver v1.20.2 are not installed here (`make test` installs and builds \
         them once).",
        report,
    );
}

fn run_latency(args: &Args, report: &mut Report) {
    let config = kubectl_latency::Config {
        bridge: bridge_runs(args),
    };
    run_on_real_cluster(
        &config,
        "**Latency on a real kube-apiserver** (kubectl beside watchlife): etcd and \
         kube-apiserver v1.20.2 are not installed here (`make test` installs them).",
        report,
    );
}

fn run_etcd(args: &Args, report: &mut Report) {
    let config = etcd_order::Config {
        bridge: bridge_runs(args),
    };
    run_on_real_cluster(
        &config,
        "**etcd's notification beside the Reflector's event**: etcd and kube-apiserver \
         v1.20.2 are not installed here (`make test` installs them).",
        report,
    );
}

fn run_upstream(args: &Args, report: &mut Report) {
    let config = upstream_cost::Config {
        runs: args.process_runs(),
        watchlife: args.watchlife.clone(),
        viewers: args.sized(vec![1, 100], vec![1, 100, 1000]),
    };
    run_on_real_cluster(
        &config,
        "**Upstream cost of viewers** (watches and apiserver/etcd CPU, watchlife beside a \
         naive relay): etcd and kube-apiserver v1.20.2 are not installed here.",
        report,
    );
}

fn run_fanout(args: &Args, report: &mut Report) {
    let plain = fanout::Config {
        runs: args.process_runs(),
        watchlife: args.watchlife.clone(),
        viewers: args.viewers,
        quick: args.quick,
        compress: false,
    };
    let compressed = fanout::Config {
        compress: true,
        ..plain.clone()
    };
    scenario::run(&fanout::Compared { plain, compressed }, report);
}

fn run_wire(args: &Args, report: &mut Report) {
    let config = wire::Config {
        runs: args.process_runs(),
        watchlife: args.watchlife.clone(),
        seconds: args.sized(5, 20),
    };
    scenario::run(&config, report);
}

fn run_pipeline(args: &Args, report: &mut Report) {
    let config = pipeline::Config {
        runs: args.runs(),
        events: args.sized(20_000, 50_000),
    };
    scenario::run(&config, report);
}

fn run_informer(args: &Args, report: &mut Report) {
    let config = informer::Config {
        runs: args.process_runs(),
        seconds: args.sized(1.0, 2.0),
        rates: vec![1000.0, 10_000.0],
        watchlife: args.watchlife.clone(),
    };
    scenario::run(&config, report);
}

fn run_scale(args: &Args, report: &mut Report) {
    let config = scale::Config {
        runs: args.process_runs(),
        watchlife: args.watchlife.clone(),
        sizes: args.sized(vec![10_000], vec![10_000, 150_000]),
    };
    scenario::run(&config, report);
}

fn run_page(args: &Args, report: &mut Report) {
    let config = page::Config {
        dist: args.dist.clone(),
        embed: args.embed.clone(),
    };
    scenario::run(&config, report);
}

fn run_browser(args: &Args, report: &mut Report) {
    // Two runs: a page under load takes most of a minute to measure.
    let config = browser::Config {
        runs: args.process_runs().min(2),
        watchlife: args.watchlife.clone(),
        targets: args.sized(vec![1000], vec![1000, 5000]),
    };
    scenario::run(&config, report);
}

fn run_phone(args: &Args, report: &mut Report) {
    let config = phone::Config {
        runs: args.process_runs().min(2),
        watchlife: args.watchlife.clone(),
        targets: vec![100, 1000],
        // Ten minutes, as a talk's busy stretch lasts; two in a quick run.
        soak: std::time::Duration::from_secs(
            args.soak_minutes.unwrap_or_else(|| args.sized(2, 10)) * 60,
        ),
    };
    scenario::run(&config, report);
}

fn run_big_cluster(args: &Args, report: &mut Report) {
    let given_or_sized = |given: &Vec<usize>, quick: &[usize], full: &[usize]| {
        if given.is_empty() {
            args.sized(quick, full).to_vec()
        } else {
            given.clone()
        }
    };
    let config = big_cluster::Config {
        watchlife: args.watchlife.clone(),
        sizes: given_or_sized(&args.big_sizes, &[2000], &[10_000, 50_000, 150_000]),
        viewers: given_or_sized(&args.big_viewers, &[100, 1000], &[1000, 10_000]),
    };
    run_on_real_cluster(
        &config,
        "**A big cluster** (10k–150k objects on a real kube-apiserver): etcd and \
         kube-apiserver v1.20.2 are not installed here (`make test` installs them).",
        report,
    );
}

fn run_first_sync(args: &Args, report: &mut Report) {
    let config = first_sync::Config {
        watchlife: args.watchlife.clone(),
        objects: args.first_sync_objects.unwrap_or(args.sized(2000, 150_000)),
        runs: args.process_runs(),
    };
    scenario::run(&config, report);
}

fn run_tap(args: &Args, report: &mut Report) {
    let config = tap_cost::Config {
        runs: args.runs(),
        watchlife: args.watchlife.clone(),
        deployments: tap_cost::DEPLOYMENTS,
        rounds: args.sized(tap_cost::QUICK_ROUNDS, tap_cost::ROUNDS),
    };
    scenario::run(&config, report);
}

/// A section that starts the `watchlife` binary afresh in each of its runs,
/// as many as the flags say.
fn bridge_runs(args: &Args) -> BridgeRuns {
    BridgeRuns {
        runs: args.process_runs(),
        watchlife: args.watchlife.clone(),
    }
}

/// Measures `scenario` where etcd and kube-apiserver v1.20.2 are installed;
/// elsewhere "Not measured yet" lists `missing`.
fn run_on_real_cluster(scenario: &impl Scenario, missing: &'static str, report: &mut Report) {
    scenario::run(&OnRealCluster { scenario, missing }, report);
}
