//! First sync of 150,000 objects on a Kubernetes v1.36 apiserver: a
//! streaming list beside LIST then WATCH, for watchlife and for client-go
//! v0.36.4's informer, in one run.
//!
//! One etcd 3.5 and apiextensions-apiserver v0.36.4 (the tests'
//! [`ModernCluster`], serving the custom resource `widgets.watchlife.example`).
//! Creating 150,000 objects through the API would take most of the bench, so
//! they are written straight into etcd ([`cluster::fill`]): JSON, as custom
//! resources are stored, under `/registry/apiextensions.kubernetes.io/GROUP/
//! RESOURCE/NAMESPACE/NAME`. The apiserver is then restarted before every
//! client, so that each meets a watch cache freshly filled from etcd and an
//! apiserver with nothing else in its heap.
//!
//! The clients ([`clients::CLIENTS`]), each a fresh process over every
//! namespace: `watchlife --kubernetes 1.36` (a streaming list) and with
//! `--feature-gates WatchListClient=false` (LIST from resourceVersion 0 in
//! pages of 500, which the watch cache answers whole, then WATCH), and
//! client-go's dynamic informer with its gates at their defaults and with
//! `KUBE_FEATURE_WatchListClient=false` ([`client_go`]). Each run measures
//! the four in turn, in an order that rotates from run to run.
//!
//! Per client: the time from spawning it until it has synced (client-go's
//! HasSynced; watchlife's Reflector reporting its list whole, as the other
//! sections read watchlife's sync) and until its handler has been called
//! with OnAdd for every object (client-go: its handler counts; watchlife:
//! its unfiltered listener's OnAdd calls, counted in `/metrics` as each
//! event is published); the client's peak resident memory (`VmHWM`); the
//! apiserver's resident memory before the client started and its peak
//! while the client synced (its `VmHWM`, reset just before the client
//! starts).

mod client_go;
mod clients;
mod cluster;

use crate::report::{Report, Section, Table};
use crate::scenario::Scenario;
use crate::stats::{Spread, bytes, count, micros, num, ratio, times};
use clients::{CLIENTS, Client, FirstSync, Setup};
use std::path::PathBuf;
use std::time::Instant;
use watchlife_tests::modern_cluster::{ModernCluster, Options};

#[derive(Debug, Clone)]
pub struct Config {
    pub watchlife: PathBuf,
    pub objects: usize,
    pub runs: usize,
}

/// Every run's figures of one client.
#[derive(Debug, Default, Clone)]
pub struct Figures {
    synced: Spread,
    handled: Spread,
    client_peak: Spread,
    client_after: Spread,
    apiserver_before: Spread,
    apiserver_peak: Spread,
    /// Runs in which the client did not list the way its row says.
    other_way: usize,
}

impl Figures {
    fn push(&mut self, client: Client, s: &FirstSync) {
        self.synced.push(s.synced.as_secs_f64() * 1e6);
        self.handled.push(s.handled.as_secs_f64() * 1e6);
        self.client_peak.push(s.client_peak as f64);
        self.client_after.push(s.client_after as f64);
        self.apiserver_before.push(s.apiserver_before as f64);
        self.apiserver_peak.push(s.apiserver_peak as f64);
        if s.streamed != client.streaming() {
            self.other_way += 1;
        }
    }
}

/// What the whole measurement found.
#[derive(Debug, Default)]
pub struct Found {
    figures: Vec<(Client, Figures)>,
    stored_json: f64,
    fill_seconds: f64,
    cache_ready: Spread,
    failures: Vec<String>,
}

impl Scenario for Config {
    /// What the runs found, or why nothing was measured (for "Not measured yet").
    type Figures = Result<Found, String>;

    fn measure(&self) -> Result<Found, String> {
        let installed = |script: &str| {
            std::process::Command::new(watchlife_tests::workspace().join(script))
                .arg("--check")
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        if !installed("scripts/ensure-modern-cluster.sh") {
            return Err(
                "**The first sync on a v1.36 apiserver**: etcd 3.5 and apiextensions-apiserver \
                 v0.36.4 are not in place here (`make test` makes them)."
                    .into(),
            );
        }
        let client_go = client_go::Toolchain::find()
            .and_then(|t| t.build())
            .map_err(|e| {
                format!(
                    "**The first sync on a v1.36 apiserver**: client-go's informer could not be built: {e}."
                )
            })?;
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        Ok(runtime.block_on(measure_all(self, &client_go)))
    }

    fn report(&self, found: Result<Found, String>, report: &mut Report, seconds: f64) {
        match found {
            Ok(found) => {
                report.sections.push(section(self, &found, seconds));
                headlines(report, &found, self.objects);
            }
            Err(not_measured) => report.not_measured.push(not_measured),
        }
    }
}

async fn measure_all(config: &Config, client_go: &std::path::Path) -> Found {
    let mut found = Found {
        figures: CLIENTS.iter().map(|&c| (c, Figures::default())).collect(),
        ..Found::default()
    };
    progress!("first sync: starting etcd 3.5 and the v0.36.4 apiserver");
    let mut cluster = ModernCluster::start(Options::default()).await;
    progress!(
        "first sync: writing {} widgets into etcd",
        count(config.objects)
    );
    let t = Instant::now();
    match cluster::fill(&cluster, config.objects).await {
        Ok(json) => found.stored_json = json as f64 / config.objects.max(1) as f64,
        Err(e) => {
            found.failures.push(format!("the fill: {e}"));
            return found;
        }
    }
    found.fill_seconds = t.elapsed().as_secs_f64();
    let kubeconfig = cluster.kubeconfig().to_path_buf();
    for run in 0..config.runs {
        for k in 0..CLIENTS.len() {
            let client = CLIENTS[(k + run) % CLIENTS.len()];
            match cluster::restart_and_wait(&mut cluster).await {
                Ok(ready) => found.cache_ready.push(ready.as_secs_f64() * 1e6),
                Err(e) => {
                    found.failures.push(e);
                    return found;
                }
            }
            let setup = Setup {
                watchlife: &config.watchlife,
                client_go,
                kubeconfig: &kubeconfig,
                apiserver_pid: cluster.pids()[0],
                objects: config.objects,
            };
            progress!(
                "first sync: run {}/{}: {}",
                run + 1,
                config.runs,
                client.label()
            );
            match clients::measure(client, &setup).await {
                Ok(sync) => {
                    progress!(
                        "first sync: synced after {}, every object handled after {}, peak {}",
                        micros(sync.synced.as_secs_f64() * 1e6),
                        micros(sync.handled.as_secs_f64() * 1e6),
                        bytes(sync.client_peak as f64)
                    );
                    if let Some((_, f)) = found.figures.iter_mut().find(|(c, _)| *c == client) {
                        f.push(client, &sync);
                    }
                }
                Err(e) => {
                    progress!("first sync: {} failed: {e}", client.label());
                    found
                        .failures
                        .push(format!("{} in run {}: {e}", client.label(), run + 1));
                }
            }
        }
    }
    found
}

fn figures_of(found: &Found, client: Client) -> Option<&Figures> {
    found
        .figures
        .iter()
        .find(|(c, _)| *c == client)
        .map(|(_, f)| f)
}

/// The ratios that hold across a busy machine: each of one run's pair.
fn headlines(report: &mut Report, found: &Found, objects: usize) {
    let n = short_count(objects);
    let of = |c| figures_of(found, c);
    let streaming_wl = Client::Watchlife { streaming: true };
    let paged_wl = Client::Watchlife { streaming: false };
    let streaming_go = Client::ClientGo { streaming: true };
    let paged_go = Client::ClientGo { streaming: false };
    if let (Some(s), Some(p)) = (of(streaming_wl), of(paged_wl)) {
        report.ratio_headline(
            format!("first sync of {n} on v1.36: watchlife, LIST+WATCH ÷ streaming list, start → every object handled"),
            &p.handled,
            &s.handled,
        );
    }
    if let (Some(w), Some(g)) = (of(streaming_wl), of(streaming_go)) {
        report.ratio_headline(
            format!("first sync of {n} on v1.36, streaming: watchlife ÷ client-go informer, start → every object handled"),
            &w.handled,
            &g.handled,
        );
        report.ratio_headline(
            format!("first sync of {n} on v1.36, streaming: watchlife ÷ client-go informer, peak resident memory"),
            &w.client_peak,
            &g.client_peak,
        );
    }
    if let (Some(w), Some(g)) = (of(paged_wl), of(paged_go)) {
        report.ratio_headline(
            format!("first sync of {n} on v1.36, LIST+WATCH: watchlife ÷ client-go informer, start → every object handled"),
            &w.handled,
            &g.handled,
        );
    }
}

/// What streaming the list cost beside LIST+WATCH, for each of the two
/// informers, run by run.
fn streaming_beside_list(found: &Found) -> Option<String> {
    let cost = |streaming: Client, paged: Client| -> Option<String> {
        let (s, p) = (figures_of(found, streaming)?, figures_of(found, paged)?);
        let time = ratio(&s.handled, &p.handled);
        let apiserver = ratio(&s.apiserver_peak, &p.apiserver_peak);
        let client = ratio(&s.client_peak, &p.client_peak);
        (!time.runs.is_empty()).then(|| {
            format!(
                "{} the time to every object handled, {} the client's peak memory and {} the \
                 apiserver's",
                time.show(times),
                client.show(times),
                apiserver.show(times)
            )
        })
    };
    let watchlife = cost(
        Client::Watchlife { streaming: true },
        Client::Watchlife { streaming: false },
    )?;
    let client_go = cost(
        Client::ClientGo { streaming: true },
        Client::ClientGo { streaming: false },
    )?;
    Some(format!(
        "The streaming list beside LIST+WATCH, each run's pair divided: watchlife {watchlife}; \
         client-go {client_go}. In a streaming list the apiserver sends every object as a watch \
         event of its own, and the client decodes each one apart, where a LIST is one body; \
         client, apiserver and etcd share the machine's cores."
    ))
}

/// 150k for 150,000; 2,000 for 2,000.
fn short_count(n: usize) -> String {
    if n >= 10_000 && n.is_multiple_of(1000) {
        format!("{}k", n / 1000)
    } else {
        count(n)
    }
}

fn section(config: &Config, found: &Found, seconds: f64) -> Section {
    let summary = found
        .figures
        .iter()
        .map(|(client, f)| {
            format!(
                "{}: synced {}, handled {}, peak {}",
                client.label(),
                micros(f.synced.median()),
                micros(f.handled.median()),
                bytes(f.client_peak.median())
            )
        })
        .collect();
    Section {
        title: format!(
            "First sync of {} objects: streaming list beside LIST+WATCH",
            count(config.objects)
        ),
        method: method(config),
        tables: vec![table(config, found)],
        notes: notes(config, found),
        summary,
        seconds,
    }
}

/// One row per client.
fn table(config: &Config, found: &Found) -> Table {
    let mut table = Table::new(
        &format!(
            "{} widgets (about {} of JSON each) in etcd; each client a fresh process over \
             every namespace, the apiserver restarted before each:",
            count(config.objects),
            bytes(found.stored_json)
        ),
        &[
            "client",
            "start → synced",
            "start → every object handled (OnAdd)",
            "client's peak resident memory",
            "client's resident memory 2 s later",
            "apiserver's resident memory before",
            "apiserver's peak during the sync",
        ],
    );
    for (client, f) in &found.figures {
        let label = if f.other_way > 0 {
            format!(
                "{} (in {} run(s) it did not list this way)",
                client.label(),
                f.other_way
            )
        } else {
            client.label().to_string()
        };
        table.row(vec![
            label,
            f.synced.show(micros),
            f.handled.show(micros),
            f.client_peak.show(bytes),
            f.client_after.show(bytes),
            f.apiserver_before.show(bytes),
            f.apiserver_peak.show(bytes),
        ]);
    }
    table
}

fn notes(config: &Config, found: &Found) -> Vec<String> {
    let mut notes = vec![
        "\"Synced\" is client-go's `HasSynced` (its queue has handed the first list to the \
         Indexer; the program looks every 5 ms) and, for watchlife, its Reflector's report \
         that the list is whole (`initial_events_end` or `list_finished`), as the other \
         sections read watchlife's sync: watchlife's informer may still be working through \
         the list then. \"Every object handled\" is the comparable point: client-go's one \
         handler has counted an OnAdd per object; watchlife has published every object's \
         event with its handlers' calls, each stage stamped (its `/metrics` read every 20 ms)."
            .to_string(),
        "The client-go program is a dynamic informer (unstructured objects, as controllers of \
         custom resources use) whose handler only counts, built from Debian's client-go \
         0.36.4 sources (`bench/client-go-first-sync/`); watchlife does more per object (it \
         keeps each object's text for viewers, stamps and publishes every event). Peak \
         resident memory is `VmHWM`; the apiserver's is reset (`/proc/PID/clear_refs`) just \
         before the client starts, so it is the peak while that client synced. The apiserver \
         answers a LIST from resourceVersion 0 from its watch cache whole (it ignores the \
         limit of 500), so LIST+WATCH is one page here."
            .to_string(),
        format!(
            "The fill wrote {} objects/s into etcd; after a restart the apiserver's watch \
             cache held every widget after {}.",
            num(config.objects as f64 / found.fill_seconds.max(1e-9)),
            found.cache_ready.show(micros)
        ),
    ];
    if let Some(note) = streaming_beside_list(found) {
        notes.push(note);
    }
    notes.extend(found.failures.iter().map(|f| format!("Failed: {f}.")));
    notes
}

fn method(config: &Config) -> String {
    format!(
        "apiextensions-apiserver v0.36.4 over etcd 3.5 on loopback, serving the custom \
         resource `widgets.watchlife.example`. {} widgets with about {} of `spec` each, in \
         {} namespaces, written straight into etcd as JSON ({} puts to a transaction, {} \
         transactions at once). Four clients, each measured once per run in an order \
         that rotates from run to run, {} run(s): `watchlife --kubernetes 1.36` (streaming list: \
         one WATCH with `sendInitialEvents=true`), the same with `--feature-gates \
         WatchListClient=false` (LIST from resourceVersion 0, then WATCH), and client-go \
         v0.36.4's dynamic informer with and without `KUBE_FEATURE_WatchListClient=false`.",
        count(config.objects),
        bytes(cluster::SPEC_BYTES as f64),
        cluster::NAMESPACES,
        cluster::PER_TXN,
        cluster::TXNS_AT_ONCE,
        config.runs,
    )
}
