//! The Kubernetes HTTP API of the embedded demo control plane.
//!
//! A thin adapter: every rule (resourceVersions, selectors, paging, the
//! watch cache, graceful deletion, compaction) lives in the IO-free core,
//! `watchlife-controlplane`; this crate only maps URLs, query parameters,
//! bodies and errors to and from it, and streams watches.
//!
//! # Layout
//! - [`serve`] and [`router`] (here): the server, its periodic compaction and
//!   its shutdown.
//! - [`handlers`]: the verbs on resources; [`path`]: resource URLs;
//!   [`params`]: query parameters.
//! - [`discovery`]: `/version`, `/api`, `/apis` and the group versions.
//! - [`watch`]: watch streams, bookmarks and how a watch ends.
//! - [`objects`]: request bodies and the per-type strategies; [`patch`]: the
//!   patch types; [`scale`]: the scale subresource.
//! - [`response`]: JSON answers and `Status` objects.
//! - [`kubeconfig`]: the kubeconfig that points clients here.
//! - [`metrics`]: `GET /metrics`, the watchers of each watch cache.
//!
//! See `README.md` beside this crate for what is served and what is not.

pub mod discovery;
pub mod handlers;
pub mod kubeconfig;
pub mod metrics;
pub mod objects;
pub mod params;
pub mod patch;
pub mod path;
pub mod response;
pub mod scale;
pub mod watch;

pub use kubeconfig::write_kubeconfig;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use watchlife_controlplane::ControlPlane;

/// How often the server calls [`ControlPlane::tick`], which compacts the
/// store when [`watchlife_controlplane::control_plane::COMPACTION_INTERVAL_MICROS`]
/// has passed: often enough that a compaction is at most this late.
pub const COMPACTION_TICK: Duration = Duration::from_secs(10);

/// How long open requests (watches, mostly) may go on after shutdown is
/// asked for. Watches would otherwise hold the server open until their
/// timeout; their clients re-watch elsewhere anyway.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// The API as an axum router over `cp`.
pub fn router(cp: ControlPlane) -> Router {
    Router::new()
        .route("/metrics", axum::routing::get(metrics::serve))
        .fallback(handlers::handle)
        // Bodies are limited by the handlers, which answer 413 as a Status.
        .layer(DefaultBodyLimit::disable())
        .with_state(handlers::Api { cp })
}

/// Serves the API on `listener` until `shutdown` completes, compacting the
/// store periodically meanwhile. Returns when the server has stopped.
pub async fn serve(
    cp: ControlPlane,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let compactor = tokio::spawn(compact_periodically(cp.clone()));
    let stop = Arc::new(tokio::sync::Notify::new());
    let server = axum::serve(listener, router(cp)).with_graceful_shutdown({
        let stop = stop.clone();
        async move { stop.notified().await }
    });
    let mut server = std::pin::pin!(server.into_future());
    let result = tokio::select! {
        result = &mut server => result,
        () = shutdown => {
            stop.notify_one();
            tokio::time::timeout(SHUTDOWN_GRACE, &mut server)
                .await
                .unwrap_or(Ok(()))
        }
    };
    compactor.abort();
    result
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
