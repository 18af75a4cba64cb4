//! The invariants checked after each round, and the bounds they hold the
//! bridge to:
//!
//! - (a) objects: every viewer holds what the apiserver lists (names and
//!   resourceVersions), nothing lost, nothing phantom;
//! - (b) stream: each viewer's stream `seq` rises by one, a gap only right
//!   after `resync` + `snapshot`, and no watch event twice between two
//!   snapshots (checked as frames arrive, by [`super::model::Model`]);
//! - (c) LISTs: no more LISTs in a round than client-go's Reflector could
//!   make ([`list_bound`]);
//! - (d) memory: the bridge's RSS after the last round within
//!   [`RSS_MARGIN`] of its RSS after the 10th;
//! - (e) logs: no panic, and no ERROR line, in the bridge's stderr;
//! - (f) told: every credential failure (a 401, a 403) the bridge met is
//!   told to the viewers in the server's words, which the page turns into
//!   what to do ([`credential_failures_told`]);
//! - (g) dead watch: a watch whose connection goes silent is taken for dead
//!   within [`DEAD_WATCH_AFTER`] and [`DEAD_WATCH_MARGIN`], and replaced.

use super::faults::Fault;
use std::fmt;
use std::time::Duration;

/// Which invariant a failure breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invariant {
    Objects,
    Stream,
    Lists,
    Memory,
    Logs,
    Told,
    DeadWatch,
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Invariant::Objects => "(a) objects: viewers hold what the apiserver lists",
            Invariant::Stream => "(b) stream: seq without unannounced gaps, no event twice",
            Invariant::Lists => "(c) LISTs within client-go's bound",
            Invariant::Memory => "(d) memory: RSS drift within its margin",
            Invariant::Logs => "(e) logs: no panic, no unexpected ERROR",
            Invariant::Told => "(f) told: every credential failure reached the viewers",
            Invariant::DeadWatch => {
                "(g) dead watch: a silent watch taken for dead within its bound"
            }
        })
    }
}

/// client-go's shortest wait between two list-watch cycles of one
/// Reflector: `wait.BackoffUntil` with the `backoffManager` of
/// `NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0)` (v1.20): every
/// cycle after the first starts at least 0.8 s after the one before it ended.
pub const MIN_BACKOFF: Duration = Duration::from_millis(800);

/// The most LISTs (first pages) the bridge may make during a round of
/// `fault` that lasted `elapsed`, watching `resources` resources, and why.
///
/// Derived from client-go's Reflector, one per resource:
/// - a LIST starts a list-watch cycle, and only a watch failure (or a
///   failed LIST) ends one; a watch that merely ends (its timeout) is
///   watched again without a LIST. So a fault that never reaches the
///   bridge's upstream connection causes no relist; one failure of the
///   watch that was open is tolerated (a watch may fail on its own).
/// - cycles are separated by at least [`MIN_BACKOFF`], so in `elapsed` a
///   resource starts at most `1 + elapsed / 0.8 s` cycles, however often its
///   watch fails. A restarted bridge starts again with one LIST per resource,
///   counted in the same way.
pub fn list_bound(fault: Fault, elapsed: Duration, resources: usize) -> (u64, String) {
    let resources = resources as u64;
    if !fault.touches_upstream() {
        return (
            resources,
            format!(
                "{fault} does not touch the upstream: at most one relist per resource ({resources})"
            ),
        );
    }
    let cycles = 1 + (elapsed.as_millis() / MIN_BACKOFF.as_millis()) as u64;
    let restarts = u64::from(fault.restarts_bridge());
    let bound = resources * (cycles + restarts);
    (
        bound,
        format!(
            "{resources} resources × (1 + {:.1} s / 0.8 s backoff{}) = {bound}",
            elapsed.as_secs_f64(),
            if restarts > 0 {
                " + 1 initial LIST of the restarted bridge"
            } else {
                ""
            }
        ),
    )
}

/// How long a watch may say nothing before the bridge takes it for dead in
/// the rounds (`--dead-watch-after`): client-go's HTTP/2 transport pings a
/// connection idle for 30 s (`ReadIdleTimeout`) and closes it when the
/// ping goes unanswered for 15 s (`PingTimeout`), so it notices a dead
/// connection within 45 s. The writer keeps every watched resource busy
/// while a round runs, so a live watch is never that quiet then.
pub const DEAD_WATCH_AFTER: std::time::Duration = std::time::Duration::from_secs(45);

/// What the bridge may take beyond [`DEAD_WATCH_AFTER`] to say so: its
/// check runs on the watch's next tick, and the frame crosses a busy
/// machine.
pub const DEAD_WATCH_MARGIN: std::time::Duration = std::time::Duration::from_secs(10);

/// Whether the failures a full-speed viewer was `told` in a round of
/// `fault` include the credential failure the round caused: a 401 for each
/// round in which the gate refused a token (`refused`), a 403 naming the
/// resource for a revoked binding. `Err` says what is missing.
pub fn credential_failures_told(fault: Fault, refused: u64, told: &[String]) -> Result<(), String> {
    let said = |words: &[&str]| {
        told.iter()
            .any(|t| words.iter().any(|w| t.to_lowercase().contains(w)))
    };
    let missing = match fault {
        Fault::TokenRotated if refused > 0 && !said(&["401", "unauthorized"]) => {
            format!("the proxy answered {refused} request(s) 401, but no viewer was told")
        }
        Fault::RbacRevoked if !said(&["403", "forbidden"]) => {
            "the bridge's binding was removed, but no viewer was told of a 403".to_string()
        }
        _ => return Ok(()),
    };
    Err(format!("{missing}; told this round: {told:?}"))
}

/// How far the bridge's RSS after the last round may be above its RSS after
/// the 10th (of 20 or more): half as much again, for allocator slack and
/// caches that fill once; a leak per round or per event grows past that.
pub const RSS_MARGIN: f64 = 1.5;

/// The first round whose RSS the drift is measured from.
pub const RSS_BASE_ROUND: usize = 10;

/// A sample of a Prometheus/OpenMetrics text, 0 when absent.
pub fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            let (n, v) = l.rsplit_once(' ')?;
            (n == name).then(|| v.parse().ok())?
        })
        .unwrap_or(0.0)
}

/// The resident set of process `pid`, in KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// Lines of the bridge's stderr that break (e): a panic, or an ERROR that
/// `fault` does not explain. No fault explains one today: the bridge logs
/// what the apiserver or a viewer did to it at WARN.
pub fn bad_log_lines(text: &str, _fault: Fault) -> Vec<String> {
    text.lines()
        .map(strip_ansi)
        .filter(|l| l.contains(" ERROR ") || l.contains("panicked"))
        .take(10)
        .collect()
}

/// A log line without terminal colour codes.
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
