//! Differential tests against client-go: client-go v1.20.2's own informer
//! ([`crate::client_go`]) and watchlife ([`watchlife`]) list-watch the
//! configmaps of `default` on the same [`RealCluster`], side by side, while a
//! test writes and makes faults happen; then both must have done the same.
//!
//! # What must be equal
//! - the LIST requests, each one's (rv, limit), in order, retries of a
//!   failed one counted once ([`Pair::check_lists`]);
//! - per object key, the handler's calls: callback, resourceVersion, the old
//!   one of OnUpdate, DeletedFinalStateUnknown ([`Pair::check_calls`]);
//! - the WATCH requests' resourceVersions in order, repeats (retries of the
//!   same WATCH) collapsed ([`Pair::check_watch_rvs`]);
//! - what each side holds at the end, equal to `kubectl get configmaps`
//!   ([`Pair::check_final_objects`]).
//!
//! What a side holds is, for client-go, what its handler was told; for
//! watchlife, what the events of its stream say (what the page's object
//! table shows).
//!
//! Both sides talk to the same server, so equal numbers are expected
//! literally. Waits and checks record what went wrong rather than panic, so
//! that [`Pair::finish`] reports every difference at once, with both traces.

pub mod list_counts;
pub mod modern;
pub mod trace;
pub mod watchlife;

use crate::client_go::{self, Reference};
use crate::real_cluster::RealCluster;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};
use trace::{Call, Trace, View, render};
use watchlife::Watchlife;

/// client-go's shortest watch timeout (the Reflector asks for 5–10 minutes),
/// asked of watchlife when a test does not make watches time out sooner.
const CLIENT_GO_MIN_WATCH_TIMEOUT_SECONDS: u64 = 300;

/// How long a wait may take on 2 busy cores: a relist after a restart takes
/// a few seconds, plus the Reflectors' backoff (up to 3.2 s by the third try).
const WAIT: Duration = Duration::from_secs(30);

/// How long later waits take once one has failed: the test then only
/// gathers the rest of the traces for the report.
const WAIT_AFTER_A_FAILURE: Duration = Duration::from_secs(5);

/// How often waits look at the traces and the cluster.
const POLL: Duration = Duration::from_millis(100);

/// The configmaps both sides watch.
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// client-go's reference and watchlife, side by side on one cluster.
pub struct Pair {
    pub client_go: Trace,
    pub watchlife: Trace,
    reference: Reference,
    // Kept running until the pair is dropped.
    _watchlife: Watchlife,
    problems: Vec<String>,
}

impl Pair {
    /// Starts both with `kubeconfig` (the cluster's, or one acting as
    /// another user). With `watch_timeout_seconds`, client-go's WATCHes ask
    /// for exactly that and watchlife's for `--min-watch-timeout` that
    /// (a random time between it and twice it); else both ask for 5–10 minutes.
    pub async fn start(
        cluster: &RealCluster,
        kubeconfig: &Path,
        watch_timeout_seconds: Option<u64>,
    ) -> Pair {
        let origin = Instant::now();
        let (client_go, watchlife) = (
            Trace::new(origin, View::Calls),
            Trace::new(origin, View::Events),
        );
        let options = client_go::Options {
            watch_timeout_seconds,
        };
        let log = cluster.dir().join("client-go-reference.log");
        let reference = Reference::start(kubeconfig, &options, client_go.clone(), &log);
        let min_watch_timeout =
            watch_timeout_seconds.unwrap_or(CLIENT_GO_MIN_WATCH_TIMEOUT_SECONDS);
        let bridge = Watchlife::start(kubeconfig, min_watch_timeout, watchlife.clone()).await;
        Pair {
            client_go,
            watchlife,
            reference,
            _watchlife: bridge,
            problems: Vec::new(),
        }
    }

    /// Now, on both traces' clock.
    pub fn mark(&self) -> Duration {
        self.client_go.now()
    }

    /// Records a difference or a failed wait of the test's own.
    pub fn problem(&mut self, problem: impl Into<String>) {
        self.problems.push(problem.into());
    }

    /// Waits until `done` holds for both traces; records a problem, naming
    /// the side that is not there, if they do not within the wait.
    pub async fn wait_for(&mut self, what: &str, done: impl Fn(&Trace) -> bool) {
        let deadline = Instant::now() + self.wait();
        loop {
            let (go, wl) = (done(&self.client_go), done(&self.watchlife));
            if go && wl {
                return;
            }
            if Instant::now() >= deadline {
                let late: Vec<&str> = [(go, "client-go"), (wl, "watchlife")]
                    .iter()
                    .filter(|(ok, _)| !ok)
                    .map(|(_, side)| *side)
                    .collect();
                self.problem(format!("{what}: not reached by {}", late.join(" and ")));
                return;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Waits until both sides hold what the cluster holds (name →
    /// resourceVersion); records a problem showing all three if they do not.
    pub async fn converge(&mut self, cluster: &RealCluster, after: &str) {
        let deadline = Instant::now() + self.wait();
        loop {
            let truth = configmaps(cluster).await;
            let (go, wl) = (self.client_go.held(), self.watchlife.held());
            if go == truth && wl == truth {
                return;
            }
            if Instant::now() >= deadline {
                self.problem(format!(
                    "{after}: the sides did not converge on the cluster's configmaps\n      cluster:   {}\n      client-go: {}\n      watchlife: {}",
                    objects(&truth),
                    objects(&go),
                    objects(&wl)
                ));
                return;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    fn wait(&self) -> Duration {
        if self.problems.is_empty() {
            WAIT
        } else {
            WAIT_AFTER_A_FAILURE
        }
    }

    /// The LIST requests, (rv, limit) in order, must be the same; a LIST
    /// that failed and was tried again as it was counts once with its
    /// retries (how many tries a backoff with random jitter takes while the
    /// server is down or refuses is not deterministic; a LIST that came back
    /// and is made again is not a retry and counts each time).
    pub fn check_lists(&mut self) {
        let (go, wl) = (lists(&self.client_go), lists(&self.watchlife));
        if go != wl {
            self.problem(format!(
                "the LISTs differ (retries of a failed one counted once)\n      client-go: {}\n      watchlife: {}",
                abbreviated(&go),
                abbreviated(&wl)
            ));
        }
    }

    /// Per key, the handler's calls must be the same, in the same order.
    pub fn check_calls(&mut self) {
        let (go, wl) = (self.client_go.calls(), self.watchlife.calls());
        let mut keys: Vec<&String> = go.keys().chain(wl.keys()).collect();
        keys.sort();
        keys.dedup();
        for key in keys {
            let (g, w) = (signatures(go.get(key)), signatures(wl.get(key)));
            if g != w {
                self.problem(format!(
                    "the handler's calls for {key} differ\n      client-go: {g}\n      watchlife: {w}"
                ));
            }
        }
    }

    /// The WATCH requests' resourceVersions must be the same, in order,
    /// each run of retries from one resourceVersion counted once.
    pub fn check_watch_rvs(&mut self) {
        let rvs = |trace: &Trace| {
            let mut rvs: Vec<String> = trace.watches().into_iter().map(|(rv, _)| rv).collect();
            rvs.dedup();
            rvs
        };
        let (go, wl) = (rvs(&self.client_go), rvs(&self.watchlife));
        if go != wl {
            self.problem(format!(
                "the WATCHes' resourceVersions differ\n      client-go: {}\n      watchlife: {}",
                abbreviated(&go),
                abbreviated(&wl)
            ));
        }
    }

    /// What each side holds must be what `kubectl get configmaps -n default`
    /// lists, as `admin` (a kubeconfig allowed to list them).
    pub async fn check_final_objects(&mut self, admin: &Path, home: &Path) {
        let truth = kubectl_configmaps(admin, home).await;
        let held = [
            ("client-go", self.client_go.held()),
            ("watchlife", self.watchlife.held()),
        ];
        for (side, held) in held {
            if held != truth {
                self.problem(format!(
                    "{side} holds {} where kubectl lists {}",
                    objects(&held),
                    objects(&truth)
                ));
            }
        }
    }

    /// Panics with every problem recorded and both traces, if there was any.
    /// First prints each side's LIST count when asked (see [`list_counts`]).
    pub fn finish(self) {
        list_counts::print_if_asked(&self);
        if self.problems.is_empty() {
            return;
        }
        panic!(
            "watchlife did not do what client-go v1.20.2 did:\n  - {}\n\n--- client-go's trace ---\n{}\n--- watchlife's trace ---\n{}\n--- end of client-go's stderr ({}) ---\n{}\n",
            self.problems.join("\n  - "),
            render(&self.client_go.entries()),
            render(&self.watchlife.entries()),
            self.reference.log.display(),
            self.reference.log_tail(),
        );
    }
}

/// A trace's LIST requests, each failed one followed by the same request
/// left out (its retry stands for it).
fn lists(trace: &Trace) -> Vec<String> {
    let lists = trace.lists();
    let retried = |i: usize| {
        let (this, next) = (&lists[i], lists.get(i + 1));
        this.ok == Some(false) && next.is_some_and(|n| (&n.rv, n.limit) == (&this.rv, this.limit))
    };
    (0..lists.len())
        .filter(|&i| !retried(i))
        .map(|i| lists[i].to_string())
        .collect()
}

/// The first items, comma-separated, and how many more there are: a
/// side that storms makes thousands of requests.
fn abbreviated(items: &[String]) -> String {
    const SHOWN: usize = 12;
    let mut text = items[..items.len().min(SHOWN)].join(", ");
    if items.len() > SHOWN {
        text += &format!(", … {} in all", items.len());
    }
    if items.is_empty() {
        text = "(none)".into();
    }
    text
}

/// A key's calls, one after the other, or "(none)".
fn signatures(calls: Option<&Vec<Call>>) -> String {
    match calls {
        Some(calls) if !calls.is_empty() => calls
            .iter()
            .map(Call::signature)
            .collect::<Vec<_>>()
            .join(", "),
        _ => "(none)".into(),
    }
}

/// `{key=rv, ...}`.
fn objects(held: &BTreeMap<String, String>) -> String {
    let items: Vec<String> = held.iter().map(|(k, rv)| format!("{k}={rv}")).collect();
    format!("{{{}}}", items.join(", "))
}

/// The configmaps of `default` as the apiserver lists them: key → rv.
pub async fn configmaps(cluster: &RealCluster) -> BTreeMap<String, String> {
    let list = cluster.client().get(CONFIGMAPS).await;
    assert_eq!(list.code, 200, "{}", list.text);
    keyed(&list.body)
}

/// The same, as `kubectl get configmaps -n default -o json` prints it.
async fn kubectl_configmaps(kubeconfig: &Path, home: &Path) -> BTreeMap<String, String> {
    let out = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["get", "configmaps", "-n", "default", "-o", "json"])
        // kubectl keeps a discovery cache under $HOME.
        .env("HOME", home)
        .output()
        .await
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "kubectl get configmaps: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    keyed(&serde_json::from_slice(&out.stdout).expect("kubectl prints JSON"))
}

/// A list's items by `namespace/name`, with their resourceVersions.
fn keyed(list: &serde_json::Value) -> BTreeMap<String, String> {
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| {
            let meta = &item["metadata"];
            let text = |f: &str| meta[f].as_str().unwrap_or_default().to_string();
            (
                format!("{}/{}", text("namespace"), text("name")),
                text("resourceVersion"),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace::Step;

    #[test]
    fn a_failed_list_tried_again_counts_once_and_a_repeated_one_each_time() {
        let trace = Trace::new(Instant::now(), View::Calls);
        let list = |rv: &str, limit| Step::List {
            rv: rv.into(),
            limit,
        };
        let failed = || Step::ListFailed {
            error: "forbidden".into(),
        };
        let listed = || Step::Listed {
            rv: "9".into(),
            items: 0,
        };
        for step in [
            list("0", 500),
            failed(),
            list("0", 500),
            failed(),
            list("0", 500),
            listed(),
            list("9", 0),
            listed(),
            list("9", 0),
            failed(),
            list("", 500),
        ] {
            trace.push(step);
        }
        assert_eq!(
            lists(&trace),
            [
                r#"LIST rv="0" limit=500"#,
                r#"LIST rv="9" limit=0"#,
                r#"LIST rv="9" limit=0"#,
                r#"LIST rv="" limit=500"#,
            ]
        );
    }
}
