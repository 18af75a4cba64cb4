//! Fault rounds: a real etcd and apiserver, a steady writer, two watchlife
//! bridges watching the cluster through a TCP proxy and a TLS-terminating
//! one, and several viewers, some of them through a load balancer in front
//! of the bridges;
//! each round injects one fault at a moment drawn from the seed, then pauses
//! the writes and checks the invariants ([`invariants`]).
//!
//! - [`cluster`]: the cluster of each Kubernetes release the bridge runs
//!   with (v1.20.2's kube-apiserver, v0.36.4's apiextensions-apiserver).
//! - [`queued_deletion`]: the one phantom v1.20's rules allow, named.
//! - [`faults`]: the faults, and the seeded plan of a run.
//! - [`credentials`]: the bridge's token file, the gate that accepts its
//!   tokens, and (v1.20) the RBAC binding that lets it read.
//! - [`writer`]: the writer, and the apiserver's list of what there is.
//! - [`viewers`]: the viewer tasks; [`model`]: what each makes of its frames.
//! - [`proxy`]: the TCP proxy between the bridge and the apiserver.
//! - [`replica`]: one of the run's two bridges behind the viewers' load
//!   balancer.
//! - `rig`: what a run holds, its set-up, and the wait for the viewers to
//!   agree; `round`: one round, its fault and its checks.
//! - [`invariants`]: what is checked, and the bounds.
//! - [`report`]: what a run measured, and RELIABILITY.md.
//!
//! A failing round reports its seed, its number and its timeline; the same
//! seed and number of rounds replay the same plan (`make chaos SEED=…
//! ROUNDS=…`). The timing of the processes themselves is not replayed.

pub mod cluster;
pub mod credentials;
pub mod faults;
pub mod invariants;
pub mod model;
pub use crate::proxy;
pub mod queued_deletion;
pub mod replica;
pub mod report;
mod rig;
mod round;
pub mod viewers;
pub mod writer;

use cluster::Kubernetes;
use faults::Fault;
use invariants::Invariant;
pub use rig::SETTLE;
use rig::setup;
use round::one_round;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;
use tokio::time::Instant;

/// Where the writer writes.
pub const NAMESPACES: [&str; 3] = ["shop", "billing", "search"];

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
    /// The bridge's `--kubernetes` release, and so the cluster.
    pub kubernetes: Kubernetes,
    /// How long the viewers may take to agree with the apiserver once the
    /// writes pause.
    pub settle: Duration,
    /// Bridges behind the viewers' load balancer (1 or 2).
    pub replicas: usize,
    /// The bridges' `--backoff-cap`, when not client-go's 30 s.
    pub backoff_cap: Option<Duration>,
}

/// The bridges' backoff cap in the short form and the broken-build proofs.
/// Rounds a few seconds apart never give client-go's backoff the two quiet
/// minutes it needs to start again at 0.8 s, so at its 30 s cap the later
/// rounds of a run each wait 30 to 60 s for the next list-watch cycle: a
/// short form of 15 rounds took 6 minutes, most of it waiting. At 2 s the
/// waits stay under 4 s. The first delay (0.8 s, the LIST bound's) is the
/// same; the long form (`make chaos`) keeps client-go's cap.
pub const SHORT_FORM_BACKOFF_CAP: Duration = Duration::from_secs(2);

impl Config {
    /// `rounds` rounds of every kind of fault, from `seed`.
    pub fn new(label: &str, seed: u64, rounds: usize, kubernetes: Kubernetes) -> Config {
        Config {
            seed,
            rounds,
            only: Vec::new(),
            viewer_stall: Duration::from_secs(5),
            bridge_env: Vec::new(),
            label: label.to_string(),
            kubernetes,
            settle: SETTLE,
            replicas: replica::REPLICAS,
            backoff_cap: Some(SHORT_FORM_BACKOFF_CAP),
        }
    }
}

impl Config {
    /// The command that runs this plan again.
    pub fn replay(&self) -> String {
        if self.bridge_env.is_empty() && self.only.is_empty() {
            format!(
                "make chaos SEED={} ROUNDS={} KUBERNETES={}",
                self.seed,
                self.rounds,
                self.kubernetes.flag()
            )
        } else {
            format!(
                "CHAOS_SEED={} cargo test -p watchlife-tests --test chaos (the test of {} with --kubernetes {}; its faults: {})",
                self.seed,
                self.label,
                self.kubernetes.flag(),
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
            "chaos round {} of seed {} ({}) broke {}:\n  {}\nfault timeline (from the round's start):\n{}\nbridge logs: {} (the second bridge's ends in -2.log)\nreplay: {}",
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

/// Runs the rounds of `config`; the first round that breaks an invariant
/// ends the run with a [`Failure`], beside what the rounds before it
/// measured. Prints a line per round.
pub async fn run(config: &Config) -> (report::Run, Option<Failure>) {
    let mut run = report::Run {
        seed: config.seed,
        resources: config
            .kubernetes
            .kinds()
            .iter()
            .map(|k| k.resource)
            .collect(),
        namespaces: NAMESPACES.to_vec(),
        kubernetes: config.kubernetes.flag(),
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
    let kinds = if config.only.is_empty() {
        Fault::of(config.kubernetes)
    } else {
        config.only.clone()
    };
    let plan = faults::plan(config.seed, config.rounds, &kinds, config.viewer_stall);
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
    run.cluster = rig.cluster.versions().await;
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
    if let Err(message) = rig.settle(false).await {
        return Err(fail(
            Invariant::Objects,
            message,
            0,
            None,
            String::new(),
            rig.replicas[0].log.clone(),
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
                    rig.replicas[0].log.clone(),
                ));
            }
        };
        eprintln!(
            "chaos[{} {}] round {}/{} {}: {:.1} s, LISTs {}/{}, {} objects × {} viewers agree, {} kept after a deletion while only queued, FIFO wait up to {:.1} ms, {} resyncs, {} writes ({} failed), RSS {:.1} MiB",
            config.label,
            config.kubernetes.flag(),
            round.number,
            config.rounds,
            round.fault,
            round.elapsed.as_secs_f64(),
            round.lists,
            round.list_bound,
            round.objects_compared / rig.followers.len() as u64,
            rig.followers.len(),
            round.kept_queued,
            round.longest_fifo_wait as f64 / 1000.0,
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
                rig.replicas[0].log.clone(),
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
            "bridge 1 (the one never restarted on purpose) RSS {:.1} MiB after round {}, {:.1} MiB after round {} ({:+.1}%; the margin is +{:.0}%){}",
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
            "bridge 1 RSS {:.1} MiB after round {} (drift is checked from {} rounds on)",
            mib(last.rss_kib),
            last.number,
            2 * invariants::RSS_BASE_ROUND
        )
    }
}
