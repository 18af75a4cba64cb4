//! Watch streams: chunked JSON, one event per line, each written by its own
//! writer, the last stage of the demo's server side.
//!
//! Each line is `{"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":{..}}`.
//! The lines are the Cacher's own serialization of each event
//! ([`watchlife_controlplane::CachedEvent::line`]), made once and written to
//! every watcher. The writer takes what the dispatcher put in its watcher's
//! buffer and writes it; bookmarks come through the buffer too, sent by the
//! dispatcher on the apiserver's schedule (see
//! `watchlife_controlplane::cacher::watcher`).
//!
//! A client may name its requests with the [`CLIENT_HEADER`] header: its
//! watcher is listed under that name, and every event written to it is
//! noted with the time it was written
//! ([`ControlPlane::note_written`]), so the client learns when *its* stream
//! carried each event.
//!
//! A v1.36 WatchList (`sendInitialEvents=true`, see [`crate::watch_list`])
//! starts with a synthetic ADDED event for every current object, from the
//! cache once it has reached the revision asked (for none: the store's
//! current one, a consistent read), then, if the client allows bookmarks, a
//! BOOKMARK annotated `k8s.io/initial-events-end: "true"` at the cache's
//! revision, then the live events.
//!
//! How a watch ends, as with the apiserver's Cacher:
//! - From a resourceVersion older than the cache's window (or compacted): the
//!   answer is `200 OK` and the stream's only line is an ERROR event carrying
//!   a `410 Expired` Status ("too old resource version"). The apiserver never
//!   answers a watch with an HTTP 410: once a watch request is valid, its
//!   errors travel inside the stream.
//! - At `timeoutSeconds` (or [`crate::params::DEFAULT_WATCH_TIMEOUT`]): the
//!   stream simply ends.
//! - When the dispatcher closes the watcher because its buffer stayed full
//!   past the budget, or when every watcher is dropped: the stream ends after
//!   what the buffer held, and the client re-watches from the last
//!   resourceVersion it saw.

use crate::params::CollectionParams;
use crate::response;
use axum::body::Body;
use axum::http::HeaderMap;
use axum::response::Response;
use bytes::Bytes;
use serde_json::json;
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;
use watchlife_controlplane::Gate;
use watchlife_controlplane::cacher::watcher::WatcherId;
use watchlife_controlplane::control_plane::WatchAnswer;
use watchlife_controlplane::status::Status;
use watchlife_controlplane::{
    ApiError, ControlPlane, Delivery, ResourceType, Revision, WatchFilter, WatchOptions,
};
use watchlife_protocol::Micros;

/// The name under which an unnamed HTTP watcher is listed by the Cacher.
pub const WATCHER_NAME: &str = "http";

/// The request header by which a client names its LISTs and WATCHes
/// (printable ASCII, at most
/// [`watchlife_controlplane::control_plane::streams::MAX_STREAM_NAME`]
/// bytes; anything else is ignored).
pub const CLIENT_HEADER: &str = "x-watchlife-client";

/// The client's name, from [`CLIENT_HEADER`].
pub fn client(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(CLIENT_HEADER)?
        .to_str()
        .ok()
        .filter(|name| !name.is_empty() && name.len() <= 128)
}

/// How often a watch that waits for its Cacher to be ready looks again.
const READY_POLL: Duration = Duration::from_millis(5);

/// Starts a watch of `rt` and answers with its stream.
///
/// While the Cacher is (re)initializing, a v1.20 server waits until it is
/// ready (`c.ready.wait()` in `Cacher.Watch`, v1.20.2 `cacher.go`), at most
/// for the watch's own timeout; a v1.36 server with
/// `ResilientWatchCacheInitialization` answers 429 with `Retry-After` at
/// once (`Cacher.Watch`, v0.36.4 `cacher.go`).
pub async fn respond(
    cp: &ControlPlane,
    rt: ResourceType,
    filter: WatchFilter,
    params: &CollectionParams,
    send_initial_events: Option<bool>,
    client: Option<&str>,
) -> Response {
    let asked = params.list.resource_version.clone().unwrap_or_default();
    let from = match start_revision(cp, &asked, send_initial_events) {
        Ok(from) => from,
        Err(status) => return response::status(&status),
    };
    if send_initial_events == Some(true)
        && let Some(refused) = refuse_unless_fresh(cp, rt, from.unwrap_or(0), client).await
    {
        return refused;
    }
    let now = Instant::now();
    // The timeout is bounded (see `params`); a clock near its end must not
    // make the addition panic either.
    let deadline = now
        .checked_add(params.timeout)
        .unwrap_or_else(|| now + crate::params::DEFAULT_WATCH_TIMEOUT);
    let options = WatchOptions {
        name: client.unwrap_or(WATCHER_NAME).to_string(),
        from,
        filter,
        bookmarks: params.allow_bookmarks,
        deadline: Some(
            cp.now()
                .saturating_add(params.timeout.as_micros().min(Micros::MAX as u128) as Micros),
        ),
        buffer: None,
        initial_events: send_initial_events,
        initial_events_end: send_initial_events == Some(true) && params.allow_bookmarks,
    };
    let Some(started) = start(cp, rt, options, deadline).await else {
        return response::stream(Body::empty());
    };
    match started {
        Ok((_, rx)) => {
            if let Some(client) = client {
                let end = u32::from(send_initial_events == Some(true) && params.allow_bookmarks);
                let backlog = (rx.len() as u32).saturating_sub(end);
                let synthetic = send_initial_events == Some(true)
                    || (send_initial_events.is_none() && from.is_none_or(|rv| rv == 0));
                cp.note_watch(
                    client,
                    WatchAnswer {
                        asked,
                        replayed: if synthetic { 0 } else { backlog },
                        synthetic: if synthetic { backlog } else { 0 },
                        at: cp.now(),
                    },
                );
            }
            let writer = Writer {
                cp: cp.clone(),
                client: client.map(String::from),
                rx,
                deadline,
            };
            response::stream(Body::from_stream(futures_util::stream::unfold(
                writer,
                Writer::next,
            )))
        }
        Err(e) => refused(cp, client, e),
    }
}

/// The answer to a watch that could not start: a 410 as an ERROR event, as
/// the apiserver streams it, anything else as its status.
fn refused(cp: &ControlPlane, client: Option<&str>, e: ApiError) -> Response {
    if let Some(client) = client {
        cp.note_watch_refused(client);
    }
    match e {
        ApiError::Gone(message) => {
            response::stream(Body::from(error_line(&Status::expired(message))))
        }
        e => response::status(&Status::from(e)),
    }
}

/// The revision the watch starts after: the one asked for; with
/// `sendInitialEvents` and none asked, the store's current revision
/// (`getWatchCacheResourceVersion`); `None` for "now, with the current
/// objects as ADDED events".
fn start_revision(
    cp: &ControlPlane,
    asked: &str,
    send_initial_events: Option<bool>,
) -> Result<Option<Revision>, Status> {
    let from = match asked {
        "" => None,
        rv => Some(watchlife_controlplane::list::parse_revision(rv).map_err(Status::from)?),
    };
    if send_initial_events.is_some() && from.is_none() {
        return Ok(Some(cp.revision()));
    }
    Ok(from)
}

/// The ERROR answer of a streaming list whose watch cache did not reach
/// `min` in time (`waitUntilWatchCacheFreshAndForceAllEvents`: the initial
/// events are the cache's state once it has reached the revision asked);
/// `None` once it has.
async fn refuse_unless_fresh(
    cp: &ControlPlane,
    rt: ResourceType,
    min: Revision,
    client: Option<&str>,
) -> Option<Response> {
    let (fresh, _) = crate::lists::wait_until_fresh(cp, rt, min, crate::lists::BLOCK_TIMEOUT).await;
    if fresh {
        return None;
    }
    if let Some(client) = client {
        cp.note_watch_refused(client);
    }
    let too_large = ApiError::TooLargeResourceVersion {
        requested: min,
        current: cp.watch_cache_revision(rt),
    };
    Some(response::stream(Body::from(error_line(&Status::from(
        too_large,
    )))))
}

/// Starts the watch. A v1.20 Cacher that is not ready makes it wait
/// (`ready.wait()`), until `deadline` at the latest: `None` then.
async fn start(
    cp: &ControlPlane,
    rt: ResourceType,
    options: WatchOptions,
    deadline: Instant,
) -> Option<Result<(WatcherId, mpsc::Receiver<Delivery>), ApiError>> {
    let waits_for_ready = !cp
        .profile()
        .enabled(Gate::ResilientWatchCacheInitialization);
    loop {
        match cp.watch_opts(rt, options.clone()) {
            Err(ApiError::NotReady { .. }) if waits_for_ready => {
                if Instant::now() >= deadline {
                    return None;
                }
                tokio::time::sleep(READY_POLL).await;
            }
            other => return Some(other),
        }
    }
}

/// One ERROR event line carrying `status`.
pub fn error_line(status: &Status) -> Bytes {
    Bytes::from(format!(
        "{}\n",
        json!({"type": "ERROR", "object": status.to_json()})
    ))
}

/// The writer of one watch stream.
struct Writer {
    cp: ControlPlane,
    client: Option<String>,
    rx: mpsc::Receiver<Delivery>,
    deadline: Instant,
}

impl Writer {
    /// The next event's line, or `None` when the stream ends.
    async fn next(mut self) -> Option<(Result<Bytes, Infallible>, Self)> {
        let delivery = tokio::select! {
            biased;
            delivery = self.rx.recv() => delivery?,
            _ = tokio::time::sleep_until(self.deadline) => return None,
        };
        if let Some(client) = &self.client {
            self.cp.note_written(client, &delivery, self.cp.now());
        }
        Some((Ok(delivery.event.line()), self))
    }
}
