//! Watch streams: chunked JSON, one event per line.
//!
//! Each line is `{"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":{..}}`.
//! The ADDED, MODIFIED and DELETED lines are the watch cache's own
//! serialization of each event ([`watchlife_controlplane::CachedEvent::line`]),
//! made once and sent to every watcher.
//!
//! How a watch ends, as with the apiserver's watch cache:
//! - From a resourceVersion older than the cache's window (or compacted): the
//!   answer is `200 OK` and the stream's only line is an ERROR event carrying
//!   a `410 Expired` Status ("too old resource version"). The apiserver never
//!   answers a watch with an HTTP 410: once a watch request is valid, its
//!   errors travel inside the stream.
//! - At `timeoutSeconds` (or [`crate::params::DEFAULT_WATCH_TIMEOUT`]): the
//!   stream simply ends.
//! - When the cache closes the watcher because it is too slow, or drops every
//!   watcher: the stream simply ends, and the client re-watches from the last
//!   resourceVersion it saw.

use crate::params::CollectionParams;
use crate::response;
use axum::body::Body;
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use serde_json::json;
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TryRecvError;
use tokio::time::Instant;
use watchlife_controlplane::status::Status;
use watchlife_controlplane::store::Revision;
use watchlife_controlplane::{ApiError, ControlPlane, Delivery, ResourceType, WatchFilter};

/// How often a watch that allows bookmarks gets one. The apiserver sends
/// them about once a minute; the demo sends one every few seconds so that a
/// viewer sees them without waiting.
pub const BOOKMARK_INTERVAL: Duration = Duration::from_secs(5);

/// How long before a watch's timeout its last bookmark is sent, as the
/// apiserver does, so the client resumes from the newest resourceVersion.
pub const BOOKMARK_BEFORE_TIMEOUT: Duration = Duration::from_secs(1);

/// The name under which HTTP watchers are listed by the watch cache.
pub const WATCHER_NAME: &str = "http";

/// Starts a watch of `rt` and answers with its stream.
pub fn respond(
    cp: &ControlPlane,
    rt: ResourceType,
    filter: WatchFilter,
    params: &CollectionParams,
) -> Response {
    if params.list.resource_version_match.is_some() {
        return response::status(&Status::new(
            422,
            "Invalid",
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch",
        ));
    }
    let from = match params.list.resource_version.as_deref() {
        None | Some("") => None,
        Some(rv) => match watchlife_controlplane::list::parse_revision(rv) {
            Ok(rv) => Some(rv),
            Err(e) => return response::status(&Status::from(e)),
        },
    };
    match cp.watch_with(WATCHER_NAME, rt, from, filter) {
        Ok(rx) => {
            let now = Instant::now();
            // The timeout is bounded (see `params`); a clock near its end
            // must not make the addition panic either.
            let deadline = now
                .checked_add(params.timeout)
                .unwrap_or_else(|| now + crate::params::DEFAULT_WATCH_TIMEOUT);
            let state = Watch {
                cp: cp.clone(),
                rt,
                rx,
                deadline,
                bookmarks: params.allow_bookmarks,
                next_bookmark: first_bookmark(now, deadline),
                last_rv: from.unwrap_or(0),
                done: false,
            };
            response::stream(Body::from_stream(futures_util::stream::unfold(
                state,
                Watch::next,
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

fn first_bookmark(now: Instant, deadline: Instant) -> Instant {
    let before_timeout = deadline
        .checked_sub(BOOKMARK_BEFORE_TIMEOUT)
        .filter(|&t| t > now)
        .unwrap_or(now + (deadline - now) / 2);
    (now + BOOKMARK_INTERVAL).min(before_timeout)
}

struct Watch {
    cp: ControlPlane,
    rt: ResourceType,
    rx: mpsc::Receiver<Delivery>,
    deadline: Instant,
    bookmarks: bool,
    next_bookmark: Instant,
    /// The newest resourceVersion this client has been told of.
    last_rv: Revision,
    done: bool,
}

impl Watch {
    /// The next chunk of the stream, or `None` when it ends. Never an empty
    /// chunk.
    async fn next(mut self) -> Option<(Result<Bytes, Infallible>, Self)> {
        loop {
            if self.done {
                return None;
            }
            let chunk = tokio::select! {
                biased;
                delivery = self.rx.recv() => {
                    let delivery = delivery?;
                    self.last_rv = self.last_rv.max(delivery.event.revision);
                    delivery.event.line()
                }
                _ = tokio::time::sleep_until(self.next_bookmark), if self.bookmarks => {
                    self.bookmark()
                }
                _ = tokio::time::sleep_until(self.deadline) => return None,
            };
            if !chunk.is_empty() {
                return Some((Ok(chunk), self));
            }
        }
    }

    /// The events already waiting, then a BOOKMARK at the newest revision
    /// the cache has dispatched (see
    /// [`ControlPlane::watch_cache_revision`]): every event at or below it is
    /// in this watcher's buffer, so once the buffer is drained the bookmark
    /// cannot claim an event the client has not been sent.
    fn bookmark(&mut self) -> Bytes {
        let revision = self.cp.watch_cache_revision(self.rt);
        let mut chunk = BytesMut::new();
        loop {
            match self.rx.try_recv() {
                Ok(delivery) => {
                    self.last_rv = self.last_rv.max(delivery.event.revision);
                    chunk.extend_from_slice(&delivery.event.line());
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    // Closed by the cache: no bookmark may follow a gap.
                    self.done = true;
                    return chunk.freeze();
                }
            }
        }
        if revision >= self.last_rv {
            self.last_rv = revision;
            let line = json!({
                "type": "BOOKMARK",
                "object": {
                    "kind": self.rt.kind,
                    "apiVersion": self.rt.api_version(),
                    "metadata": {"resourceVersion": revision.to_string()},
                },
            });
            chunk.extend_from_slice(format!("{line}\n").as_bytes());
        }
        let now = Instant::now();
        let before_timeout = self.deadline.checked_sub(BOOKMARK_BEFORE_TIMEOUT);
        self.next_bookmark = match before_timeout {
            Some(t) if t > now => (now + BOOKMARK_INTERVAL).min(t),
            // The last one before the timeout has been sent.
            _ => self.deadline + BOOKMARK_INTERVAL,
        };
        chunk.freeze()
    }
}
