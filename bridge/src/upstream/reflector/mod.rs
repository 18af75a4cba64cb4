//! The Reflector on the bridge: the informer crate's one list-watch driver
//! ([`watchlife_informer::list_watch`]; client-go's ListAndWatch rules live
//! in [`watchlife_informer::reflector`]) adapted to the kube client, handing
//! what comes back to the informer pipeline.
//!
//! Everything the machine reports (LIST, WATCH, BOOKMARK, 410, relist,
//! backoff) goes through the pipeline's FIFO, in stream order with the
//! events, so viewers see a relist after the events that preceded it.
//!
//! The Reflector only ever reads: LIST and WATCH are the only requests it
//! makes, on any cluster.

mod error;
pub mod requests;

use crate::downstream::hub::Hub;
use crate::upstream::connections::{Connections, Pool, within};
use crate::upstream::error_chain::with_causes;
use crate::upstream::pipeline::Pipeline;
use crate::upstream::redact::{Received, redact_text};
use crate::upstream::target::Target;
use error::ReflectorError;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use serde_json::value::RawValue;
use std::time::Duration;
use watchlife_controlplane::Clock;
use watchlife_informer::list_watch::{
    self, ListRequest, Listed, ListerWatcher, Page, Sink, Timer, WatchItem, WatchRequest,
    WatchStream,
};
use watchlife_informer::reflector::{self as machine, Failure, WatchEnd};
use watchlife_informer::{Micros, Object};
use watchlife_informer_frames::convert;
use watchlife_protocol::{
    EventType, ObjectJson, ReflectorState, Stage, StageMark, StageTimes, WatchEvent,
};

pub use watchlife_informer::reflector::Config;

/// How many times a request is sent while each try meets a pooled
/// connection that the server closed before answering (see
/// [`ReflectorError::closed_before_answer`]): Go's `http.Transport`, under
/// client-go, sends such a GET again on another connection by itself; the
/// kube client leaves it to its caller. A restarting server can leave a few
/// such connections in the pool.
const REPLAYS: usize = 4;

/// The Reflector of one [`Target`].
pub struct Reflector {
    /// Forgotten whenever a request or watch is taken for dead.
    pub connections: Connections,
    pub target: Target,
    pub hub: Hub,
    pub pipeline: Pipeline,
    pub clock: Clock,
    pub config: Config,
}

impl Reflector {
    /// Lists and watches until the task is dropped. Never returns.
    pub async fn run(self) {
        let config = self.config.clone();
        let mut sink = PipelineSink(&self);
        list_watch::run(
            &self,
            &mut sink,
            &BridgeTimer(&self.clock),
            config,
            rand::random(),
        )
        .await
    }

    /// One LIST page.
    async fn list_page(&self, request: ListRequest<'_>) -> Result<Page<Object>, ReflectorError> {
        let http = requests::list(
            &self.target,
            request.resource_version,
            request.limit,
            request.continue_token,
        )
        .map_err(|source| ReflectorError::Build { source })?;
        let body = self.read_list(http).await?;
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
        // A LIST sent on a pooled connection that a load balancer forgot
        // is never answered, nor is one whose connection is forgotten half
        // way: neither the answer nor any read of its body waits longer
        // than a silent watch would.
        let bound = self.answer_bound(self.config.min_watch_timeout.as_secs());
        let pool = self.connections.pool();
        let unanswered = |after| self.given_up(&pool, "LIST", after);
        let reader = within(bound, pool.client.request_stream(request))
            .await
            .map_err(unanswered)?
            .map_err(|source| ReflectorError::List { source })?;
        let mut reader = std::pin::pin!(reader);
        let mut body = Vec::new();
        let mut chunk = vec![0u8; 64 * 1024];
        let mut next_report = tokio::time::Instant::now() + every;
        loop {
            let n = within(bound, reader.read(&mut chunk))
                .await
                .map_err(unanswered)?
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

    /// Opens one WATCH (or streaming list).
    async fn open_watch(&self, request: WatchRequest<'_>) -> Result<KubeWatch<'_>, ReflectorError> {
        let http = requests::watch(
            &self.target,
            request.resource_version,
            request.timeout_seconds,
            request.send_initial_events,
        )
        .map_err(|source| ReflectorError::Build { source })?;
        let pool = self.connections.pool();
        let answer = pool.client.request_events::<Box<RawValue>>(http);
        // A request sent on a pooled connection that a load balancer forgot
        // is never answered: it waits no longer than a silent watch would.
        let answered = within(self.answer_bound(request.timeout_seconds), answer)
            .await
            .map_err(|after| self.given_up(&pool, "WATCH", after))?;
        let stream = answered.map_err(|source| ReflectorError::Watch { source })?;
        Ok(KubeWatch {
            reflector: self,
            stream: Box::pin(stream),
            pool,
            _open: OpenWatch::new(&self.hub),
        })
    }

    /// The error of a `request` sent with `pool` and given up `after` a
    /// silence, its connection, and with it the pool, taken for dead.
    fn given_up(&self, pool: &Pool, request: &'static str, after: Duration) -> ReflectorError {
        self.connections.forget(pool);
        ReflectorError::Unanswered { request, after }
    }

    /// How long a request, or a read of its body, may wait for a byte
    /// before its connection is taken for dead: as long as a silent watch
    /// that asked for `timeout_seconds`; `None` when silence is trusted.
    fn answer_bound(&self, timeout_seconds: u64) -> Option<Duration> {
        self.config.silence_bound(timeout_seconds)
    }

    /// Sends a request with `send`, again while each try meets a pooled
    /// connection the server closed before answering, [`REPLAYS`] tries in
    /// all; a last error is logged and sorted into the machine's
    /// [`Failure`].
    async fn replayed<T, F>(&self, send: impl Fn() -> F) -> Result<T, Failure>
    where
        F: Future<Output = Result<T, ReflectorError>>,
    {
        let mut answer = send().await;
        for _ in 1..REPLAYS {
            if !answer
                .as_ref()
                .is_err_and(ReflectorError::closed_before_answer)
            {
                break;
            }
            answer = send().await;
        }
        answer.map_err(|e| {
            tracing::warn!(resource = %self.target.name, "{}", with_causes(&e));
            e.failure()
        })
    }

    /// Reports who answered the LIST (`list`) or WATCH just made, where the
    /// source tells.
    fn report_answer(&self, list: bool) {
        if let Some(answer) = self.pipeline.server_answer(&self.target.name, list) {
            self.report(ReflectorState::Answered { answer });
        }
    }

    fn report(&self, mut state: ReflectorState) {
        if let ReflectorState::Backoff { error, .. } = &mut state
            && crate::test_break::is(crate::test_break::Break::VagueFailures)
        {
            *error = "list-watch failed".into();
        }
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

    /// An event about `object`, one of the target's.
    fn event(
        &self,
        event_type: EventType,
        object: &Object,
        stages: StageTimes,
        initial: bool,
    ) -> WatchEvent {
        convert::object_event(
            &self.target.name,
            &self.target.resource.kind,
            event_type,
            object,
            stages,
            initial,
        )
    }
}

impl ListerWatcher for Reflector {
    type Object = Object;
    type Stream<'a> = KubeWatch<'a>;

    async fn list(&self, request: ListRequest<'_>) -> Result<Page<Object>, Failure> {
        self.replayed(|| self.list_page(request)).await
    }

    async fn watch<'a>(&'a self, request: WatchRequest<'_>) -> Result<KubeWatch<'a>, Failure> {
        self.replayed(|| self.open_watch(request)).await
    }
}

/// The kube client's event stream of one WATCH, counted as open while it
/// lives.
pub struct KubeWatch<'a> {
    reflector: &'a Reflector,
    stream: BoxStream<'static, Result<kube::core::WatchEvent<Box<RawValue>>, kube::Error>>,
    /// The client the WATCH was sent with.
    pool: Pool,
    _open: OpenWatch<'a>,
}

impl WatchStream<Object> for KubeWatch<'_> {
    async fn next(&mut self) -> Option<Result<WatchItem<Object>, Failure>> {
        let event = match self.stream.next().await? {
            Ok(event) => event,
            Err(source) => {
                let e = ReflectorError::WatchStream { source };
                return match e.watch_end() {
                    // A connection that went away ends the stream normally.
                    WatchEnd::Closed => None,
                    WatchEnd::Failed(failure) => {
                        tracing::warn!(resource = %self.reflector.target.name, "{}", with_causes(&e));
                        Some(Err(failure))
                    }
                };
            }
        };
        let received = |object: &RawValue| self.reflector.received(object, false);
        Some(Ok(match event {
            kube::core::WatchEvent::Added(o) => WatchItem::Added(received(&o)),
            kube::core::WatchEvent::Modified(o) => WatchItem::Modified(received(&o)),
            kube::core::WatchEvent::Deleted(o) => WatchItem::Deleted(received(&o)),
            kube::core::WatchEvent::Bookmark(b) => WatchItem::Bookmark {
                initial_events_end: b
                    .metadata
                    .annotations
                    .get(machine::INITIAL_EVENTS_END)
                    .is_some_and(|v| v == "true"),
                resource_version: b.metadata.resource_version,
            },
            kube::core::WatchEvent::Error(status) => {
                WatchItem::Error(error::status_failure(&status))
            }
        }))
    }

    fn taken_for_dead(&mut self) {
        self.reflector.connections.forget(&self.pool);
    }
}

/// Where the driver delivers: the informer pipeline, each object stamped
/// with the time the Reflector had it.
struct PipelineSink<'a>(&'a Reflector);

impl Sink<Object> for PipelineSink<'_> {
    fn report(&mut self, state: ReflectorState) {
        self.0.report(state);
    }

    /// Each object is stamped with the time the Reflector read it (its
    /// page's, or its own initial event's); the pipeline queues the whole
    /// list at once.
    fn replace(&mut self, objects: Vec<Listed<Object>>, _resource_version: &str, _at: Micros) {
        let deltas = objects
            .into_iter()
            .map(|Listed { object, read_at }| {
                let stages = StageTimes::from([(Stage::Reflector, StageMark::at(read_at))]);
                let event = self.0.event(EventType::Added, &object, stages, true);
                (event, object)
            })
            .collect();
        self.0.pipeline.replace(deltas);
    }

    fn delta(&mut self, event_type: EventType, object: Object, at: Micros) {
        let stages = StageTimes::from([(Stage::Reflector, StageMark::at(at))]);
        let event = self.0.event(event_type, &object, stages, false);
        self.0.pipeline.deliver(event, object);
    }

    /// A BOOKMARK or ERROR: it stops at the Reflector, but viewers see it
    /// pass, in stream order.
    fn marker(&mut self, event_type: EventType, resource_version: &str, at: Micros) {
        let mut event = self.0.event(
            event_type,
            &Object::from_json(ObjectJson::null()),
            StageTimes::from([(Stage::Reflector, StageMark::at(at))]),
            false,
        );
        event.resource_version = resource_version.into();
        self.0.pipeline.marker(event);
    }

    fn resync(&mut self) {
        self.0.pipeline.resync();
    }

    fn answered(&mut self, list: bool) {
        self.0.report_answer(list);
    }
}

/// The bridge's clock, and tokio's sleep.
struct BridgeTimer<'a>(&'a Clock);

impl Timer for BridgeTimer<'_> {
    fn now(&self) -> Micros {
        self.0.now()
    }

    async fn sleep(&self, duration: Duration) {
        // Test-only: see crate::test_break.
        if !crate::test_break::is(crate::test_break::Break::SkipBackoff) {
            tokio::time::sleep(duration).await;
        }
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
