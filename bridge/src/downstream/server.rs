//! The HTTP side: routes, the checks before a WebSocket upgrade, the
//! connection caps, security headers, and serving until a graceful shutdown.
//!
//! Routes: `/ws` (the stream, [`crate::downstream::viewer`]), `/tap`
//! (controllers' taps, with `--accept-taps`, [`crate::downstream::tap`]), `/metrics` (Prometheus
//! text, [`crate::downstream::metrics`]), `/healthz`, `/readyz`
//! ([`crate::downstream::readiness`]), `/version`, and the embedded app for
//! everything else ([`crate::downstream::assets`]; 405 for a method other
//! than GET or HEAD).
//!
//! Every connection is bounded by `watchlife-serve` ([`connection_limits`]):
//! its request head within 10 s (so also its idle time before the first
//! request and between requests), plain HTTP for 30 s at most, and at most
//! [`watchlife_serve::limits::MAX_PENDING`] connections not yet upgraded,
//! counted apart from the viewers (`--max-viewers`); over it a new
//! connection is answered 503 and closed before anything is read.
//!
//! A `/ws` handshake is checked in this order, each refusal an HTTP answer
//! with a one-line reason, before anything is upgraded: `Host` (403, see
//! [`crate::downstream::access`]), the token (401), `Origin` (403), the cap (503).

use crate::app::App;
use crate::cli::Args;
use crate::downstream::access::{Access, AccessError, Denied};
use crate::downstream::guard::{Guard, refuse};
use crate::downstream::metrics::Refusal;
use crate::downstream::{assets, csp, guard, readiness, tap, viewer};
use axum::Router;
use axum::extract::{Path, Query, State, WebSocketUpgrade};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Json, Response};
use axum::routing::get;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{Semaphore, watch};
use tower_http::set_header::SetResponseHeaderLayer;
use watchlife_protocol::StreamQuery;

/// Kernel send buffer of each viewer's socket. Without a bound, Linux grows
/// it up to 4 MiB for a reader that does not keep up: thousands of frames
/// hidden from the slow-viewer policy, and gigabytes for thousands of stalled
/// viewers. 64 KiB (the kernel doubles it for its own book-keeping) still
/// carries 1.2 MB/s to a viewer 100 ms away, some 1,500 event frames a
/// second; 10,000 stalled viewers hold at most 1.3 GB of kernel memory.
pub const SEND_BUFFER_BYTES: usize = 64 * 1024;

/// How long viewers get to receive their close frame at shutdown before the
/// process exits anyway.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// How long a client refused for the cap is told to wait (`Retry-After`).
const RETRY_AFTER_SECS: u32 = 10;

/// How the server admits clients, from the flags.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub access: Access,
    /// `--max-viewers`.
    pub max_viewers: usize,
    /// The `Content-Security-Policy` of every response.
    pub csp: HeaderValue,
    /// `--ready-grace` (see [`readiness`]).
    pub ready_grace: Duration,
    /// `--accept-taps`.
    pub accept_taps: bool,
}

impl ServerConfig {
    /// Applies the startup rules (see [`Access::from_args`]).
    pub fn from_args(args: &Args) -> Result<ServerConfig, AccessError> {
        Ok(ServerConfig {
            access: Access::from_args(args)?,
            max_viewers: args.max_viewers as usize,
            csp: csp::policy(&args.frame_ancestors)?,
            ready_grace: Duration::from_secs(args.ready_grace),
            accept_taps: args.accept_taps,
        })
    }
}

/// What the handlers share.
struct Shared {
    app: Arc<App>,
    guard: Guard,
    max_viewers: usize,
    permits: Arc<Semaphore>,
    shutdown: watch::Receiver<bool>,
    /// When the routes were made: the bridge's start, for `/readyz`.
    started: Instant,
    ready_grace: Duration,
    /// Places for [`tap::MAX_TAPS`] taps, when taps are accepted.
    taps: Option<Arc<Semaphore>>,
    /// Taps that connected, for their numbers.
    taps_seen: std::sync::atomic::AtomicU64,
}

impl AsRef<Guard> for Shared {
    fn as_ref(&self) -> &Guard {
        &self.guard
    }
}

/// The bounds of the bridge's connections (see the module doc), with the
/// cap on connections not yet upgraded held to a quarter of `open_files`.
pub fn connection_limits(open_files: Option<u64>) -> watchlife_serve::Limits {
    watchlife_serve::Limits {
        handshake: Some(watchlife_serve::limits::HANDSHAKE_TIMEOUT),
        ..watchlife_serve::Limits::default()
    }
    .within_open_files(open_files)
}

/// The answer to a connection over the cap of connections not yet upgraded.
fn pending_refusal(max_pending: usize) -> String {
    let body = format!(
        "watchlife is answering its maximum of {max_pending} connections that have not sent a request yet; try again later\n"
    );
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\nretry-after: {RETRY_AFTER_SECS}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Serves `app` on `listener` until `signal` completes, then closes every
/// viewer's socket with a close frame and waits (at most
/// [`SHUTDOWN_GRACE`]) for them to go. Raises the process's open-files
/// limit first (see [`watchlife_serve::fds`]).
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Arc<App>,
    config: ServerConfig,
    signal: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (stop, shutdown) = watch::channel(false);
    let permits = Arc::new(Semaphore::new(config.max_viewers));
    let router = router(app, config.clone(), shutdown, permits.clone());
    let limits = connection_limits(watchlife_serve::fds::raise_open_files_limit());
    let mut server =
        watchlife_serve::Server::new(limits.clone(), pending_refusal(limits.max_pending));
    server.on_accept = Some(Arc::new(|tcp: &tokio::net::TcpStream| {
        let _ = tcp.set_nodelay(true);
        let _ = socket2::SockRef::from(tcp).set_send_buffer_size(SEND_BUFFER_BYTES);
    }));
    server
        .serve(listener, router, async move {
            signal.await;
            // Upgraded sockets are not the server's to close: tell the viewers.
            let _ = stop.send(true);
        })
        .await;
    let everyone = permits.acquire_many_owned(config.max_viewers as u32);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, everyone).await;
    Ok(())
}

/// All routes of the bridge, with the security headers. `shutdown` turns
/// `true` when viewers must leave; `permits` holds `--max-viewers` places.
pub fn router(
    app: Arc<App>,
    config: ServerConfig,
    shutdown: watch::Receiver<bool>,
    permits: Arc<Semaphore>,
) -> Router {
    let shared = Arc::new(Shared {
        guard: Guard {
            access: config.access,
            metrics: app.hub.metrics().clone(),
        },
        app,
        max_viewers: config.max_viewers,
        permits,
        shutdown,
        started: Instant::now(),
        ready_grace: config.ready_grace,
        taps: config
            .accept_taps
            .then(|| Arc::new(Semaphore::new(tap::MAX_TAPS))),
        taps_seen: Default::default(),
    });
    // What the page reaches from a browser: the token, then the Origin.
    // `route_layer`s wrap the routes above them; the last added runs first.
    let from_the_page = Router::new()
        .route("/ws", get(websocket))
        .route(watchlife_protocol::tap::TAP_PATH, get(tap_socket))
        .route("/objects/{*path}", get(object_body))
        .route_layer(middleware::from_fn_with_state(
            shared.clone(),
            guard::same_origin::<Shared>,
        ));
    let with_the_token = from_the_page
        .route("/metrics", get(metrics))
        .route("/version", get(version))
        .route_layer(middleware::from_fn_with_state(
            shared.clone(),
            guard::require_token::<Shared>,
        ));
    // Open to anyone who reaches the bridge: probes and the page's files.
    with_the_token
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .fallback(static_files)
        .layer(middleware::from_fn_with_state(
            shared.clone(),
            guard::check_host::<Shared>,
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CONTENT_SECURITY_POLICY,
            config.csp,
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        // The token may be in the page's URL: never send it on as a Referer.
        .layer(SetResponseHeaderLayer::if_not_present(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ))
        .with_state(shared)
}

/// The embedded app, for GET and HEAD; any other method is 405, with
/// `Allow`, and never the page.
async fn static_files(method: Method, uri: axum::http::Uri) -> Response {
    if method == Method::GET || method == Method::HEAD {
        return assets::serve(uri).await;
    }
    let mut refused = (
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{method} is not served here: the app answers GET and HEAD\n"),
    )
        .into_response();
    refused
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
    refused
}

/// `GET /ws`: the checks in the order of the module doc (the token and
/// `Origin` by the extractors, after the query and the handshake parse),
/// then the cap, then the upgrade.
async fn websocket(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<StreamQuery>,
    upgrade: WebSocketUpgrade,
) -> Response {
    let metrics = shared.app.hub.metrics();
    let Ok(permit) = shared.permits.clone().try_acquire_owned() else {
        metrics.viewer_refused(Refusal::Capacity);
        let mut response = refuse(Denied {
            status: 503,
            message: format!(
                "watchlife is serving its maximum of {} viewers (--max-viewers); try again later",
                shared.max_viewers
            ),
        });
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
        return response;
    };
    // A cursor from another run of the bridge means nothing here: such a
    // viewer is resynced, as one whose cursor left the window.
    let (since, foreign_cursor) = match (query.since, query.stream.as_deref()) {
        (Some(since), Some(stream)) if stream == shared.app.hub.stream_id() => (Some(since), false),
        (Some(_), _) => (Some(u64::MAX), true),
        (None, _) => (None, false),
    };
    let viewer = viewer::Viewer {
        app: shared.app.clone(),
        since,
        foreign_cursor,
        batch: query.batch,
        compress: query.compress.is_some(),
        patched: query.bodies.is_some(),
        shutdown: shared.shutdown.clone(),
        permit,
    };
    upgrade
        .read_buffer_size(viewer::READ_BUFFER_BYTES)
        .write_buffer_size(viewer::WRITE_BUFFER_BYTES)
        .max_message_size(viewer::MAX_FRAME_BYTES)
        .max_frame_size(viewer::MAX_FRAME_BYTES)
        .on_upgrade(move |socket| viewer::serve(socket, viewer))
        .into_response()
}

/// `GET /tap`: the viewers' checks, then `--accept-taps` (404 without),
/// then [`tap::MAX_TAPS`] (503), then the upgrade.
async fn tap_socket(State(shared): State<Arc<Shared>>, upgrade: WebSocketUpgrade) -> Response {
    let Some(places) = &shared.taps else {
        return refuse(Denied {
            status: 404,
            message: "this watchlife does not accept taps: start it with --accept-taps".into(),
        });
    };
    let Ok(permit) = places.clone().try_acquire_owned() else {
        let mut response = refuse(Denied {
            status: 503,
            message: format!(
                "watchlife is serving its maximum of {} taps; try again later",
                tap::MAX_TAPS
            ),
        });
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
        return response;
    };
    let connection = tap::TapConnection {
        app: shared.app.clone(),
        number: 1 + shared
            .taps_seen
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        shutdown: shared.shutdown.clone(),
        permit,
    };
    upgrade
        .max_message_size(tap::MAX_TAP_MESSAGE_BYTES)
        .max_frame_size(tap::MAX_TAP_MESSAGE_BYTES)
        .on_upgrade(move |socket| tap::serve(socket, connection))
        .into_response()
}

/// `GET /objects/{resource}/{namespace}/{name}` (or `/{resource}/{name}`
/// when cluster-scoped): the object's current body as the viewers' stream
/// carries it (redacted, cut), for a page that opens an object its light
/// snapshot gave without one. Guarded as `/ws` is: the token, and a
/// browser's `Origin`.
async fn object_body(State(shared): State<Arc<Shared>>, Path(path): Path<String>) -> Response {
    let Some((resource, key)) = path.split_once('/') else {
        return refuse(Denied {
            status: 404,
            message:
                "ask for /objects/<resource>/<namespace>/<name>, or /objects/<resource>/<name>"
                    .into(),
        });
    };
    match shared.app.hub.object(resource, key) {
        Some((resource_version, body)) => (
            [
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                ),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            ],
            [(
                header::ETAG,
                HeaderValue::from_str(&format!("\"{resource_version}\""))
                    .unwrap_or_else(|_| HeaderValue::from_static("\"\"")),
            )],
            body.as_str().to_string(),
        )
            .into_response(),
        None => refuse(Denied {
            status: 404,
            message: format!("no {resource} {key} in this watchlife's cache"),
        }),
    }
}

/// `GET /metrics`, for those who hold the token.
async fn metrics(State(shared): State<Arc<Shared>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            crate::downstream::metrics::CONTENT_TYPE,
        )],
        shared.app.hub.metrics().render(),
    )
        .into_response()
}

/// `GET /version`. The source names the cluster: only for those who hold
/// the token.
/// `/readyz` (see [`readiness`]): open to the kubelet's probe, like
/// `/healthz`; it tells counts only.
async fn readyz(State(shared): State<Arc<Shared>>) -> Response {
    let resources = &shared.app.resources;
    let answer = readiness::readiness(
        resources.len(),
        shared.app.hub.unlisted(resources),
        shared.started.elapsed(),
        shared.ready_grace,
    );
    let status = if answer.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, answer.words).into_response()
}

async fn version(State(shared): State<Arc<Shared>>) -> Response {
    Json(serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "protocol": watchlife_protocol::PROTOCOL_VERSION,
        "source": shared.app.source,
        "app_embedded": assets::is_built(),
    }))
    .into_response()
}
