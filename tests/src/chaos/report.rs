//! What a chaos run measured, and RELIABILITY.md written from it.

use super::faults::Fault;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

/// One round as it went.
#[derive(Debug, Clone)]
pub struct Round {
    pub number: usize,
    pub fault: Fault,
    /// What happened when, after the round began.
    pub timeline: Vec<(Duration, String)>,
    pub elapsed: Duration,
    /// LISTs the bridge made during the round, and their bound.
    pub lists: u64,
    pub list_bound: u64,
    pub list_rule: String,
    /// Objects listed by the apiserver × viewers compared.
    pub objects_compared: u64,
    pub lost: u64,
    pub phantom: u64,
    /// Deleted objects kept by v1.20's DeltaFIFO because their ADDED was
    /// only queued when a relist was (see `super::queued_deletion`), each
    /// dropped by the next relist.
    pub kept_queued: u64,
    /// The longest a watch event waited in the bridge's FIFO, as the
    /// viewers saw it (µs, since the run began).
    pub longest_fifo_wait: u64,
    pub duplicated: u64,
    pub resyncs: u64,
    /// Writes the writer made in the round, and those that failed.
    pub writes: u64,
    pub failed_writes: u64,
    /// Bridge RSS after the round, KiB, and the bridge's process id.
    pub rss_kib: u64,
    pub bridge_pid: u32,
}

impl Round {
    pub fn timeline_text(&self) -> String {
        self.timeline
            .iter()
            .map(|(t, what)| format!("  +{:>7.3}s {what}", t.as_secs_f64()))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A whole run.
#[derive(Debug, Clone, Default)]
pub struct Run {
    pub seed: u64,
    /// The bridge's `--kubernetes`.
    pub kubernetes: &'static str,
    /// The apiserver and etcd, as they name their versions.
    pub cluster: String,
    pub rounds: Vec<Round>,
    pub viewers: usize,
    pub resources: Vec<&'static str>,
    pub namespaces: Vec<&'static str>,
    pub elapsed: Duration,
    /// The RSS drift verdict, when there were enough rounds.
    pub memory: String,
    /// The failure that ended the run early, if one did.
    pub failure: Option<String>,
}

impl Run {
    pub fn summary(&self) -> String {
        let sum = |f: fn(&Round) -> u64| self.rounds.iter().map(f).sum::<u64>();
        format!(
            "chaos: --kubernetes {} on {}, seed {}, {} rounds in {:.0?}, {} viewers; objects compared {}, lost {}, phantom {}, kept after a deletion while only queued {}, duplicated {}; LISTs {}; writes {} ({} failed); {}",
            self.kubernetes,
            self.cluster,
            self.seed,
            self.rounds.len(),
            self.elapsed,
            self.viewers,
            sum(|r| r.objects_compared),
            sum(|r| r.lost),
            sum(|r| r.phantom),
            sum(|r| r.kept_queued),
            sum(|r| r.duplicated),
            sum(|r| r.lists),
            sum(|r| r.writes),
            sum(|r| r.failed_writes),
            self.memory
        )
    }

    /// RELIABILITY.md, from what this run measured.
    pub fn markdown(&self) -> String {
        let sum = |f: fn(&Round) -> u64| self.rounds.iter().map(f).sum::<u64>();
        let mut by_kind: BTreeMap<Fault, Vec<&Round>> = BTreeMap::new();
        for round in &self.rounds {
            by_kind.entry(round.fault).or_default().push(round);
        }
        let machine = machine();
        let date = command("date", &["-u", "+%Y-%m-%d %H:%M UTC"]);
        let mut md = String::new();
        let _ = writeln!(md, "# Reliability: fault rounds\n");
        let _ = writeln!(
            md,
            "Written by `make chaos` (tests/tests/chaos.rs, tests/src/chaos/) from the run it \
             describes; do not edit by hand. Replay it with \
             `make chaos SEED={} ROUNDS={} KUBERNETES={}`.\n",
            self.seed,
            self.rounds.len(),
            self.kubernetes
        );
        let _ = writeln!(
            md,
            "Two watchlife bridges run with `--kubernetes {}` against a real {}, as \
             `deploy/replicas` runs them; a writer \
             creating, changing and deleting {} in {} namespaces ({}); each bridge watching them \
             through a TCP proxy and then a TLS-terminating one that checks the bearer token \
             the bridge reads from a file (and, on v1.20, sends requests on as a user whose \
             read-only ClusterRole RBAC judges), the apiserver reaching etcd \
             through a TCP proxy of its own; {} viewers (one at full speed on each bridge; two \
             hanging up and resuming with their cursor and one told to stop reading, all three \
             through a round-robin load balancer in front of the bridges, so that each \
             connection may land on either). Each round injects one fault at a moment drawn \
             from the seed, then the writes pause and every viewer's objects are compared with \
             the apiserver's list. The rounds that restart a bridge restart the second, so that \
             the first is one process from start to end and its memory is compared across \
             the run.\n",
            self.kubernetes,
            self.cluster,
            self.resources.join(" and "),
            self.namespaces.len(),
            self.namespaces.join(", "),
            self.viewers
        );
        if let Some(failure) = &self.failure {
            let _ = writeln!(md, "**This run FAILED**:\n\n```\n{failure}\n```\n");
        }
        let _ = writeln!(md, "| | |\n|---|---|");
        let _ = writeln!(md, "| Profile | `--kubernetes {}` |", self.kubernetes);
        let _ = writeln!(md, "| Cluster | {} |", self.cluster);
        let _ = writeln!(md, "| Seed | {} |", self.seed);
        let _ = writeln!(md, "| Rounds | {} |", self.rounds.len());
        let _ = writeln!(md, "| Run time | {:.0?} |", self.elapsed);
        let _ = writeln!(
            md,
            "| Objects compared (objects listed × viewers, every round) | {} |",
            sum(|r| r.objects_compared)
        );
        let _ = writeln!(md, "| Lost | {} |", sum(|r| r.lost));
        let _ = writeln!(md, "| Phantom | {} |", sum(|r| r.phantom));
        if self.kubernetes == "1.20" {
            let _ = writeln!(
                md,
                "| Kept after a deletion while only queued (v1.20.2's DeltaFIFO; each dropped by the next relist, checked) | {} |",
                sum(|r| r.kept_queued)
            );
        }
        let _ = writeln!(md, "| Duplicated events | {} |", sum(|r| r.duplicated));
        let _ = writeln!(
            md,
            "| Longest wait of a watch event in the bridge's FIFO (its Indexer mark less its FIFO mark) | {:.1} ms |",
            self.rounds
                .iter()
                .map(|r| r.longest_fifo_wait)
                .max()
                .unwrap_or(0) as f64
                / 1000.0
        );
        let _ = writeln!(md, "| Resyncs seen by viewers | {} |", sum(|r| r.resyncs));
        let _ = writeln!(
            md,
            "| Writes (failed while the apiserver was away) | {} ({}) |",
            sum(|r| r.writes),
            sum(|r| r.failed_writes)
        );
        let _ = writeln!(md, "| Memory | {} |", self.memory);
        let _ = writeln!(md, "| Machine | {machine} |");
        let _ = writeln!(md, "| Date | {date} |\n");
        let _ = writeln!(md, "## LISTs per fault\n");
        let _ = writeln!(
            md,
            "The bound follows client-go's Reflector: a relist only after a watch (or LIST) \
             failure, and never two list-watch cycles of a resource less than 0.8 s apart \
             (`wait.BackoffUntil`, backoff 0.8 s doubling to 30 s); a fault that does not reach \
             the bridge's upstream allows at most one relist per resource. See `list_bound` in \
             tests/src/chaos/invariants.rs. With 1.36's rules a cycle begins with a streaming \
             list rather than a LIST: those are counted with the LISTs.\n"
        );
        let _ = writeln!(
            md,
            "| Fault | Rounds | LISTs (total) | LISTs per round, max | Bound of that round |\n|---|---|---|---|---|"
        );
        for (fault, rounds) in &by_kind {
            let total: u64 = rounds.iter().map(|r| r.lists).sum();
            let worst = rounds.iter().max_by_key(|r| r.lists).unwrap();
            let _ = writeln!(
                md,
                "| {fault} | {} | {total} | {} | {} |",
                rounds.len(),
                worst.lists,
                worst.list_bound
            );
        }
        let _ = writeln!(md, "\n## Rounds\n");
        let _ = writeln!(
            md,
            "| # | Fault | Time | LISTs / bound | Objects compared | Lost | Phantom | Kept while queued | Dup | Resyncs | Writes (failed) | RSS MiB |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
        );
        for r in &self.rounds {
            let _ = writeln!(
                md,
                "| {} | {} | {:.1} s | {} / {} | {} | {} | {} | {} | {} | {} | {} ({}) | {:.1} |",
                r.number,
                r.fault,
                r.elapsed.as_secs_f64(),
                r.lists,
                r.list_bound,
                r.objects_compared,
                r.lost,
                r.phantom,
                r.kept_queued,
                r.duplicated,
                r.resyncs,
                r.writes,
                r.failed_writes,
                r.rss_kib as f64 / 1024.0
            );
        }
        let _ = writeln!(md, "\n## The two profiles\n");
        let _ = writeln!(
            md,
            "`make chaos KUBERNETES=1.20` runs the bridge with client-go v1.20.2's rules (LIST then \
             WATCH, DeltaFIFO) against kube-apiserver v1.20.2 over etcd 3.4, writing ConfigMaps and \
             Pods. `KUBERNETES=1.36` (the default) runs it with v0.36.4's rules (streaming list, \
             RealFIFO) against apiextensions-apiserver v0.36.4 over etcd 3.5: that apiserver serves \
             custom resources only, so the writer writes one kind, widgets \
             (`widgets.v1.watchlife.example`); the writes straight into etcd use its key layout \
             (`/registry/apiextensions.kubernetes.io/watchlife.example/widgets/NAMESPACE/NAME`, \
             JSON); after each restart its watch cache answers 429 until it is initialized, and a \
             410 is followed by a streaming relist. `make test` runs one round of every fault in each.\n"
        );
        let _ = writeln!(
            md,
            "With v1.20.2's rules one phantom is client-go's own: `DeltaFIFO.Replace` \
             (`tools/cache/delta_fifo.go`, lines 581–601 of v1.20.2) finds a relist's deletions \
             among the Indexer's keys only, so an object whose watch ADDED is still queued when a \
             relist is queued, and which the list lacks, is put in the Indexer after the relist \
             and kept until the next one (client-go v0.36 also looks at the queued keys). The \
             1.20 rounds let such a phantom pass only when a viewer's stream shows it (its last \
             event a watch ADDED queued before a relist of its resource was queued and applied \
             after), then make the bridge relist and require it gone; every other phantom fails \
             the round. The case needs a watch event to wait in the FIFO longer than the \
             Reflector's 0.8 s backoff before a relist: the longest wait measured is in the table \
             above. See tests/src/chaos/queued_deletion.rs and \
             informer/tests/delta_fifo_queued_deletion.rs.\n"
        );
        let _ = writeln!(md, "## Not covered\n");
        let _ = writeln!(
            md,
            "- HTTP 500/503 answers, and 429s other than the v1.36 apiserver's own: the apiservers \
             speak TLS only and the proxy passes TLS through untouched, so it cannot forge a \
             status (tests/tests/chaos.rs forges them in front of the demo's plain-HTTP API).\n\
             - Network partitions between etcd and the apiserver, clock skew, disk full.\n\
             - More than one bridge (see tests/tests/replicas.rs for two replicas)."
        );
        md
    }
}

fn command(program: &str, args: &[&str]) -> String {
    std::process::Command::new(program)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// The CPU model, core count and memory of this machine.
fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).to_string())
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_gib = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0 / 1024.0);
    format!(
        "{model}, {cores} cores available, {mem_gib:.1} GiB, {}",
        command("uname", &["-sr"])
    )
}
