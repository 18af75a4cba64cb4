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
use tokio::sync::mpsc;
use tokio::time::Instant;
use watchlife_controlplane::control_plane::WatchAnswer;
use watchlife_controlplane::status::Status;
use watchlife_controlplane::{
    ApiError, ControlPlane, Delivery, ResourceType, WatchFilter, WatchOptions,
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

/// Starts a watch of `rt` and answers with its stream.
pub fn respond(
    cp: &ControlPlane,
    rt: ResourceType,
    filter: WatchFilter,
    params: &CollectionParams,
    client: Option<&str>,
) -> Response {
    if params.list.resource_version_match.is_some() {
        return response::status(&Status::new(
            422,
            "Invalid",
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch",
        ));
    }
    let asked = params.list.resource_version.clone().unwrap_or_default();
    let from = match asked.as_str() {
        "" => None,
        rv => match watchlife_controlplane::list::parse_revision(rv) {
            Ok(rv) => Some(rv),
            Err(e) => return response::status(&Status::from(e)),
        },
    };
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
    };
    match cp.watch_opts(rt, options) {
        Ok((_, rx)) => {
            if let Some(client) = client {
                let backlog = rx.len() as u32;
                let synthetic = from.is_none_or(|rv| rv == 0);
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
        Err(ApiError::Gone(message)) => {
            let line = error_line(&Status::expired(message));
            response::stream(Body::from(line))
        }
        Err(e) => response::status(&Status::from(e)),
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
