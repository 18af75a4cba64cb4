//! Fault rounds: a real etcd and kube-apiserver, a steady writer, one
//! watchlife bridge watching the cluster through a TCP proxy, and several
//! viewers; each round injects one fault at a moment drawn from the seed,
//! then pauses the writes and checks the invariants ([`invariants`]).
//!
//! - [`faults`]: the faults, and the seeded plan of a run.
//! - [`writer`]: the writer, and the apiserver's list of what there is.
//! - [`viewers`]: the viewer tasks; [`model`]: what each makes of its frames.
//! - [`proxy`]: the TCP proxy between the bridge and the apiserver.
//! - [`invariants`]: what is checked, and the bounds.
//! - [`report`]: what a run measured, and RELIABILITY.md.
//!
//! A failing round reports its seed, its number and its timeline; the same
//! seed and number of rounds replay the same plan (`make chaos SEED=…
//! ROUNDS=…`). The timing of the processes themselves is not replayed.

pub mod faults;
pub mod invariants;
pub mod model;
pub mod proxy;
pub mod report;
pub mod viewers;
pub mod writer;

use crate::bridge::Bridge;
use crate::real_cluster::RealCluster;
use faults::{Fault, Planned};
use invariants::Invariant;
use proxy::{Mode, Proxy};
use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use tokio::time::Instant;
use viewers::{Follower, Style};
use watchlife_testkit::client::Client;
use writer::{Writing, Written};

/// The kinds the writer writes and the bridge watches.
pub const RESOURCES: [&str; 2] = ["configmaps", "pods"];
/// Where the writer writes.
pub const NAMESPACES: [&str; 3] = ["shop", "billing", "search"];
/// Time between two writes: some 30 writes a second on a small machine.
const WRITE_PAUSE: Duration = Duration::from_millis(20);
/// Writes go on this long after a fault ends, before they pause.
const TAIL: Duration = Duration::from_millis(1500);
/// How long the viewers may take to hold what the apiserver lists once the
/// writes pause: the bridge may be in a backoff of up to 30–60 s after an
/// apiserver that stayed away through several relists.
const SETTLE: Duration = Duration::from_secs(90);

/// How long a SIGTERMed kube-apiserver may drain before it is SIGKILLed:
/// a pod's default `terminationGracePeriodSeconds`.
const APISERVER_GRACE: Duration = Duration::from_secs(30);

/// A chaos run's settings.
#[derive(Debug, Clone)]
pub struct Config {
    pub seed: u64,
    pub rounds: usize,
    /// Only these faults (all when empty).
    pub only: Vec<Fault>,
    /// How long the stalled viewer stops reading.
    pub viewer_stall: Duration,
    /// Environment of the bridge (the test-only faults).
    pub bridge_env: Vec<(String, String)>,
    /// A name for the log files in tests/artifacts/.
    pub label: String,
}

impl Config {
    /// `rounds` rounds of every kind of fault, from `seed`.
    pub fn new(label: &str, seed: u64, rounds: usize) -> Config {
        Config {
            seed,
            rounds,
            only: Vec::new(),
            viewer_stall: Duration::from_secs(5),
            bridge_env: Vec::new(),
            label: label.to_string(),
        }
    }
}

impl Config {
    /// The command that runs this plan again.
    pub fn replay(&self) -> String {
        if self.bridge_env.is_empty() && self.only.is_empty() {
            format!("make chaos SEED={} ROUNDS={}", self.seed, self.rounds)
        } else {
            format!(
                "CHAOS_SEED={} cargo test -p watchlife-tests --test chaos (the test of {}; its faults: {})",
                self.seed,
                self.label,
                self.only
                    .iter()
                    .map(|f| f.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    }
}

/// A round that broke an invariant.
#[derive(Debug)]
pub struct Failure {
    pub invariant: Invariant,
    pub message: String,
    pub seed: u64,
    pub rounds: usize,
    /// The round (from 1), and its fault and timeline.
    pub round: usize,
    pub fault: Option<Fault>,
    pub timeline: String,
    pub log: PathBuf,
    /// How to run the same plan again.
    pub replay: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "chaos round {} of seed {} ({}) broke {}:\n  {}\nfault timeline (from the round's start):\n{}\nbridge log: {}\nreplay: {}",
            self.round,
            self.seed,
            self.fault.map_or("no fault yet", Fault::name),
            self.invariant,
            self.message,
            self.timeline,
            self.log.display(),
            self.replay
        )
    }
}

/// Everything a run holds.
struct Rig {
    cluster: RealCluster,
    client: Client,
    proxy: Proxy,
    bridge: Bridge,
    bridge_args: Vec<String>,
    bridge_env: Vec<(String, String)>,
    log: PathBuf,
    followers: Vec<Follower>,
    written: Option<Written>,
}

impl Rig {
    async fn start_bridge(
        addr: SocketAddr,
        args: &[String],
        env: &[(String, String)],
        log: &std::path::Path,
    ) -> Bridge {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        Bridge::start_logged(addr, &args, &env, log).await
    }

    async fn bridge_metrics(&self) -> Result<String, String> {
        let reply = crate::http::get(self.bridge.addr, "/metrics")
            .await
            .map_err(|e| format!("the bridge does not answer /metrics: {e}"))?;
        if reply.status != 200 {
            return Err(format!("the bridge answers /metrics with {}", reply.status));
        }
        Ok(reply.text())
    }

    async fn lists(&self) -> Result<u64, String> {
        Ok(invariants::metric(&self.bridge_metrics().await?, "watchlife_lists_total") as u64)
    }

    fn log_len(&self) -> u64 {
        std::fs::metadata(&self.log).map_or(0, |m| m.len())
    }

    fn log_since(&self, offset: u64) -> String {
        let text = std::fs::read(&self.log).unwrap_or_default();
        String::from_utf8_lossy(&text[(offset as usize).min(text.len())..]).into_owned()
    }

    /// Waits until every viewer holds exactly what the apiserver lists, and
    /// returns that list; or says how they differ at the deadline.
    async fn settle(&self) -> Result<BTreeMap<String, String>, String> {
        let deadline = Instant::now() + SETTLE;
        loop {
            let truth = writer::listed(&self.client, &RESOURCES).await;
            let mut report = String::new();
            for viewer in &self.followers {
                viewer.check_alive();
                let diff = viewer.state(|m| model::differences(&truth, &m.objects));
                if !diff.is_empty() || !viewer.connected() {
                    report.push_str(&format!(
                        "\n  {} ({}): {diff}",
                        viewer.name,
                        if viewer.connected() {
                            "connected"
                        } else {
                            "not connected"
                        }
                    ));
                }
            }
            if report.is_empty() {
                return Ok(truth);
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "the viewers do not hold what the apiserver lists ({} objects) {SETTLE:?} after the writes paused:{report}",
                    truth.len()
                ));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Runs the rounds of `config`; the first round that breaks an invariant
/// ends the run with a [`Failure`], beside what the rounds before it
/// measured. Prints a line per round.
pub async fn run(config: &Config) -> (report::Run, Option<Failure>) {
    let mut run = report::Run {
        seed: config.seed,
        resources: RESOURCES.to_vec(),
        namespaces: NAMESPACES.to_vec(),
        ..report::Run::default()
    };
    let outcome = rounds(config, &mut run).await;
    if let Err(failure) = &outcome {
        run.failure = Some(failure.to_string());
    }
    (run, outcome.err())
}

async fn rounds(config: &Config, run: &mut report::Run) -> Result<(), Failure> {
    let started = Instant::now();
    let plan = faults::plan(
        config.seed,
        config.rounds,
        &config.only,
        config.viewer_stall,
    );
    eprintln!(
        "chaos[{}]: seed {} ({} rounds; replay with {}); plan: {}",
        config.label,
        config.seed,
        config.rounds,
        config.replay(),
        plan.iter()
            .map(|p| p.fault.name())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut rig = setup(config).await;
    run.viewers = rig.followers.len();
    let fail = |invariant, message: String, round: usize, fault, timeline: String, log| Failure {
        invariant,
        message,
        seed: config.seed,
        rounds: config.rounds,
        round,
        fault,
        timeline,
        log,
        replay: config.replay(),
    };
    // The viewers agree with the apiserver before any fault.
    if let Err(message) = rig.settle().await {
        return Err(fail(
            Invariant::Objects,
            message,
            0,
            None,
            String::new(),
            rig.log.clone(),
        ));
    }
    for (index, planned) in plan.iter().enumerate() {
        let round = match one_round(&mut rig, index + 1, planned).await {
            Ok(round) => round,
            Err((invariant, message, timeline)) => {
                run.elapsed = started.elapsed();
                run.memory = memory(&run.rounds);
                eprintln!("{}", run.summary());
                return Err(fail(
                    invariant,
                    message,
                    index + 1,
                    Some(planned.fault),
                    timeline,
                    rig.log.clone(),
                ));
            }
        };
        eprintln!(
            "chaos[{}] round {}/{} {}: {:.1} s, LISTs {}/{}, {} objects × {} viewers agree, {} resyncs, {} writes ({} failed), RSS {:.1} MiB",
            config.label,
            round.number,
            config.rounds,
            round.fault,
            round.elapsed.as_secs_f64(),
            round.lists,
            round.list_bound,
            round.objects_compared / rig.followers.len() as u64,
            rig.followers.len(),
            round.resyncs,
            round.writes,
            round.failed_writes,
            round.rss_kib as f64 / 1024.0
        );
        run.rounds.push(round);
    }
    run.elapsed = started.elapsed();
    run.memory = memory(&run.rounds);
    if run.rounds.len() >= 2 * invariants::RSS_BASE_ROUND {
        let base = &run.rounds[invariants::RSS_BASE_ROUND - 1];
        let last = run.rounds.last().unwrap();
        // Only the same process: a restarted bridge starts from nothing.
        if base.bridge_pid == last.bridge_pid
            && last.rss_kib as f64 > base.rss_kib as f64 * invariants::RSS_MARGIN
        {
            return Err(fail(
                Invariant::Memory,
                run.memory.clone(),
                last.number,
                Some(last.fault),
                last.timeline_text(),
                rig.log.clone(),
            ));
        }
    }
    eprintln!("{}", run.summary());
    Ok(())
}

/// The RSS drift, in words.
fn memory(rounds: &[report::Round]) -> String {
    let mib = |kib: u64| kib as f64 / 1024.0;
    let Some(last) = rounds.last() else {
        return "no rounds".into();
    };
    if rounds.len() >= 2 * invariants::RSS_BASE_ROUND {
        let base_round = &rounds[invariants::RSS_BASE_ROUND - 1];
        let base = base_round.rss_kib;
        let restarted = rounds
            .iter()
            .rposition(|r| r.bridge_pid != base_round.bridge_pid)
            .filter(|&i| i >= invariants::RSS_BASE_ROUND)
            .map(|i| rounds[i].number);
        format!(
            "bridge RSS {:.1} MiB after round {}, {:.1} MiB after round {} ({:+.1}%; the margin is +{:.0}%){}",
            mib(base),
            invariants::RSS_BASE_ROUND,
            mib(last.rss_kib),
            last.number,
            (last.rss_kib as f64 / base as f64 - 1.0) * 100.0,
            (invariants::RSS_MARGIN - 1.0) * 100.0,
            match restarted {
                Some(n) => format!(
                    "; not checked: the bridge was restarted since (last in round {n}), so these are two processes (peak over the run: {:.1} MiB)",
                    mib(rounds.iter().map(|r| r.rss_kib).max().unwrap_or(0))
                ),
                None => String::new(),
            }
        )
    } else {
        format!(
            "bridge RSS {:.1} MiB after round {} (drift is checked from {} rounds on)",
            mib(last.rss_kib),
            last.number,
            2 * invariants::RSS_BASE_ROUND
        )
    }
}

async fn setup(config: &Config) -> Rig {
    let cluster = RealCluster::start_with(&["--storage-media-type=application/json"]).await;
    let client = cluster.client();
    writer::create_namespaces(&client, &NAMESPACES).await;
    let mut written = Written::new(&RESOURCES, &NAMESPACES, config.seed);
    for _ in 0..20 {
        written.step(&client).await.expect("the first writes");
    }
    let upstream: SocketAddr = cluster
        .base_url()
        .trim_start_matches("https://")
        .parse()
        .expect("the apiserver's address");
    let proxy = Proxy::start(upstream).await;
    let kubeconfig = cluster.dir().join("kubeconfig-through-proxy");
    proxy::kubeconfig_through(
        cluster.kubeconfig(),
        &kubeconfig,
        cluster.base_url(),
        proxy.addr,
    );
    let log = crate::artifacts().join(format!(
        "chaos-{}-{}-watchlife.log",
        config.label, config.seed
    ));
    let _ = std::fs::remove_file(&log);
    // The 1.36 client (the default) against this v1.20.2 apiserver: its
    // streaming list is refused (422) and each cycle lists then watches, on
    // v0.36's RealFIFO. With v1.20's DeltaFIFO, one round in four here ended
    // with a phantom (a deleted pod kept) that is not understood yet.
    let bridge_args = vec![
        "--kubernetes".to_string(),
        "1.36".to_string(),
        "--kubeconfig".to_string(),
        kubeconfig.to_str().unwrap().to_string(),
        "--resources".to_string(),
        RESOURCES.join(","),
    ];
    let addr: SocketAddr = format!("127.0.0.1:{}", crate::free_port()).parse().unwrap();
    let bridge = Rig::start_bridge(addr, &bridge_args, &config.bridge_env, &log).await;
    let mut followers = Vec::new();
    let styles = [
        ("full-speed-1", Style::FullSpeed),
        ("full-speed-2", Style::FullSpeed),
        ("resuming-1", Style::Resuming),
        ("resuming-2", Style::Resuming),
        ("stalling", Style::Stallable),
    ];
    for (i, (name, style)) in styles.into_iter().enumerate() {
        followers.push(Follower::start(
            name.to_string(),
            style,
            bridge.ws_url(),
            config.seed ^ (0x5151 * (i as u64 + 1)),
        ));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while !followers.iter().all(|f| f.state(|m| m.snapshots > 0)) {
        assert!(
            Instant::now() < deadline,
            "the viewers got no snapshot within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Rig {
        cluster,
        client,
        proxy,
        bridge,
        bridge_args,
        bridge_env: config.bridge_env.clone(),
        log,
        followers,
        written: Some(written),
    }
}

type RoundError = (Invariant, String, String);

/// What happened in a round, when.
struct Timeline {
    t0: Instant,
    entries: Vec<(Duration, String)>,
}

impl Timeline {
    fn note(&mut self, what: String) {
        self.entries.push((self.t0.elapsed(), what));
    }

    fn text(&self) -> String {
        self.entries
            .iter()
            .map(|(t, what)| format!("  +{:>7.3}s {what}", t.as_secs_f64()))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

async fn one_round(
    rig: &mut Rig,
    number: usize,
    planned: &Planned,
) -> Result<report::Round, RoundError> {
    let t0 = Instant::now();
    let mut tl = Timeline {
        t0,
        entries: Vec::new(),
    };
    let log_offset = rig.log_len();
    let mut lists_before = rig
        .lists()
        .await
        .map_err(|e| (Invariant::Logs, e, String::new()))?;
    let mut lists_carried = 0;
    let resyncs_before: u64 = rig
        .followers
        .iter()
        .map(|f| f.state(|m| u64::from(m.resyncs)))
        .sum();
    let written = rig.written.take().expect("the writer's account");
    let (made, changed, deleted, failed) = (
        written.made,
        written.changed,
        written.deleted,
        written.failed,
    );
    tl.note("writes begin".into());
    let writing = Writing::start(rig.client.clone(), written, WRITE_PAUSE, false);
    tokio::time::sleep(planned.at).await;
    let fault = planned.fault;
    tl.note(format!("{fault} begins"));
    match fault {
        Fault::ApiserverKill => {
            rig.cluster.stop_apiserver();
            tl.note("kube-apiserver SIGKILLed".into());
            tokio::time::sleep(planned.length).await;
            tl.note("kube-apiserver starting".into());
            rig.cluster.start_apiserver().await;
            tl.note("kube-apiserver ready".into());
        }
        Fault::ApiserverGraceful => {
            tl.note("kube-apiserver sent SIGTERM".into());
            let exited = rig
                .cluster
                .restart_apiserver_gracefully(APISERVER_GRACE)
                .await;
            tl.note(if exited {
                "kube-apiserver exited, started again and ready".into()
            } else {
                format!(
                    "kube-apiserver still draining after {APISERVER_GRACE:?}: SIGKILLed, started again and ready"
                )
            });
        }
        Fault::EtcdCompaction => {
            let revision = rig.cluster.compact_etcd().await;
            tl.note(format!("etcd compacted at revision {revision}"));
        }
        Fault::EtcdDirect => {
            let listed = writer::listed(&rig.client, &["configmaps"]).await;
            let ours: Vec<&String> = listed
                .keys()
                .filter(|k| NAMESPACES.iter().any(|ns| k.contains(&format!("/{ns}/"))))
                .collect();
            rig.cluster.stop_apiserver();
            tl.note("kube-apiserver SIGKILLed".into());
            let namespace = NAMESPACES[(planned.pick % NAMESPACES.len() as u64) as usize];
            let name = format!("etcd-{number}");
            let body = serde_json::json!({
                "kind": "ConfigMap", "apiVersion": "v1",
                "metadata": {
                    "name": name, "namespace": namespace,
                    "uid": format!("00000000-0000-4000-8000-{:012}", number),
                    "creationTimestamp": "2026-01-01T00:00:00Z",
                },
                "data": {"written": "straight into etcd"},
            });
            let key = format!("/registry/configmaps/{namespace}/{name}");
            rig.cluster.etcdctl(&["put", &key, &body.to_string()]).await;
            tl.note(format!("etcdctl put {key}"));
            if !ours.is_empty() {
                let victim = ours[(planned.pick >> 8) as usize % ours.len()];
                let (_, rest) = victim.split_once('/').unwrap();
                let key = format!("/registry/configmaps/{rest}");
                let out = rig.cluster.etcdctl(&["del", &key]).await;
                tl.note(format!("etcdctl del {key}: {}", out.trim()));
            }
            tokio::time::sleep(planned.length).await;
            tl.note("kube-apiserver starting".into());
            rig.cluster.start_apiserver().await;
            tl.note("kube-apiserver ready".into());
        }
        Fault::ProxyStall | Fault::ProxyDrop | Fault::ProxyReset => {
            let mode = match fault {
                Fault::ProxyStall => Mode::Stall,
                Fault::ProxyDrop => Mode::Drop,
                _ => Mode::Reset,
            };
            tl.note(format!(
                "proxy {mode:?} for {:.1} s",
                planned.length.as_secs_f64()
            ));
            rig.proxy.misbehave(mode, planned.length).await;
            tl.note("proxy passes again".into());
        }
        Fault::BridgeTerm | Fault::BridgeKill => {
            let lists_now = rig
                .lists()
                .await
                .map_err(|e| (Invariant::Logs, e, tl.text()))?;
            lists_carried = lists_now - lists_before;
            lists_before = 0;
            if fault == Fault::BridgeTerm {
                let status = rig.bridge.terminate();
                tl.note(format!("bridge stopped with SIGTERM: {status}"));
                if !status.success() {
                    let _ = writing.stop().await;
                    return Err((
                        Invariant::Logs,
                        format!("the bridge exited with {status} on SIGTERM"),
                        tl.text(),
                    ));
                }
            } else {
                rig.bridge.kill();
                tl.note("bridge SIGKILLed".into());
            }
            tokio::time::sleep(planned.length).await;
            let addr = rig.bridge.addr;
            rig.bridge = Rig::start_bridge(addr, &rig.bridge_args, &rig.bridge_env, &rig.log).await;
            tl.note(format!("bridge serving again on {addr}"));
        }
        Fault::ViewerStall => {
            let stalled = rig
                .followers
                .iter()
                .find(|f| f.style == Style::Stallable)
                .expect("a viewer that can stall");
            stalled.pause(planned.length);
            tl.note(format!(
                "viewer {} stops reading for {:.1} s",
                stalled.name,
                planned.length.as_secs_f64()
            ));
            tokio::time::sleep(planned.length).await;
            tl.note(format!("viewer {} reads again", stalled.name));
        }
    }
    tokio::time::sleep(TAIL).await;
    let written = writing.stop().await;
    tl.note("writes paused".into());
    let writes = (written.made - made) + (written.changed - changed) + (written.deleted - deleted);
    let failed_writes = written.failed - failed;
    rig.written = Some(written);

    // (a) objects.
    let truth = match rig.settle().await {
        Ok(truth) => truth,
        Err(message) => {
            tl.note("not settled".into());
            // A frame missing from the stream explains objects a viewer
            // lacks or keeps: the stream's break is the one to name.
            let (broken, _) = stream_violations(rig);
            if !broken.is_empty() {
                return Err((
                    Invariant::Stream,
                    format!("{}\n  and so: {message}", broken.trim_start()),
                    tl.text(),
                ));
            }
            return Err((Invariant::Objects, message, tl.text()));
        }
    };
    tl.note(format!(
        "settled: every viewer holds the {} objects listed",
        truth.len()
    ));
    // (b) stream.
    let (broken, duplicated) = stream_violations(rig);
    if !broken.is_empty() {
        return Err((
            Invariant::Stream,
            broken.trim_start().to_string(),
            tl.text(),
        ));
    }
    // (c) LISTs.
    let elapsed = t0.elapsed();
    let lists = rig
        .lists()
        .await
        .map_err(|e| (Invariant::Logs, e, tl.text()))?
        - lists_before
        + lists_carried;
    let (list_bound, list_rule) = invariants::list_bound(fault, elapsed, RESOURCES.len());
    if lists > list_bound {
        return Err((
            Invariant::Lists,
            format!("{lists} LISTs in a round of {fault}; the bound is {list_rule}"),
            tl.text(),
        ));
    }
    // (e) logs.
    let bad = invariants::bad_log_lines(&rig.log_since(log_offset), fault);
    if !bad.is_empty() {
        return Err((
            Invariant::Logs,
            format!("the bridge's stderr has:\n    {}", bad.join("\n    ")),
            tl.text(),
        ));
    }
    let resyncs: u64 = rig
        .followers
        .iter()
        .map(|f| f.state(|m| u64::from(m.resyncs)))
        .sum::<u64>()
        - resyncs_before;
    Ok(report::Round {
        number,
        fault,
        timeline: tl.entries,
        elapsed,
        lists,
        list_bound,
        list_rule,
        objects_compared: truth.len() as u64 * rig.followers.len() as u64,
        lost: 0,
        phantom: 0,
        duplicated,
        resyncs,
        writes,
        failed_writes,
        rss_kib: invariants::rss_kib(rig.bridge.pid()).unwrap_or(0),
        bridge_pid: rig.bridge.pid(),
    })
}

/// What the viewers recorded against the stream invariant (up to three
/// lines each), and how many events came twice.
fn stream_violations(rig: &Rig) -> (String, u64) {
    let mut broken = String::new();
    let mut duplicated = 0;
    for viewer in &rig.followers {
        let violations = viewer.state(|m| m.violations.clone());
        duplicated += violations.iter().filter(|v| v.contains("twice")).count() as u64;
        for v in violations.iter().take(3) {
            broken.push_str(&format!("\n  {}: {v}", viewer.name));
        }
    }
    (broken, duplicated)
}
