//! Requests in flight, as the apiserver's `--max-requests-inflight` counts
//! them: every request but a watch holds a place from its arrival until its
//! response has been sent whole (or the connection is gone), so a client that
//! asks for many lists and never reads them holds at most
//! [`MAX_INFLIGHT`] of them in memory. Over it, 429 with `Retry-After`, the
//! apiserver's own answer, which client-go retries by itself. Watches are
//! long-running requests, bounded by the cap on connections instead.

use crate::path;
use crate::response;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use http_body::{Frame, SizeHint};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use watchlife_controlplane::status::Status;

/// Requests other than watches in flight at once. The apiserver allows 400
/// (and 200 writes), sized for a server; kubectl, the bridge and a benchmark
/// use a handful at once, and each request may hold a list of the whole store
/// (or a body of 3 MiB, parsed) until it is sent.
pub const MAX_INFLIGHT: usize = 16;

/// How long a client refused for the cap is told to wait.
pub const RETRY_AFTER_SECS: u32 = 1;

/// The places of one server.
#[derive(Clone)]
pub struct Inflight(Arc<Semaphore>);

impl Inflight {
    pub fn new(places: usize) -> Self {
        Inflight(Arc::new(Semaphore::new(places)))
    }
}

impl Default for Inflight {
    fn default() -> Self {
        Inflight::new(MAX_INFLIGHT)
    }
}

/// The middleware: admits a request, or answers 429.
pub async fn admit(State(places): State<Inflight>, request: Request, next: Next) -> Response {
    if is_watch(&request) {
        return next.run(request).await;
    }
    let Ok(place) = places.0.clone().try_acquire_owned() else {
        let mut refused = response::status(&Status::new(
            429,
            "TooManyRequests",
            format!(
                "Too many requests, please try again later: the demo API serves {MAX_INFLIGHT} requests at once"
            ),
        ));
        refused
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
        return refused;
    };
    next.run(request).await.map(|body| {
        Body::new(Holding {
            body,
            _place: place,
        })
    })
}

/// Whether the request is a watch: `?watch=` true, or the legacy prefix.
fn is_watch(request: &Request) -> bool {
    let uri = request.uri();
    path::parse(uri.path()).is_some_and(|t| t.watch_prefix)
        || crate::params::parse_bool(&crate::params::pairs(uri.query()), "watch") == Ok(true)
}

/// A response body that keeps its request's place until it is dropped.
struct Holding {
    body: Body,
    _place: OwnedSemaphorePermit,
}

impl HttpBody for Holding {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::http::StatusCode;
    use axum::middleware::from_fn_with_state;
    use tower::ServiceExt;

    /// A server whose every answer is a body that never ends.
    fn endless(places: usize) -> Router {
        let never = || async {
            Body::from_stream(futures_util::stream::pending::<Result<Bytes, std::io::Error>>())
        };
        Router::new()
            .fallback(never)
            .layer(from_fn_with_state(Inflight::new(places), admit))
    }

    async fn send(router: &Router, uri: &str) -> Response {
        router
            .clone()
            .oneshot(Request::get(uri).body(Body::empty()).unwrap())
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn a_place_is_held_until_the_response_is_gone_and_watches_take_none() {
        let router = endless(2);
        let first = send(&router, "/api/v1/pods").await;
        let _second = send(&router, "/api/v1/configmaps").await;
        let refused = send(&router, "/api/v1/pods").await;
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(refused.headers()[header::RETRY_AFTER], "1");
        for watch in ["/api/v1/pods?watch=1", "/api/v1/watch/pods"] {
            assert_eq!(send(&router, watch).await.status(), StatusCode::OK);
        }
        drop(first);
        assert_eq!(send(&router, "/api/v1/pods").await.status(), StatusCode::OK);
    }
}
