//! client-go v1.20.2's shared informer, run as a reference: the program in
//! `tests/client-go-reference/`, built by `scripts/ensure-client-go-reference.sh`.
//!
//! It prints one JSON line per ListFunc/WatchFunc call, per watch event and
//! per handler call (the format is in its `main.go`); [`Reference`] reads
//! them into a [`Trace`] as they come.

use crate::differential::trace::{Call, Step, Trace};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use watchlife_protocol::Callback;

/// Where `scripts/ensure-client-go-reference.sh` says the binary is, asked
/// once per test process. The script returns at once when the binary for the
/// current `main.go` is built, and otherwise builds it (`make test` does it
/// before any test runs). Panics if the script fails.
pub fn binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let script = crate::workspace().join("scripts/ensure-client-go-reference.sh");
        crate::real_cluster::scripts::run(&script, &[])
            .remove("CLIENT_GO_REFERENCE")
            .unwrap_or_else(|| panic!("{} printed no CLIENT_GO_REFERENCE=", script.display()))
    })
}

/// How the reference informer runs.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Every WATCH asks the server to end it after this many seconds,
    /// instead of the Reflector's random 5–10 minutes.
    pub watch_timeout_seconds: Option<u64>,
}

/// The reference informer over the configmaps of `default`, running until
/// dropped (it is killed then, and it exits by itself if the test process
/// dies: it stops when its stdin closes).
pub struct Reference {
    child: Child,
    /// Held open: closing it stops the program.
    _stdin: ChildStdin,
    /// Its stderr: client-go's own warnings and errors.
    pub log: PathBuf,
}

impl Reference {
    /// Starts the program with `kubeconfig` (its current context; a user
    /// to impersonate in it is honoured) and feeds its lines into `trace`.
    /// Its stderr goes to `log`. Panics if it cannot be started.
    pub fn start(kubeconfig: &Path, options: &Options, trace: Trace, log: &Path) -> Reference {
        let stderr = std::fs::File::create(log)
            .unwrap_or_else(|e| panic!("creating {}: {e}", log.display()));
        let mut command = Command::new(binary());
        command
            .arg("-kubeconfig")
            .arg(kubeconfig)
            .args(["-namespace", "default"]);
        if let Some(seconds) = options.watch_timeout_seconds {
            command.args(["-watch-timeout", &seconds.to_string()]);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", binary().display()));
        let stdin = child.stdin.take().expect("stdin is piped");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout is piped")).lines();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                trace.push(parse(&line));
            }
            trace.push(Step::Note("the client-go reference exited".into()));
        });
        Reference {
            child,
            _stdin: stdin,
            log: log.to_path_buf(),
        }
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

/// One output line as a step; a line it does not know becomes a note.
pub fn parse(line: &str) -> Step {
    let Ok(v) = serde_json::from_str::<Value>(line) else {
        return Step::Note(format!("unparsed output: {line}"));
    };
    let s = |field: &str| v[field].as_str().unwrap_or_default().to_string();
    let n = |field: &str| v[field].as_u64().unwrap_or_default();
    let call = |callback, old_rv| {
        Step::Call(Call {
            key: s("key"),
            callback,
            rv: s("rv"),
            old_rv,
            final_state_unknown: v["finalStateUnknown"].as_bool().unwrap_or(false),
        })
    };
    match v["op"].as_str().unwrap_or_default() {
        "list" if v["continue"] == true => {
            Step::Note(format!("LIST next page, limit={}", n("limit")))
        }
        "list" => Step::List {
            rv: s("rv"),
            limit: n("limit"),
        },
        "listed" if v["continue"] == true => {
            Step::Note(format!("a LIST page of {} items came back", n("items")))
        }
        "listed" => Step::Listed {
            rv: s("rv"),
            items: n("items"),
        },
        "listFailed" => Step::ListFailed { error: s("error") },
        "watch" => Step::Watch {
            rv: s("rv"),
            timeout_seconds: n("timeoutSeconds"),
        },
        "watchFailed" => Step::Note(format!("the WATCH failed: {}", s("error"))),
        "watchEvent" if v["type"] == "ERROR" => Step::Note(format!(
            "watch event ERROR {} {}: {}",
            n("code"),
            s("reason"),
            s("message")
        )),
        "watchEvent" => Step::Event {
            kind: s("type"),
            key: s("key"),
            rv: s("rv"),
            initial: false,
        },
        "OnAdd" => call(Callback::OnAdd, None),
        "OnUpdate" => call(Callback::OnUpdate, Some(s("oldRV"))),
        "OnDelete" => call(Callback::OnDelete, None),
        "synced" => Step::Note("HasSynced".into()),
        _ => Step::Note(format!("unknown output: {line}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_become_steps() {
        assert_eq!(
            parse(r#"{"op":"list","rv":"0","limit":500,"continue":false}"#),
            Step::List {
                rv: "0".into(),
                limit: 500
            }
        );
        assert!(matches!(
            parse(r#"{"op":"list","rv":"","limit":500,"continue":true}"#),
            Step::Note(_)
        ));
        assert_eq!(
            parse(r#"{"op":"watch","rv":"12","timeoutSeconds":417}"#),
            Step::Watch {
                rv: "12".into(),
                timeout_seconds: 417
            }
        );
        assert_eq!(
            parse(r#"{"op":"OnUpdate","key":"default/a","oldRV":"5","rv":"6"}"#),
            Step::Call(Call {
                key: "default/a".into(),
                callback: Callback::OnUpdate,
                rv: "6".into(),
                old_rv: Some("5".into()),
                final_state_unknown: false,
            })
        );
        assert_eq!(
            parse(r#"{"op":"OnDelete","key":"default/a","rv":"6","finalStateUnknown":true}"#),
            Step::Call(Call {
                key: "default/a".into(),
                callback: Callback::OnDelete,
                rv: "6".into(),
                old_rv: None,
                final_state_unknown: true,
            })
        );
        assert!(matches!(parse("panic: oops"), Step::Note(_)));
    }
}
