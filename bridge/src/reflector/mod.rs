//! The Reflector's driver on the bridge: performs, through the kube client,
//! the requests that the informer crate's Reflector state machine asks for
//! ([`watchlife_informer::reflector`], where client-go's ListAndWatch rules
//! live), and hands what comes back to the informer pipeline.
//!
//! Everything the machine reports (LIST, WATCH, BOOKMARK, 410, relist,
//! backoff) goes through the pipeline's FIFO, in stream order with the
//! events, so viewers see a relist after the events that preceded it.
//!
//! The Reflector only ever reads: LIST and WATCH are the only requests it
//! makes, on any cluster.

mod error;
pub mod requests;

use crate::hub::Hub;
use crate::pipeline::Pipeline;
use crate::redact::{Received, redact_text};
use crate::target::Target;
use error::ReflectorError;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use serde_json::value::RawValue;
use std::time::Duration;
use watchlife_controlplane::Clock;
use watchlife_informer::Object;
use watchlife_informer::reflector::{self as machine, Effect, Request, Step, WatchEnd};
use watchlife_protocol::{
    EventType, ObjectJson, ObjectRef, ReflectorState, Stage, StageMark, StageTimes, WatchEvent,
};

pub use watchlife_informer::reflector::Config;

/// Server-side stage times of a change, found by its resourceVersion: the
/// demo control plane knows them exactly; a real cluster, only through its
/// etcd. A source that cannot tell returns nothing, and those stages are
/// drawn as not observed. Looked up as each event leaves the informer
/// ([`crate::pipeline::Pipeline`]), by when the source has long heard of it.
pub trait ServerStages: Send + Sync {
    /// Stage marks of the change at `resource_version`, if known. May wait
    /// a little for a source whose report of the change is on its way.
    fn stages_of<'a>(&'a self, resource_version: &'a str) -> BoxFuture<'a, StageTimes>;

    /// The stage marks and every server-side hop of the event at
    /// `resource_version` as the watch stream of `client` carried it
    /// ([`requests::client_name`]), where the server records each stream
    /// (the demo does). A replayed event gets its own stream's times, a
    /// synthetic ADDED no commit time.
    fn stream_path(
        &self,
        _client: &str,
        _resource_version: &str,
    ) -> Option<(StageTimes, watchlife_protocol::ServerPath)> {
        None
    }

    /// Who answered the last LIST (`list`) or WATCH of `client`, where the
    /// server tells.
    fn answer(&self, _client: &str, _list: bool) -> Option<watchlife_protocol::ServerAnswer> {
        None
    }
}

/// The Reflector of one [`Target`].
pub struct Reflector {
    pub client: kube::Client,
    pub target: Target,
    pub hub: Hub,
    pub pipeline: Pipeline,
    pub clock: Clock,
    pub config: Config,
}

/// The items of the LIST pages read so far.
type Pages = Vec<Object>;

impl Reflector {
    /// Lists and watches until the task is dropped. Never returns.
    pub async fn run(self) {
        let mut machine = machine::Reflector::new(self.config.clone(), rand::random());
        let mut pages = Pages::new();
        let mut step = machine.start(self.clock.now());
        loop {
            self.apply(step.effects, &mut pages);
            step = match step.request {
                Request::List {
                    resource_version,
                    limit,
                    continue_token,
                } => {
                    let page = self
                        .list_page(&resource_version, limit, continue_token.as_deref())
                        .await;
                    let now = self.clock.now();
                    match page {
                        Ok(page) => {
                            self.report_answer(true);
                            let count = page.items.len() as u64;
                            pages.extend(page.items);
                            machine.list_page(
                                count,
                                &page.resource_version,
                                page.continue_token.as_deref(),
                                now,
                            )
                        }
                        Err(e) => {
                            tracing::warn!(resource = %self.target.name, "{}", e.chain());
                            machine.list_failed(e.failure(), now)
                        }
                    }
                }
                Request::Watch {
                    resource_version,
                    timeout_seconds,
                } => {
                    self.watch(&mut machine, &resource_version, timeout_seconds)
                        .await
                }
                Request::Wait(delay) => {
                    // Test-only: see crate::test_break.
                    if !crate::test_break::is(crate::test_break::Break::SkipBackoff) {
                        tokio::time::sleep(delay).await;
                    }
                    machine.waited(self.clock.now())
                }
            };
        }
    }

    /// Carries out the machine's effects, in order.
    fn apply(&self, effects: Vec<Effect>, pages: &mut Pages) {
        for effect in effects {
            match effect {
                Effect::Report(state) => self.report(state),
                Effect::DiscardPages => pages.clear(),
                Effect::Replace { .. } => {
                    let listed_at = self.clock.now();
                    let stages = StageTimes::from([(Stage::Reflector, StageMark::at(listed_at))]);
                    let deltas = pages
                        .drain(..)
                        .map(|object| {
                            let event = self.event(EventType::Added, &object, stages.clone(), true);
                            (event, object)
                        })
                        .collect();
                    self.pipeline.replace(deltas);
                }
            }
        }
    }

    /// One LIST page.
    async fn list_page(
        &self,
        from: &str,
        limit: u64,
        continue_token: Option<&str>,
    ) -> Result<Page, ReflectorError> {
        let request = requests::list(&self.target, from, limit, continue_token)
            .map_err(|source| ReflectorError::Build { source })?;
        let body = self.read_list(request).await?;
        let page: ListBody<'_> = serde_json::from_slice(&body)
            .map_err(|source| ReflectorError::DecodeList { source })?;
        // Each item is read in place from the body and becomes an object
        // at once: no tree is built, and no second copy of the list is made.
        let items = page
            .items
            .unwrap_or_default()
            .into_iter()
            .map(|raw| self.received(raw, true))
            .collect();
        Ok(Page {
            items,
            resource_version: page.metadata.resource_version,
            continue_token: Some(page.metadata.continue_token).filter(|t| !t.is_empty()),
        })
    }

    /// Reads one LIST answer whole, reporting how much has arrived while a
    /// long one comes in (a 150,000-pod LIST takes seconds to minutes).
    async fn read_list(&self, request: http::Request<Vec<u8>>) -> Result<Vec<u8>, ReflectorError> {
        use futures_util::AsyncReadExt;
        let every = Duration::from_millis(watchlife_protocol::LIST_PROGRESS_EVERY_MS);
        let reader = self
            .client
            .request_stream(request)
            .await
            .map_err(|source| ReflectorError::List { source })?;
        let mut reader = std::pin::pin!(reader);
        let mut body = Vec::new();
        let mut chunk = vec![0u8; 64 * 1024];
        let mut next_report = tokio::time::Instant::now() + every;
        loop {
            let n = reader
                .read(&mut chunk)
                .await
                .map_err(|source| ReflectorError::ReadList { source })?;
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

    /// One WATCH, to its end; resyncs the store when due meanwhile.
    async fn watch(
        &self,
        machine: &mut machine::Reflector,
        from: &str,
        timeout_seconds: u64,
    ) -> Step {
        let request = match requests::watch(&self.target, from, timeout_seconds) {
            Ok(r) => r,
            Err(source) => {
                let e = ReflectorError::Build { source };
                return machine.watch_failed(e.failure(), self.clock.now());
            }
        };
        let stream = match self.client.request_events::<Box<RawValue>>(request).await {
            Ok(s) => s,
            Err(source) => {
                let e = ReflectorError::Watch { source };
                tracing::warn!(resource = %self.target.name, "{}", e.chain());
                return machine.watch_failed(e.failure(), self.clock.now());
            }
        };
        self.report_answer(false);
        let _open = OpenWatch::new(&self.hub);
        let mut stream = std::pin::pin!(stream);
        loop {
            let resync = resync_sleep(machine.resync_at(), self.clock.now());
            let item = tokio::select! {
                item = stream.next() => item,
                _ = resync => {
                    self.pipeline.resync();
                    machine.resynced(self.clock.now());
                    continue;
                }
            };
            let received_at = self.clock.now();
            let event = match item {
                None => return machine.watch_ended(WatchEnd::Closed, received_at),
                Some(Ok(event)) => event,
                Some(Err(source)) => {
                    let e = ReflectorError::WatchStream { source };
                    let end = e.watch_end();
                    if end != WatchEnd::Closed {
                        tracing::warn!(resource = %self.target.name, "{}", e.chain());
                    }
                    return machine.watch_ended(end, received_at);
                }
            };
            let (event_type, object) = match event {
                kube::core::WatchEvent::Added(o) => (EventType::Added, o),
                kube::core::WatchEvent::Modified(o) => (EventType::Modified, o),
                kube::core::WatchEvent::Deleted(o) => (EventType::Deleted, o),
                kube::core::WatchEvent::Bookmark(b) => {
                    let rv = b.metadata.resource_version;
                    let effects = machine.watch_event(&rv, true);
                    self.marker(EventType::Bookmark, &rv, received_at);
                    self.apply(effects, &mut Pages::new());
                    continue;
                }
                kube::core::WatchEvent::Error(status) => {
                    self.marker(
                        EventType::Error,
                        machine.last_sync_resource_version(),
                        received_at,
                    );
                    let failure = error::status_failure(&status);
                    return machine.watch_ended(WatchEnd::Failed(failure), received_at);
                }
            };
            let object = self.received(&object, false);
            machine.watch_event(object.resource_version(), false);
            let stages = StageTimes::from([(Stage::Reflector, StageMark::at(received_at))]);
            let event = self.event(event_type, &object, stages, false);
            self.pipeline.deliver(event, object);
        }
    }

    /// Reports who answered the LIST (`list`) or WATCH just made, where the
    /// source tells.
    fn report_answer(&self, list: bool) {
        if let Some(answer) = self.pipeline.server_answer(&self.target.name, list) {
            self.report(ReflectorState::Answered { answer });
        }
    }

    fn report(&self, state: ReflectorState) {
        match &state {
            ReflectorState::Relist { .. } => self.hub.metrics().relisted(),
            ReflectorState::ListStarted { .. } => self.hub.metrics().listed(),
            ReflectorState::Backoff { error, .. } => {
                tracing::warn!(resource = %self.target.name, "list-watch: {error}")
            }
            _ => {}
        }
        self.pipeline.report(&self.target.name, state);
    }

    /// An object as it arrived (`listed`: as an item of a LIST, which
    /// carries no kind of its own, so the target's is filled in), with what
    /// must not leave the bridge removed.
    fn received(&self, json: &RawValue, listed: bool) -> Object {
        Object::from_json(redact_text(Received {
            kind: &self.target.resource.kind,
            api_version: &self.target.resource.api_version,
            json,
            listed,
        }))
    }

    fn event(
        &self,
        event_type: EventType,
        object: &Object,
        stages: StageTimes,
        initial: bool,
    ) -> WatchEvent {
        let meta = object.meta();
        WatchEvent {
            event_type,
            target: ObjectRef {
                resource: self.target.name.clone(),
                kind: self.target.resource.kind.clone(),
                namespace: meta.namespace().map(String::from),
                name: meta.name().to_string(),
            },
            resource_version: meta.resource_version.to_string(),
            object: object.json().clone(),
            stages,
            initial,
            coalesced: false,
            handled: Default::default(),
            server: None,
        }
    }

    /// A BOOKMARK or ERROR: it stops at the Reflector, but viewers see it
    /// pass, in stream order.
    fn marker(&self, event_type: EventType, resource_version: &str, at: u64) {
        let mut event = self.event(
            event_type,
            &Object::from_json(ObjectJson::null()),
            StageTimes::from([(Stage::Reflector, StageMark::at(at))]),
            false,
        );
        event.resource_version = resource_version.into();
        self.pipeline.marker(event);
    }
}

/// A LIST answer's body: its items kept as text until each is read.
#[derive(serde::Deserialize)]
struct ListBody<'a> {
    #[serde(default)]
    metadata: ListMeta,
    #[serde(default, borrow)]
    items: Option<Vec<&'a RawValue>>,
}

/// A LIST's `metadata`.
#[derive(serde::Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ListMeta {
    resource_version: String,
    #[serde(rename = "continue")]
    continue_token: String,
}

/// One LIST page as read.
struct Page {
    items: Vec<Object>,
    resource_version: String,
    continue_token: Option<String>,
}

/// Sleeps until the next resync is due; forever when none is.
async fn resync_sleep(at: Option<u64>, now: u64) {
    match at {
        Some(at) => tokio::time::sleep(Duration::from_micros(at.saturating_sub(now))).await,
        None => std::future::pending().await,
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
