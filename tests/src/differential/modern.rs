//! Differential tests against client-go v0.36.4: its dynamic informer
//! ([`crate::modern_cluster::reference`]) and watchlife `--kubernetes 1.36`
//! list-watch the widgets of `default` on the same [`ModernCluster`] (a
//! v0.36.4 generic apiserver on etcd 3.5), side by side.
//!
//! # What must be equal
//! - the requests, in order, each as (kind, resourceVersion, limit), where
//!   the kind is LIST, streaming list (`sendInitialEvents=true`) or WATCH,
//!   and a run of the same request (the retries of a refused one, whose
//!   count the backoff's jitter decides) counted once
//!   ([`ModernPair::check_requests`]). client-go's are the queries it sent;
//!   watchlife's are its Reflector's reports, from which its queries are
//!   built (`bridge/src/upstream/reflector/requests.rs`, whose tests hold the exact
//!   query strings to client-go's);
//! - per object key, the handler's calls: callback, resourceVersions,
//!   DeletedFinalStateUnknown and OnAdd's `isInInitialList`
//!   ([`ModernPair::check_calls`]);
//! - what each side holds at the end, equal to what the server lists
//!   ([`ModernPair::converge`]).

use super::trace::Call;
use crate::bridge::Bridge;
use crate::modern_cluster::reference::{self, Reference, RequestKind, Trace};
use crate::modern_cluster::{ModernCluster, NAMESPACE};
use crate::ws::Viewer;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use watchlife_protocol::{Callback, EventType, FrameBody, ReflectorState};

/// The widgets, as watchlife names the resource pinned to its version (the
/// server has no `/apis` root for discovery).
pub const RESOURCE: &str = "widgets.v1.watchlife.example";

/// The listener whose calls are compared: the informer's unfiltered one.
const LISTENER: &str = "controller";

/// How long a wait may take on 2 busy cores, client-go's backoff included.
const WAIT: Duration = Duration::from_secs(60);

/// How often waits look again.
const POLL: Duration = Duration::from_millis(100);

/// How long the bridge may take for its first frame.
const HELLO_WAIT: Duration = Duration::from_secs(30);

/// Longer than any test: the bridge sends heartbeats meanwhile.
const READ_FOREVER: Duration = Duration::from_secs(3600);

/// A request as compared: its kind, resourceVersion and page size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    pub kind: RequestKind,
    pub rv: String,
    /// LIST only: items per page (0: unpaged).
    pub limit: u64,
}

impl std::fmt::Display for Asked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            RequestKind::List => write!(f, "LIST rv={:?} limit={}", self.rv, self.limit),
            RequestKind::WatchList => write!(f, "STREAM rv={:?}", self.rv),
            RequestKind::Watch => write!(f, "WATCH rv={:?}", self.rv),
        }
    }
}

/// What watchlife's stream said, as the comparison reads it.
#[derive(Debug, Default)]
pub struct Seen {
    pub asked: Vec<Asked>,
    /// The lists that came back: LISTs answered whole, streaming lists that
    /// reached their initial-events-end bookmark.
    pub served: Vec<Asked>,
    /// Handler calls of the compared listener, with `isInInitialList`.
    pub calls: Vec<(Call, bool)>,
    /// What the page holds: name → resourceVersion.
    pub held: BTreeMap<String, String>,
    /// Every Reflector report and event, for the failure report.
    pub lines: Vec<String>,
}

/// watchlife's bridge and the task that reads its stream.
pub struct WatchlifeSide {
    pub seen: Arc<Mutex<Seen>>,
    reader: JoinHandle<()>,
    pub bridge: Bridge,
}

impl WatchlifeSide {
    /// Starts `watchlife --kubernetes 1.36 --kubeconfig K --resources
    /// widgets.v1.watchlife.example --namespace default` with `extra` flags,
    /// and reads its stream from its first frame.
    pub async fn start(cluster: &ModernCluster, extra: &[&str], env: &[(&str, &str)]) -> Self {
        let kubeconfig = cluster.kubeconfig().to_str().expect("a UTF-8 path");
        let mut args = vec![
            "--kubernetes",
            "1.36",
            "--kubeconfig",
            kubeconfig,
            "--resources",
            RESOURCE,
            "--namespace",
            NAMESPACE,
        ];
        args.extend_from_slice(extra);
        let bridge = Bridge::start_with_env(&args, env).await;
        let mut first = Viewer::connect(&bridge.ws_url()).await;
        let FrameBody::Hello(hello) = first.next_frame(HELLO_WAIT).await.body else {
            panic!("hello first");
        };
        let url = format!(
            "{}?stream={}&since=0&batch=false",
            bridge.ws_url(),
            hello.stream
        );
        let mut viewer = Viewer::connect(&url).await;
        let seen = Arc::new(Mutex::new(Seen::default()));
        let filled = seen.clone();
        let reader = tokio::spawn(async move {
            loop {
                let frame = viewer.next_frame(READ_FOREVER).await;
                read(&frame.body, &mut filled.lock().unwrap());
            }
        });
        WatchlifeSide {
            seen,
            reader,
            bridge,
        }
    }
}

impl Drop for WatchlifeSide {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// One frame into what was seen.
fn read(body: &FrameBody, seen: &mut Seen) {
    match body {
        FrameBody::Reflector(u) if u.resource == RESOURCE => {
            let asked = match &u.state {
                ReflectorState::ListStarted {
                    resource_version,
                    limit,
                } => Some((RequestKind::List, resource_version, *limit)),
                ReflectorState::StreamingListStarted {
                    resource_version, ..
                } => Some((RequestKind::WatchList, resource_version, 0)),
                ReflectorState::WatchStarted {
                    resource_version, ..
                } => Some((RequestKind::Watch, resource_version, 0)),
                _ => None,
            };
            if let Some((kind, rv, limit)) = asked {
                seen.asked.push(Asked {
                    kind,
                    rv: rv.clone(),
                    limit,
                });
            }
            // A list came back: the last list-kind request asked is served
            // (a LIST's continuation pages are no request of their own here).
            if matches!(
                u.state,
                ReflectorState::ListFinished { .. } | ReflectorState::InitialEventsEnd { .. }
            ) && let Some(last) = seen
                .asked
                .iter()
                .rev()
                .find(|a| a.kind != RequestKind::Watch)
                .cloned()
            {
                seen.served.push(last);
            }
            seen.lines.push(format!("reflector {:?}", u.state));
        }
        FrameBody::Event(e) if e.target.resource == RESOURCE => {
            seen.lines.push(format!(
                "event {} {} rv={} initial={} calls={:?}",
                e.event_type.as_str(),
                e.target.key(),
                e.resource_version,
                e.handled.in_initial_list,
                e.handled
                    .calls
                    .iter()
                    .map(|c| c.callback.as_str())
                    .collect::<Vec<_>>()
            ));
            match e.event_type {
                EventType::Added | EventType::Modified => {
                    seen.held
                        .insert(e.target.name.clone(), e.resource_version.clone());
                }
                EventType::Deleted => {
                    seen.held.remove(&e.target.name);
                }
                _ => return,
            }
            for c in e.handled.calls.iter().filter(|c| c.listener == LISTENER) {
                let call = Call {
                    key: e.target.key(),
                    callback: c.callback,
                    rv: e.resource_version.clone(),
                    old_rv: e.handled.old_resource_version.clone(),
                    final_state_unknown: e.handled.final_state_unknown,
                };
                let initial = c.callback == Callback::OnAdd && e.handled.in_initial_list;
                seen.calls.push((call, initial));
            }
        }
        _ => {}
    }
}

/// client-go's reference and watchlife, side by side on one cluster.
pub struct ModernPair {
    pub reference: Reference,
    pub watchlife: WatchlifeSide,
    problems: Vec<String>,
}

impl ModernPair {
    /// Starts both on `cluster`: the reference with `options`, watchlife with
    /// `extra` flags and `env`.
    pub async fn start(
        cluster: &ModernCluster,
        options: &reference::Options,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> ModernPair {
        let reference = Reference::start(
            cluster.kubeconfig(),
            options,
            Trace::new(Instant::now()),
            &cluster.dir().join("client-go.log"),
        );
        let watchlife = WatchlifeSide::start(cluster, extra, env).await;
        ModernPair {
            reference,
            watchlife,
            problems: Vec::new(),
        }
    }

    /// Records a difference or a failed wait.
    pub fn problem(&mut self, problem: impl Into<String>) {
        self.problems.push(problem.into());
    }

    /// The reference's requests, as compared.
    pub fn client_go_asked(&self) -> Vec<Asked> {
        self.reference
            .trace()
            .requests()
            .into_iter()
            .map(|r| Asked {
                kind: r.kind(),
                rv: r.param("resourceVersion").unwrap_or_default().to_string(),
                limit: match r.kind() {
                    RequestKind::List => r.param("limit").and_then(|l| l.parse().ok()).unwrap_or(0),
                    _ => 0,
                },
            })
            .collect()
    }

    /// What the reference holds, from its handler's calls: name → rv.
    fn client_go_held(&self) -> BTreeMap<String, String> {
        let mut held = BTreeMap::new();
        for (call, _) in self.reference.trace().calls() {
            let name = call.key.rsplit('/').next().unwrap_or_default().to_string();
            match call.callback {
                Callback::OnDelete => {
                    held.remove(&name);
                }
                _ => {
                    held.insert(name, call.rv);
                }
            }
        }
        held
    }

    /// Waits until both sides hold what the server lists.
    pub async fn converge(&mut self, cluster: &ModernCluster, after: &str) {
        let deadline = Instant::now() + WAIT;
        loop {
            let truth = cluster.widgets(NAMESPACE).await;
            let go = self.client_go_held();
            let wl = self.watchlife.seen.lock().unwrap().held.clone();
            if go == truth && wl == truth {
                return;
            }
            if Instant::now() >= deadline {
                self.problem(format!(
                    "{after}: the sides did not converge on the server's widgets\n      server:    {truth:?}\n      client-go: {go:?}\n      watchlife: {wl:?}"
                ));
                return;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The requests must be the same, in order, runs of one request counted
    /// once.
    pub fn check_requests(&mut self) {
        let collapse = |mut asked: Vec<Asked>| {
            asked.dedup();
            asked.iter().map(Asked::to_string).collect::<Vec<_>>()
        };
        let go = collapse(self.client_go_asked());
        let wl = collapse(self.watchlife.seen.lock().unwrap().asked.clone());
        if go != wl {
            self.problem(format!(
                "the requests differ (runs of one request counted once)\n      client-go: {}\n      watchlife: {}",
                go.join(", "),
                wl.join(", ")
            ));
        }
    }

    /// The lists that came back (streaming lists that reached their
    /// initial-events-end bookmark, and LISTs that were answered) must be
    /// the same, in order. Across a restart the failures each side meets
    /// depend on when its requests land (refused, reset, a connection
    /// closed before the answer, the custom resource not served yet), so
    /// the tests of restarts compare what came of them.
    pub fn check_lists_served(&mut self) {
        let go: Vec<String> = self
            .client_go_served()
            .iter()
            .map(Asked::to_string)
            .collect();
        let wl: Vec<String> = self
            .watchlife
            .seen
            .lock()
            .unwrap()
            .served
            .iter()
            .map(Asked::to_string)
            .collect();
        if go != wl {
            self.problem(format!(
                "the lists served differ\n      client-go: {}\n      watchlife: {}",
                go.join(", "),
                wl.join(", ")
            ));
        }
    }

    /// The reference's lists that came back: a LIST answered 200, a
    /// streaming list whose stream carried the initial-events-end bookmark.
    fn client_go_served(&self) -> Vec<Asked> {
        let trace = self.reference.trace();
        let ended: Vec<u64> = trace
            .entries()
            .iter()
            .filter_map(|e| match &e.line {
                reference::Line::WatchEvent(w) if w.initial_events_end => Some(w.id),
                _ => None,
            })
            .collect();
        trace
            .requests()
            .into_iter()
            .filter(|r| match r.kind() {
                RequestKind::List => trace.response_code(r.id) == Some(200),
                RequestKind::WatchList => ended.contains(&r.id),
                RequestKind::Watch => false,
            })
            .map(|r| Asked {
                kind: r.kind(),
                rv: r.param("resourceVersion").unwrap_or_default().to_string(),
                limit: match r.kind() {
                    RequestKind::List => r.param("limit").and_then(|l| l.parse().ok()).unwrap_or(0),
                    _ => 0,
                },
            })
            .collect()
    }

    /// Per key, the handler's calls (with `isInInitialList`) must be the
    /// same, in the same order.
    pub fn check_calls(&mut self) {
        let by_key = |calls: Vec<(Call, bool)>| {
            let mut keyed: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for (call, initial) in calls {
                let mark = if initial { " (in initial list)" } else { "" };
                keyed
                    .entry(call.key.clone())
                    .or_default()
                    .push(format!("{}{mark}", call.signature()));
            }
            keyed
        };
        let go = by_key(self.reference.trace().calls());
        let wl = by_key(self.watchlife.seen.lock().unwrap().calls.clone());
        let mut keys: Vec<&String> = go.keys().chain(wl.keys()).collect();
        keys.sort();
        keys.dedup();
        for key in keys {
            let (g, w) = (go.get(key), wl.get(key));
            if g != w {
                self.problem(format!(
                    "the handler's calls for {key} differ\n      client-go: {g:?}\n      watchlife: {w:?}"
                ));
            }
        }
    }

    /// Panics with every problem and both sides' traces, if there was any.
    pub fn finish(self) {
        if self.problems.is_empty() {
            return;
        }
        let seen = self.watchlife.seen.lock().unwrap();
        panic!(
            "watchlife --kubernetes 1.36 did not do what client-go v0.36.4 did:\n  - {}\n\n--- client-go's trace ---\n{}\n--- watchlife's stream ---\n{}\n--- end of client-go's stderr ---\n{}\n",
            self.problems.join("\n  - "),
            self.reference.trace().render(),
            seen.lines.join("\n"),
            self.reference.log_tail(),
        );
    }
}
