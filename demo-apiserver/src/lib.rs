//! The Kubernetes HTTP API of the embedded demo control plane.
//!
//! A thin adapter: every rule (resourceVersions, selectors, paging, the
//! watch cache, graceful deletion, compaction) lives in the IO-free core,
//! `watchlife-controlplane`; this crate only maps URLs, query parameters,
//! bodies and errors to and from it, and streams watches.
//!
//! # Layout
//! - [`serve`], [`serve_with`] and [`router`] (here): the server, its
//!   periodic compaction and its shutdown; every connection bounded by
//!   `watchlife-serve` (timeouts, a cap on connections).
//! - [`door`]: who may use the API (loopback, or a token; `Host`; no
//!   browsers); [`inflight`]: requests in flight.
//! - [`handlers`]: the verbs on resources; [`path`]: resource URLs;
//!   [`params`]: query parameters.
//! - [`discovery`]: `/version`, `/api`, `/apis` and the group versions.
//! - [`access`]: the self-subject reviews (`kubectl auth can-i`), all
//!   allowed; [`refusals`]: what the demo has no kubelet or metrics for.
//! - [`watch`]: watch streams (each one's writer) and how a watch ends;
//!   [`lists`]: LISTs that wait for the watch cache, and who answered.
//! - [`objects`]: request bodies and the per-type strategies; [`patch`]: the
//!   patch types; [`apply`]: server-side apply and managed fields;
//!   [`scale`]: the scale subresource.
//! - [`response`]: JSON answers and `Status` objects, and the negotiation
//!   that turns them into protobuf; [`protobuf`]: protobuf bodies.
//! - [`openapi`]: `/openapi/v2` and `/openapi/v3`, from Kubernetes' own spec.
//! - [`table`]: `kubectl get`'s server-side printing (`as=Table`).
//! - [`kubeconfig`]: the kubeconfig that points clients here.
//! - [`stages`]: the control plane's server-side stages as tokio tasks.
//! - [`metrics`]: `GET /metrics`, the watchers of each watch cache.
//!
//! See `README.md` beside this crate for what is served and what is not.

pub mod access;
pub mod apply;
pub mod discovery;
pub mod door;
pub mod handlers;
pub mod inflight;
pub mod kubeconfig;
pub mod lists;
pub mod metrics;
pub mod objects;
pub mod openapi;
pub mod params;
pub mod patch;
pub mod path;
pub mod protobuf;
pub mod refusals;
pub mod response;
pub mod scale;
pub mod stages;
pub mod table;
pub mod watch;
pub mod watch_list;

pub use door::{Door, DoorError};
pub use kubeconfig::{write_kubeconfig, write_kubeconfig_with_token};

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tower_http::timeout::DeadlineBody;
use watchlife_controlplane::ControlPlane;
use watchlife_controlplane::status::Status;

/// How often the server calls [`ControlPlane::tick`], which compacts the
/// store when [`watchlife_controlplane::control_plane::COMPACTION_INTERVAL_MICROS`]
/// has passed: often enough that a compaction is at most this late.
pub const COMPACTION_TICK: Duration = Duration::from_secs(10);

/// How long open requests (watches, mostly) may go on after shutdown is
/// asked for. Watches would otherwise hold the server open until their
/// timeout; their clients re-watch elsewhere anyway.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// How long a request body may take to arrive whole: the apiserver's default
/// `--request-timeout`. A 3 MiB body needs 50 KB/s; a client that trickles
/// one is answered 408 instead of holding its place in flight.
pub const REQUEST_BODY_DEADLINE: Duration = Duration::from_secs(60);

/// Connections the demo API serves at once (every one, watching or not: an
/// HTTP/1 connection carries one request at a time, so this also bounds the
/// watches). A thousand watchers of a benchmark, the bridge's own and
/// kubectl's fit; each costs a descriptor, at most 64 KiB of buffers and a
/// pointer per object for a watch from "now".
pub const MAX_CONNECTIONS: usize = 1024;

/// How the demo API is served.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The token every client must present (`Authorization: Bearer`);
    /// required beyond loopback (see [`door`]).
    pub token: Option<String>,
    /// The connections' bounds.
    pub limits: watchlife_serve::Limits,
}

impl Default for ServeOptions {
    /// No token, [`MAX_CONNECTIONS`], and `watchlife-serve`'s timeouts with
    /// no handshake limit (a watch is a plain HTTP request that lasts).
    fn default() -> Self {
        ServeOptions {
            token: None,
            limits: watchlife_serve::Limits {
                handshake: None,
                max_pending: MAX_CONNECTIONS,
                shutdown_grace: SHUTDOWN_GRACE,
                ..watchlife_serve::Limits::default()
            },
        }
    }
}

/// The API as an axum router over `cp`.
pub fn router(cp: ControlPlane) -> Router {
    Router::new()
        .route("/metrics", axum::routing::get(metrics::serve))
        .fallback(handlers::handle)
        // Bodies are limited by the handlers, which answer 413 as a Status.
        .layer(DefaultBodyLimit::disable())
        .with_state(handlers::Api { cp })
}

/// [`router`] behind its [`Door`], with the requests in flight counted
/// ([`inflight`]) and a deadline on request bodies: what [`serve_with`]
/// serves. The door comes before routing, so that a token in the path
/// ([`door::TOKEN_PREFIX`]) is taken off before the API sees the path.
pub fn guarded(cp: ControlPlane, door: Door) -> Router {
    let api = router(cp)
        .layer(middleware::from_fn_with_state(
            inflight::Inflight::default(),
            inflight::admit,
        ))
        .layer(middleware::map_request(|request: Request| async move {
            request
                .map(|body| axum::body::Body::new(DeadlineBody::new(REQUEST_BODY_DEADLINE, body)))
        }));
    let door = middleware::from_fn_with_state(Arc::new(door), check_door);
    Router::new().fallback_service(tower_layer::Layer::layer(&door, api))
}

/// Refuses a request the door does not let in, before anything else.
async fn check_door(State(door): State<Arc<Door>>, mut request: Request, next: Next) -> Response {
    match door.check(request.headers(), request.uri()) {
        Ok(None) => next.run(request).await,
        Ok(Some(uri)) => {
            *request.uri_mut() = uri;
            next.run(request).await
        }
        Err(status) => response::status(&status),
    }
}

/// Serves the API on `listener` with no token (so only on loopback: see
/// [`serve_with`]) until `shutdown` completes.
pub async fn serve(
    cp: ControlPlane,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(cp, listener, ServeOptions::default(), shutdown).await
}

/// Serves the API on `listener` until `shutdown` completes, compacting the
/// store periodically meanwhile. Returns when the server has stopped.
///
/// Fails at once, serving nothing, when the listener is beyond loopback and
/// `options` has no token ([`DoorError`], as a `PermissionDenied` error).
pub async fn serve_with(
    cp: ControlPlane,
    listener: tokio::net::TcpListener,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let door = Door::new(listener.local_addr()?, options.token)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::PermissionDenied, e))?;
    let compactor = tokio::spawn(compact_periodically(cp.clone()));
    let server = watchlife_serve::Server::new(options.limits, refusal());
    server.serve(listener, guarded(cp, door), shutdown).await;
    compactor.abort();
    Ok(())
}

/// The answer to a connection over [`MAX_CONNECTIONS`]: 429, as a `Status`.
fn refusal() -> String {
    let status = Status::new(
        429,
        "TooManyRequests",
        format!(
            "Too many requests, please try again later: the demo API serves {MAX_CONNECTIONS} connections at once"
        ),
    );
    let body = status.to_json().to_string();
    format!(
        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after: 1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

async fn compact_periodically(cp: ControlPlane) {
    let mut ticks = tokio::time::interval(COMPACTION_TICK);
    loop {
        ticks.tick().await;
        if let Some(revision) = cp.tick() {
            tracing::info!("compacted the demo store up to revision {revision}");
        }
    }
}
