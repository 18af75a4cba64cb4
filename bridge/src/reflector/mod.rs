//! The Reflector, written out: client-go's ListAndWatch as a state machine
//! whose states are what the UI draws.
//!
//! ```text
//!            ┌──────────────── 410 Gone / watch refused ───────────────┐
//!            ▼                                                          │
//!   LIST (rv "0" first; pages) ──► WATCH from the list's rv ──► events, BOOKMARKs
//!            ▲        │ error            │ ends (timeout, server close)
//!            │        ▼                  ▼
//!            └── backoff (0.8 s … 30 s)  re-WATCH from the last synced rv
//! ```
//!
//! Each transition is published as a `reflector` frame, and each event goes
//! on to the informer's FIFO ([`crate::pipeline::Pipeline`]) stamped with
//! the time it arrived here.
//!
//! The Reflector only ever reads: LIST and WATCH are the only requests it
//! makes, on any cluster.

pub mod backoff;
mod requests;

use crate::hub::Hub;
use crate::pipeline::Pipeline;
use crate::redact::redact;
use crate::target::Target;
use backoff::Backoff;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use rand::Rng;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use watchlife_controlplane::Clock;
use watchlife_protocol::{
    EventType, FrameBody, ObjectRef, ReflectorState, ReflectorUpdate, Stage, StageMark, StageTimes,
    WatchEvent,
};

/// Shortest server-side timeout asked for a watch; each watch asks for a
/// random time between this and twice this, as client-go does (5–10
/// minutes), so that many clients do not all re-watch at once.
pub const MIN_WATCH_TIMEOUT: Duration = Duration::from_secs(300);

/// Items per LIST page (client-go's pager asks for 500). A LIST from
/// resourceVersion "0" is served whole from the watch cache, which ignores it.
pub const LIST_PAGE_SIZE: u32 = 500;

/// Server-side stage times of a change, found by its resourceVersion: the
/// demo control plane knows them exactly; a real cluster, only through its
/// etcd. A source that cannot tell returns nothing, and those stages are
/// drawn as not observed. Looked up as each event leaves the informer
/// ([`crate::pipeline::Pipeline`]), by when the source has long heard of it.
pub trait ServerStages: Send + Sync {
    /// Stage marks of the change at `resource_version`, if known. May wait
    /// a little for a source whose report of the change is on its way.
    fn stages_of<'a>(&'a self, resource_version: &'a str) -> BoxFuture<'a, StageTimes>;
}

/// Why the Reflector lists again, or waits.
#[derive(Debug, thiserror::Error)]
enum Failure {
    /// 410 Gone: the resourceVersion asked for is older than the server keeps.
    #[error("{0}")]
    Gone(String),
    /// The server could not be reached, or the connection broke: the watch
    /// can go on from where it was once the server is back.
    #[error("{0}")]
    Connection(String),
    /// The server refused the request (forbidden, bad selector, ...).
    #[error("{0}")]
    Refused(String),
}

/// How a watch ended.
enum WatchEnd {
    /// Normally (its timeout, or the server closed it): watch again from the
    /// last synced resourceVersion.
    Closed(&'static str),
    Failed(Failure),
}

/// The Reflector of one [`Target`].
pub struct Reflector {
    pub client: kube::Client,
    pub target: Target,
    pub hub: Hub,
    pub pipeline: Pipeline,
    pub clock: Clock,
}

impl Reflector {
    /// Lists and watches until the task is dropped. Never returns.
    pub async fn run(self) {
        let mut backoff = Backoff::default();
        // client-go lists from "0" first (any recent state, from the watch
        // cache); after a 410 from that LIST, from "" (a consistent read).
        let mut list_from = String::from("0");
        loop {
            self.report(ReflectorState::ListStarted {
                resource_version: list_from.clone(),
                limit: 0,
            });
            let mut last = match self.list(&list_from).await {
                Ok(rv) => rv,
                Err(Failure::Gone(message)) => {
                    self.gone(&list_from, &message);
                    list_from = String::new();
                    continue;
                }
                Err(other) => {
                    self.wait(&mut backoff, &other).await;
                    continue;
                }
            };
            loop {
                match self.watch(&mut last).await {
                    WatchEnd::Closed(reason) => self.report(ReflectorState::WatchEnded {
                        resource_version: last.clone(),
                        reason: reason.into(),
                    }),
                    WatchEnd::Failed(Failure::Gone(message)) => {
                        self.gone(&last, &message);
                        list_from = last.clone();
                        break;
                    }
                    WatchEnd::Failed(f @ Failure::Connection(_)) => {
                        // As client-go: the server is likely down; relisting
                        // everything would not help. Watch on from `last`.
                        self.wait(&mut backoff, &f).await;
                    }
                    WatchEnd::Failed(f @ Failure::Refused(_)) => {
                        self.wait(&mut backoff, &f).await;
                        self.hub.metrics().relisted();
                        self.report(ReflectorState::Relist {
                            reason: format!("the watch was refused: {f}"),
                        });
                        list_from = last.clone();
                        break;
                    }
                }
            }
        }
    }

    /// LISTs every page from `from`, hands the items to the FIFO as one
    /// replacement, and returns the list's resourceVersion.
    async fn list(&self, from: &str) -> Result<String, Failure> {
        let mut items = Vec::new();
        let mut resource_version;
        let mut continue_token: Option<String> = None;
        loop {
            let request = requests::list(
                &self.target,
                from,
                LIST_PAGE_SIZE,
                continue_token.as_deref(),
            )
            .map_err(|e| Failure::Refused(e.to_string()))?;
            let body = self.read_list(request).await?;
            let page: Value = serde_json::from_slice(&body)
                .map_err(|e| Failure::Refused(format!("the LIST answer is not JSON: {e}")))?;
            resource_version = page
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            if let Some(Value::Array(page_items)) = page.get("items") {
                items.extend(page_items.iter().cloned());
            }
            continue_token = page
                .pointer("/metadata/continue")
                .and_then(Value::as_str)
                .filter(|c| !c.is_empty())
                .map(String::from);
            if continue_token.is_none() {
                break;
            }
        }
        let listed_at = self.clock.now();
        self.report(ReflectorState::ListFinished {
            count: items.len() as u64,
            resource_version: resource_version.clone(),
        });
        let stages = StageTimes::from([(Stage::Reflector, StageMark::at(listed_at))]);
        let deltas = items
            .into_iter()
            .map(|item| {
                let object = self.received(item);
                let event = self.event(EventType::Added, &object, stages.clone(), true);
                (event, object)
            })
            .collect();
        self.pipeline.deliver_list(deltas);
        Ok(resource_version)
    }

    /// Reads one LIST answer whole, reporting how much has arrived while a
    /// long one comes in (a 150,000-pod LIST takes seconds to minutes).
    async fn read_list(&self, request: http::Request<Vec<u8>>) -> Result<Vec<u8>, Failure> {
        use futures_util::AsyncReadExt;
        let every = Duration::from_millis(watchlife_protocol::LIST_PROGRESS_EVERY_MS);
        let reader = self
            .client
            .request_stream(request)
            .await
            .map_err(classify)?;
        let mut reader = std::pin::pin!(reader);
        let mut body = Vec::new();
        let mut chunk = vec![0u8; 64 * 1024];
        let mut next_report = tokio::time::Instant::now() + every;
        loop {
            let n = reader
                .read(&mut chunk)
                .await
                .map_err(|e| Failure::Connection(format!("reading the LIST: {e}")))?;
            if n == 0 {
                return Ok(body);
            }
            body.extend_from_slice(&chunk[..n]);
            if tokio::time::Instant::now() >= next_report {
                next_report += every;
                tracing::info!(resource = %self.target.name, "LIST in progress: {} bytes received", body.len());
                self.report(ReflectorState::ListProgress {
                    bytes: body.len() as u64,
                });
            }
        }
    }

    /// WATCHes from `last`, moving it on with every event and bookmark.
    async fn watch(&self, last: &mut String) -> WatchEnd {
        let timeout = MIN_WATCH_TIMEOUT
            + Duration::from_secs(rand::rng().random_range(0..MIN_WATCH_TIMEOUT.as_secs()));
        self.report(ReflectorState::WatchStarted {
            resource_version: last.clone(),
            timeout_seconds: timeout.as_secs(),
        });
        let request = match requests::watch(&self.target, last, timeout) {
            Ok(r) => r,
            Err(e) => return WatchEnd::Failed(Failure::Refused(e.to_string())),
        };
        let stream = match self.client.request_events::<Value>(request).await {
            Ok(s) => s,
            Err(e) => return WatchEnd::Failed(classify(e)),
        };
        let _open = OpenWatch::new(&self.hub);
        let mut stream = std::pin::pin!(stream);
        while let Some(item) = stream.next().await {
            let received_at = self.clock.now();
            let event = match item {
                Ok(event) => event,
                Err(e) => return WatchEnd::Failed(classify(e)),
            };
            let (event_type, object) = match event {
                kube::core::WatchEvent::Added(o) => (EventType::Added, o),
                kube::core::WatchEvent::Modified(o) => (EventType::Modified, o),
                kube::core::WatchEvent::Deleted(o) => (EventType::Deleted, o),
                kube::core::WatchEvent::Bookmark(b) => {
                    *last = b.metadata.resource_version;
                    self.report(ReflectorState::Bookmark {
                        resource_version: last.clone(),
                    });
                    self.marker(EventType::Bookmark, last, received_at);
                    continue;
                }
                kube::core::WatchEvent::Error(status) => {
                    self.marker(EventType::Error, last, received_at);
                    let failure = if status.code == 410 {
                        Failure::Gone(status.message)
                    } else {
                        Failure::Refused(format!("{} ({})", status.message, status.code))
                    };
                    return WatchEnd::Failed(failure);
                }
            };
            let object = self.received(object);
            if let Some(rv) = resource_version(&object) {
                *last = rv.to_string();
            }
            let stages = StageTimes::from([(Stage::Reflector, StageMark::at(received_at))]);
            let event = self.event(event_type, &object, stages, false);
            self.pipeline.deliver(event, object);
        }
        WatchEnd::Closed("the watch ended (its timeout, or the server closed it)")
    }

    /// Reports a 410 and the relist it causes.
    fn gone(&self, resource_version: &str, message: &str) {
        self.hub.metrics().relisted();
        self.report(ReflectorState::Gone {
            resource_version: resource_version.into(),
            message: message.into(),
        });
        self.report(ReflectorState::Relist {
            reason: "410 Gone: the resourceVersion is older than the server keeps".into(),
        });
    }

    /// Reports a failure and sleeps for the next backoff delay.
    async fn wait(&self, backoff: &mut Backoff, failure: &Failure) {
        let delay = backoff.next_delay();
        tracing::warn!(
            resource = %self.target.name,
            "list-watch failed, trying again in {delay:?}: {failure}"
        );
        self.report(ReflectorState::Backoff {
            delay_ms: delay.as_millis() as u64,
            error: failure.to_string(),
        });
        tokio::time::sleep(delay).await;
    }

    fn report(&self, state: ReflectorState) {
        self.hub.publish(FrameBody::Reflector(ReflectorUpdate {
            resource: self.target.name.clone(),
            state,
        }));
    }

    /// An object as it arrived, with what must not leave the bridge removed.
    fn received(&self, mut object: Value) -> Arc<Value> {
        // Items of a LIST carry no kind of their own.
        if let Some(map) = object.as_object_mut() {
            map.entry("kind")
                .or_insert_with(|| self.target.resource.kind.clone().into());
            map.entry("apiVersion")
                .or_insert_with(|| self.target.resource.api_version.clone().into());
        }
        Arc::new(redact(&self.target.resource.kind, object))
    }

    fn event(
        &self,
        event_type: EventType,
        object: &Value,
        stages: StageTimes,
        initial: bool,
    ) -> WatchEvent {
        let meta = |field: &str| {
            object
                .pointer(&format!("/metadata/{field}"))
                .and_then(Value::as_str)
                .map(String::from)
        };
        WatchEvent {
            event_type,
            target: ObjectRef {
                resource: self.target.name.clone(),
                kind: self.target.resource.kind.clone(),
                namespace: meta("namespace"),
                name: meta("name").unwrap_or_default(),
            },
            resource_version: meta("resourceVersion").unwrap_or_default(),
            object: object.clone(),
            stages,
            initial,
            coalesced: false,
            handled: Default::default(),
        }
    }

    /// A BOOKMARK or ERROR: it stops at the Reflector, but viewers see it pass.
    fn marker(&self, event_type: EventType, resource_version: &str, at: u64) {
        let mut event = self.event(
            event_type,
            &Value::Null,
            StageTimes::from([(Stage::Reflector, StageMark::at(at))]),
            false,
        );
        event.resource_version = resource_version.into();
        self.hub.publish(FrameBody::Event(event));
    }
}

/// Counts an upstream watch as open for as long as it lives.
struct OpenWatch<'a>(&'a Hub);

impl<'a> OpenWatch<'a> {
    fn new(hub: &'a Hub) -> Self {
        hub.metrics().upstream_watch_opened();
        OpenWatch(hub)
    }
}

impl Drop for OpenWatch<'_> {
    fn drop(&mut self) {
        self.0.metrics().upstream_watch_closed();
    }
}

fn resource_version(object: &Value) -> Option<&str> {
    object
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
}

/// Sorts a client error into what the Reflector does next.
fn classify(error: kube::Error) -> Failure {
    match error {
        kube::Error::Api(status) if status.code == 410 => Failure::Gone(status.message),
        kube::Error::Api(status) => Failure::Refused(if status.message.is_empty() {
            format!("the server answered {}", status.code)
        } else {
            format!("{} ({})", status.message, status.code)
        }),
        other => Failure::Connection(other.to_string()),
    }
}
