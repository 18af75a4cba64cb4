//! client-go v0.36's dynamic SharedIndexInformer, run as a reference: the
//! program in `tests/client-go-reference-modern/`, built by
//! `scripts/ensure-client-go-reference-modern.sh`.
//!
//! It prints one JSON line per HTTP request the informer makes and per
//! answer, per watch event read off the wire, per handler call and when it
//! has synced (the format is in its `main.go`); [`Reference`] reads them
//! into a [`Trace`] of [`Line`]s as they come.

use crate::differential::trace::Call;
use serde_json::Value;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use watchlife_protocol::Callback;

/// How often [`Trace::wait_for`] looks at the trace.
const POLL: Duration = Duration::from_millis(50);

/// Where `scripts/ensure-client-go-reference-modern.sh` says the binary is,
/// asked once per test process. The script returns at once when the binary
/// for the current `main.go` is built, and otherwise builds it (`make test`
/// does it before any test runs). Panics if the script fails.
pub fn binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let script = crate::workspace().join("scripts/ensure-client-go-reference-modern.sh");
        crate::real_cluster::scripts::run(&script, &[])
            .remove("CLIENT_GO_REFERENCE_MODERN")
            .unwrap_or_else(|| {
                panic!(
                    "{} printed no CLIENT_GO_REFERENCE_MODERN=",
                    script.display()
                )
            })
    })
}

/// What the reference informer watches and how.
#[derive(Debug, Clone)]
pub struct Options {
    pub group: String,
    pub version: String,
    /// Plural, as in URLs.
    pub resource: String,
    /// `""`: every namespace.
    pub namespace: String,
    /// The informer's and the handler's resync period; `None`: none.
    pub resync: Option<Duration>,
    /// Environment variables for the program, client-go's feature gates
    /// among them: `("KUBE_FEATURE_WatchListClient", "false")`.
    pub env: Vec<(String, String)>,
}

impl Default for Options {
    /// The widgets of [`super::NAMESPACE`], client-go's defaults otherwise.
    fn default() -> Options {
        Options {
            group: super::GROUP.into(),
            version: super::VERSION.into(),
            resource: super::RESOURCE.into(),
            namespace: super::NAMESPACE.into(),
            resync: None,
            env: Vec::new(),
        }
    }
}

impl Options {
    /// These options with client-go's feature gate `gate` set to `enabled`
    /// (the `KUBE_FEATURE_<gate>` variable client-go reads).
    pub fn client_feature(mut self, gate: &str, enabled: bool) -> Options {
        self.env
            .push((format!("KUBE_FEATURE_{gate}"), enabled.to_string()));
        self
    }
}

/// One HTTP request the informer made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Numbers the program's requests from 1; its response and watch events
    /// carry the same.
    pub id: u64,
    pub method: String,
    pub path: String,
    /// The query string exactly as sent (client-go sorts the parameters).
    pub query: String,
}

/// What kind of read a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    /// A plain LIST (no `watch=true`).
    List,
    /// A WATCH that streams the current state first (`sendInitialEvents=true`).
    WatchList,
    /// A plain WATCH.
    Watch,
}

impl Request {
    /// The first value of the query parameter `name`, percent-decoding left
    /// aside (client-go's values here need none).
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
    }

    /// The parameters' names, in the order sent.
    pub fn param_names(&self) -> Vec<&str> {
        self.query
            .split('&')
            .filter(|pair| !pair.is_empty())
            .map(|pair| pair.split_once('=').map_or(pair, |(k, _)| k))
            .collect()
    }

    pub fn kind(&self) -> RequestKind {
        match (self.param("watch"), self.param("sendInitialEvents")) {
            (Some("true"), Some("true")) => RequestKind::WatchList,
            (Some("true"), _) => RequestKind::Watch,
            _ => RequestKind::List,
        }
    }
}

/// One event of a watch stream, as the Reflector received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchEvent {
    /// The request whose stream carried it.
    pub id: u64,
    /// `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
    pub kind: String,
    /// `namespace/name`; empty for BOOKMARK and ERROR.
    pub key: String,
    /// The object's resourceVersion; empty for ERROR.
    pub rv: String,
    /// A BOOKMARK that ends the initial events of a streaming list.
    pub initial_events_end: bool,
    /// An ERROR's status code (410 for an expired resourceVersion); else 0.
    pub code: u16,
    /// An ERROR's message; else empty.
    pub message: String,
}

/// One output line of the reference program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// The program started; whether client-go's WatchListClient gate is on.
    Start {
        watch_list_client: bool,
    },
    Request(Request),
    /// The answer's status line, or `code` 0 and the `error` that took its place.
    Response {
        id: u64,
        path: String,
        code: u16,
        error: Option<String>,
    },
    WatchEvent(WatchEvent),
    /// The stream of request `id` ended.
    WatchEnd {
        id: u64,
    },
    /// A handler call; `in_initial_list` is OnAdd's `isInInitialList`
    /// (false for the other callbacks).
    Call {
        call: Call,
        in_initial_list: bool,
    },
    /// HasSynced turned true, the informer then at resourceVersion `rv`.
    Synced {
        rv: String,
    },
    /// A line the parser does not know (a Go panic's, say).
    Other(String),
}

/// A line and when the test learned of it, since the trace's origin.
#[derive(Debug, Clone)]
pub struct Entry {
    pub at: Duration,
    pub line: Line,
}

/// The lines so far, filled by a reader task and read by the test. Cloning
/// shares it.
#[derive(Clone)]
pub struct Trace {
    entries: Arc<Mutex<Vec<Entry>>>,
    origin: Instant,
}

impl Trace {
    /// An empty trace whose times count from `origin` (share one origin
    /// with another side's trace to compare times).
    pub fn new(origin: Instant) -> Trace {
        Trace {
            entries: Default::default(),
            origin,
        }
    }

    /// Appends a line, stamped now.
    pub fn push(&self, line: Line) {
        let at = self.origin.elapsed();
        self.entries.lock().unwrap().push(Entry { at, line });
    }

    /// Now, on this trace's clock: a mark to look for lines after.
    pub fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    /// The lines so far.
    pub fn entries(&self) -> Vec<Entry> {
        self.entries.lock().unwrap().clone()
    }

    /// The lines since `mark`.
    pub fn since(&self, mark: Duration) -> Vec<Line> {
        self.entries()
            .into_iter()
            .filter(|e| e.at >= mark)
            .map(|e| e.line)
            .collect()
    }

    /// The requests, in order.
    pub fn requests(&self) -> Vec<Request> {
        requests(&self.since(Duration::ZERO))
    }

    /// The status code answering request `id`, once known (0: no answer,
    /// the request failed).
    pub fn response_code(&self, id: u64) -> Option<u16> {
        self.entries().into_iter().find_map(|e| match e.line {
            Line::Response { id: i, code, .. } if i == id => Some(code),
            _ => None,
        })
    }

    /// The handler calls with OnAdd's `isInInitialList`, in order.
    pub fn calls(&self) -> Vec<(Call, bool)> {
        calls(&self.since(Duration::ZERO))
    }

    /// The resourceVersion the informer had synced at, once it has.
    pub fn synced(&self) -> Option<String> {
        self.entries().into_iter().find_map(|e| match e.line {
            Line::Synced { rv } => Some(rv),
            _ => None,
        })
    }

    /// Waits until `done` holds for the lines so far; panics after
    /// `timeout`, saying `what` and quoting the trace.
    pub async fn wait_for(&self, what: &str, timeout: Duration, done: impl Fn(&[Line]) -> bool) {
        let deadline = Instant::now() + timeout;
        loop {
            if done(&self.since(Duration::ZERO)) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "client-go's informer: not {what} within {timeout:?}; its trace:\n{}",
                self.render()
            );
            tokio::time::sleep(POLL).await;
        }
    }

    /// The trace, one line each, for failure messages.
    pub fn render(&self) -> String {
        self.entries()
            .iter()
            .map(|e| format!("  {:>8.3}s {}\n", e.at.as_secs_f64(), e.line))
            .collect()
    }
}

/// The requests among `lines`, in order.
pub fn requests(lines: &[Line]) -> Vec<Request> {
    lines
        .iter()
        .filter_map(|l| match l {
            Line::Request(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

/// The handler calls among `lines`, with OnAdd's `isInInitialList`, in order.
pub fn calls(lines: &[Line]) -> Vec<(Call, bool)> {
    lines
        .iter()
        .filter_map(|l| match l {
            Line::Call {
                call,
                in_initial_list,
            } => Some((call.clone(), *in_initial_list)),
            _ => None,
        })
        .collect()
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Line::Start { watch_list_client } => {
                write!(f, "start, WatchListClient={watch_list_client}")
            }
            Line::Request(r) => write!(f, "#{} {} {}?{}", r.id, r.method, r.path, r.query),
            Line::Response {
                id,
                code,
                error: None,
                ..
            } => write!(f, "#{id}   → {code}"),
            Line::Response {
                id, error: Some(e), ..
            } => write!(f, "#{id}   → failed: {e}"),
            Line::WatchEvent(e) if e.kind == "ERROR" => {
                write!(f, "#{}   event ERROR {}: {}", e.id, e.code, e.message)
            }
            Line::WatchEvent(e) => {
                let end = if e.initial_events_end {
                    " (initial events end)"
                } else {
                    ""
                };
                write!(f, "#{}   event {} {} rv={}{end}", e.id, e.kind, e.key, e.rv)
            }
            Line::WatchEnd { id } => write!(f, "#{id}   stream ended"),
            Line::Call {
                call,
                in_initial_list,
            } => {
                let initial = if *in_initial_list {
                    " (in initial list)"
                } else {
                    ""
                };
                write!(f, "    {} {}{initial}", call.key, call.signature())
            }
            Line::Synced { rv } => write!(f, "synced at rv={rv}"),
            Line::Other(text) => write!(f, "· {text}"),
        }
    }
}

/// The reference informer, running until dropped (it is killed then, and
/// it exits by itself if the test process dies: it stops when its stdin
/// closes).
pub struct Reference {
    child: Child,
    /// Held open: closing it stops the program.
    _stdin: ChildStdin,
    trace: Trace,
    /// Its stderr: client-go's own warnings and errors.
    pub log: PathBuf,
}

impl Reference {
    /// Starts the program with `kubeconfig` (its current context) and feeds
    /// its lines into `trace`. Its stderr goes to `log`. Panics if it cannot
    /// be started.
    pub fn start(kubeconfig: &Path, options: &Options, trace: Trace, log: &Path) -> Reference {
        let stderr = std::fs::File::create(log)
            .unwrap_or_else(|e| panic!("creating {}: {e}", log.display()));
        let mut command = Command::new(binary());
        command
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--group", &options.group])
            .args(["--version", &options.version])
            .args(["--resource", &options.resource])
            .args(["--namespace", &options.namespace]);
        if let Some(resync) = options.resync {
            command.args(["--resync", &format!("{}ms", resync.as_millis())]);
        }
        command.envs(options.env.iter().map(|(k, v)| (k, v)));
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", binary().display()));
        let stdin = child.stdin.take().expect("stdin is piped");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout is piped")).lines();
        let filled = trace.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                filled.push(parse(&line));
            }
            filled.push(Line::Other("the client-go reference exited".into()));
        });
        Reference {
            child,
            _stdin: stdin,
            trace,
            log: log.to_path_buf(),
        }
    }

    /// What it printed so far, and from now on.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// The end of its stderr, for failure messages.
    pub fn log_tail(&self) -> String {
        const LINES: usize = 20;
        crate::tail(&self.log, LINES)
    }
}

impl Drop for Reference {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// One output line as a [`Line`]; a line it does not know becomes [`Line::Other`].
pub fn parse(text: &str) -> Line {
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return Line::Other(format!("unparsed output: {text}"));
    };
    let s = |field: &str| v[field].as_str().unwrap_or_default().to_string();
    let id = v["id"].as_u64().unwrap_or_default();
    let code = u16::try_from(v["code"].as_u64().unwrap_or_default()).unwrap_or(u16::MAX);
    let call = |callback, old_rv| Line::Call {
        call: Call {
            key: s("key"),
            callback,
            rv: s("rv"),
            old_rv,
            final_state_unknown: v["finalStateUnknown"].as_bool().unwrap_or(false),
        },
        in_initial_list: v["isInInitialList"].as_bool().unwrap_or(false),
    };
    match v["op"].as_str().unwrap_or_default() {
        "start" => Line::Start {
            watch_list_client: v["watchListClient"].as_bool().unwrap_or(false),
        },
        "request" => Line::Request(Request {
            id,
            method: s("method"),
            path: s("path"),
            query: s("query"),
        }),
        "response" => Line::Response {
            id,
            path: s("path"),
            code,
            error: v["error"].as_str().map(str::to_string),
        },
        "watchEvent" => Line::WatchEvent(WatchEvent {
            id,
            kind: s("type"),
            key: s("key"),
            rv: s("rv"),
            initial_events_end: v["initialEventsEnd"].as_bool().unwrap_or(false),
            code,
            message: s("message"),
        }),
        "watchEnd" => Line::WatchEnd { id },
        "OnAdd" => call(Callback::OnAdd, None),
        "OnUpdate" => call(Callback::OnUpdate, Some(s("oldRV"))),
        "OnDelete" => call(Callback::OnDelete, None),
        "synced" => Line::Synced { rv: s("rv") },
        _ => Line::Other(format!("unknown output: {text}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_become_typed() {
        let Line::Request(request) = parse(
            r#"{"op":"request","id":1,"method":"GET","path":"/apis/g/v1/namespaces/n/widgets","query":"allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeoutSeconds=510&watch=true"}"#,
        ) else {
            panic!("a request")
        };
        assert_eq!(request.kind(), RequestKind::WatchList);
        assert_eq!(request.param("timeoutSeconds"), Some("510"));
        assert_eq!(request.param("resourceVersion"), None);
        assert_eq!(
            request.param_names(),
            [
                "allowWatchBookmarks",
                "resourceVersionMatch",
                "sendInitialEvents",
                "timeoutSeconds",
                "watch"
            ]
        );
        assert_eq!(
            parse(r#"{"op":"response","id":1,"path":"/p","code":422}"#),
            Line::Response {
                id: 1,
                path: "/p".into(),
                code: 422,
                error: None
            }
        );
        assert_eq!(
            parse(r#"{"op":"OnAdd","key":"n/a","rv":"5","isInInitialList":true}"#),
            Line::Call {
                call: Call {
                    key: "n/a".into(),
                    callback: Callback::OnAdd,
                    rv: "5".into(),
                    old_rv: None,
                    final_state_unknown: false,
                },
                in_initial_list: true
            }
        );
        assert_eq!(
            parse(r#"{"op":"OnDelete","key":"n/a","rv":"6","finalStateUnknown":true}"#),
            Line::Call {
                call: Call {
                    key: "n/a".into(),
                    callback: Callback::OnDelete,
                    rv: "6".into(),
                    old_rv: None,
                    final_state_unknown: true,
                },
                in_initial_list: false
            }
        );
        assert_eq!(
            parse(r#"{"op":"synced","rv":"9"}"#),
            Line::Synced { rv: "9".into() }
        );
        let Line::WatchEvent(bookmark) = parse(
            r#"{"op":"watchEvent","id":2,"type":"BOOKMARK","rv":"9","initialEventsEnd":true}"#,
        ) else {
            panic!("an event")
        };
        assert!(bookmark.initial_events_end);
        assert!(matches!(parse("panic: oops"), Line::Other(_)));
    }
}
