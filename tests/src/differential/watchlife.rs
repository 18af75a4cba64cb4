//! watchlife's side of a differential test: the bridge list-watching the
//! configmaps of `default`, read from its WebSocket stream as the page reads
//! it. Its Reflector frames give the LIST and WATCH requests; its events,
//! the handler calls of the `controller` listener.

use super::trace::{Call, Step, Trace};
use crate::bridge::Bridge;
use crate::ws::Viewer;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;
use tokio::task::JoinHandle;
use watchlife_protocol::{EventType, FrameBody, ReflectorState, ServerFrame};

/// The listener whose calls are compared: the informer's handler with no
/// filter, which enqueues every key into the workqueue.
pub const LISTENER: &str = "controller";

/// The resource both sides watch.
const RESOURCE: &str = "configmaps";

/// How long the bridge may take for its first frame.
const HELLO_WAIT: Duration = Duration::from_secs(30);

/// Longer than any test: the bridge sends heartbeats meanwhile.
const READ_FOREVER: Duration = Duration::from_secs(3600);

/// The bridge and the task that reads its stream into a [`Trace`].
pub struct Watchlife {
    reader: JoinHandle<()>,
    pub bridge: Bridge,
}

impl Watchlife {
    /// Starts `watchlife --kubeconfig K --resources configmaps --namespace
    /// default --min-watch-timeout N` and reads its stream from the first
    /// frame it published (resuming from `seq` 0 replays its window, so the
    /// first LIST is there even when it went out before the viewer came).
    /// Panics if the binary has no `--min-watch-timeout`.
    pub async fn start(kubeconfig: &Path, min_watch_timeout_seconds: u64, trace: Trace) -> Self {
        assert_has_min_watch_timeout();
        let seconds = min_watch_timeout_seconds.to_string();
        let bridge = Bridge::start(&[
            "--kubernetes",
            "1.20",
            "--kubeconfig",
            kubeconfig.to_str().expect("a UTF-8 path"),
            "--resources",
            RESOURCE,
            "--namespace",
            "default",
            "--min-watch-timeout",
            &seconds,
        ])
        .await;
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
        let reader = tokio::spawn(async move {
            loop {
                let frame = viewer.next_frame(READ_FOREVER).await;
                let list_out = trace.lists().last().is_some_and(|l| l.ok.is_none());
                for step in steps(&frame, list_out) {
                    trace.push(step);
                }
            }
        });
        Watchlife { reader, bridge }
    }
}

impl Drop for Watchlife {
    fn drop(&mut self) {
        // Before the bridge goes: the reader would panic at the stream's end.
        self.reader.abort();
    }
}

/// Panics, saying why, when the binary under test lacks the flag the
/// differential tests need to make watches time out soon.
fn assert_has_min_watch_timeout() {
    static HELP: OnceLock<String> = OnceLock::new();
    let help = HELP.get_or_init(|| {
        let out = std::process::Command::new(crate::bridge::binary())
            .arg("--help")
            .output()
            .expect("watchlife --help runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    });
    assert!(
        help.contains("--min-watch-timeout"),
        "{} has no --min-watch-timeout flag (the shortest watch timeout it asks for, in seconds): the differential tests need it",
        crate::bridge::binary().display()
    );
}

/// What one frame says about the configmaps informer; `list_out`: a LIST
/// went out and has not ended yet (a backoff then is its failure).
pub fn steps(frame: &ServerFrame, list_out: bool) -> Vec<Step> {
    match &frame.body {
        FrameBody::Reflector(u) if u.resource == RESOURCE => {
            reflector(&u.state, list_out).into_iter().collect()
        }
        FrameBody::Event(e) if e.target.resource == RESOURCE => {
            if matches!(e.event_type, EventType::Bookmark | EventType::Error) {
                // The Reflector frames tell of these.
                return Vec::new();
            }
            let key = e.target.key();
            let mut steps = vec![Step::Event {
                kind: e.event_type.as_str().into(),
                key: key.clone(),
                rv: e.resource_version.clone(),
                initial: e.initial,
            }];
            steps.extend(
                e.handled
                    .calls
                    .iter()
                    .filter(|c| c.listener == LISTENER)
                    .map(|c| {
                        Step::Call(Call {
                            key: key.clone(),
                            callback: c.callback,
                            rv: e.resource_version.clone(),
                            old_rv: e.handled.old_resource_version.clone(),
                            final_state_unknown: e.handled.final_state_unknown,
                        })
                    }),
            );
            steps
        }
        FrameBody::Resync(r) => vec![Step::Note(format!(
            "the bridge skipped frames (resync: {}); this trace misses some",
            r.reason
        ))],
        _ => Vec::new(),
    }
}

/// A Reflector state as a step; `None` for progress reports.
fn reflector(state: &ReflectorState, list_out: bool) -> Option<Step> {
    Some(match state.clone() {
        ReflectorState::ListStarted {
            resource_version,
            limit,
        } => Step::List {
            rv: resource_version,
            limit,
        },
        ReflectorState::ListFinished {
            count,
            resource_version,
        } => Step::Listed {
            rv: resource_version,
            items: count,
        },
        ReflectorState::WatchStarted {
            resource_version,
            timeout_seconds,
        } => Step::Watch {
            rv: resource_version,
            timeout_seconds,
        },
        ReflectorState::Bookmark { resource_version } => Step::Event {
            kind: "BOOKMARK".into(),
            key: String::new(),
            rv: resource_version,
            initial: false,
        },
        ReflectorState::Backoff { delay_ms, error } if list_out => Step::ListFailed {
            error: format!("{error} (next try in {delay_ms} ms)"),
        },
        ReflectorState::Backoff { delay_ms, error } => {
            Step::Note(format!("backoff {delay_ms} ms after: {error}"))
        }
        ReflectorState::WatchEnded {
            resource_version,
            reason,
        } => Step::Note(format!(
            "the WATCH ended at rv={resource_version}: {reason}"
        )),
        ReflectorState::Gone {
            resource_version,
            message,
        } => Step::Note(format!("410 Gone at rv={resource_version}: {message}")),
        ReflectorState::Relist { reason } => Step::Note(format!("relist: {reason}")),
        ReflectorState::StreamingListStarted {
            resource_version,
            timeout_seconds,
        } => Step::Note(format!(
            "streaming list from rv={resource_version:?}, timeout {timeout_seconds}s"
        )),
        ReflectorState::InitialEventsEnd {
            count,
            resource_version,
        } => Step::Note(format!(
            "initial events ended: {count} objects at rv={resource_version}"
        )),
        ReflectorState::StreamingListFailed { reason } => {
            Step::Note(format!("streaming list failed: {reason}"))
        }
        ReflectorState::ListProgress { .. } | ReflectorState::Answered { .. } => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use watchlife_protocol::Callback;

    fn frame(json: &str) -> ServerFrame {
        serde_json::from_str(json).expect("a frame as the bridge writes it")
    }

    #[test]
    fn an_event_gives_its_controller_calls_only() {
        let event = frame(
            r#"{"seq":5,"type":"event","data":{"event":"MODIFIED","target":{"resource":"configmaps","kind":"ConfigMap","namespace":"default","name":"a"},"resource_version":"6","object":{},"stages":{},
                "handled":{"old_resource_version":"5","calls":[
                    {"listener":"scheduler","callback":"OnUpdate","depth":1,"dequeued":1,"returned":2},
                    {"listener":"controller","callback":"OnUpdate","depth":1,"dequeued":1,"returned":2}]}}}"#,
        );
        let steps = steps(&event, false);
        assert_eq!(steps.len(), 2, "{steps:?}");
        assert_eq!(
            steps[1],
            Step::Call(Call {
                key: "default/a".into(),
                callback: Callback::OnUpdate,
                rv: "6".into(),
                old_rv: Some("5".into()),
                final_state_unknown: false,
            })
        );
    }

    #[test]
    fn a_backoff_while_a_list_is_out_is_its_failure() {
        let backoff = frame(
            r#"{"seq":2,"type":"reflector","data":{"resource":"configmaps","state":"backoff","delay_ms":800,"error":"forbidden"}}"#,
        );
        assert!(matches!(
            steps(&backoff, true)[..],
            [Step::ListFailed { .. }]
        ));
        assert!(matches!(steps(&backoff, false)[..], [Step::Note(_)]));
        let list = frame(
            r#"{"seq":1,"type":"reflector","data":{"resource":"configmaps","state":"list_started","resource_version":"0","limit":500}}"#,
        );
        assert_eq!(
            steps(&list, false),
            vec![Step::List {
                rv: "0".into(),
                limit: 500
            }]
        );
    }
}
