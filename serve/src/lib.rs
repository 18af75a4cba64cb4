//! HTTP/1 serving with bounds, shared by the bridge and the demo API.
//!
//! `axum::serve` gives hyper no timer, so a connection that never sends a
//! request is never closed, and it counts no connections. This accept loop
//! serves an axum router with hyper's own HTTP/1 connection, set up so that
//! every connection is bounded whatever the client does (see [`Limits`]):
//!
//! - the request head must arrive within [`Limits::header_read`] (hyper's
//!   `header_read_timeout`, which also bounds the idle time before the first
//!   request and between requests), and be at most
//!   [`Limits::max_header_bytes`];
//! - a connection still speaking plain HTTP after [`Limits::handshake`] is
//!   asked to close, and dropped as long again later;
//! - at most [`Limits::max_pending`] connections not yet upgraded at once: the
//!   next is answered with the server's refusal (a whole HTTP response) and
//!   closed, before anything is read. Upgraded connections (WebSockets) are
//!   the server's to count;
//! - a write that makes no progress for [`Limits::write_stall`] fails
//!   ([`stall`]).
//!
//! HTTP/1 only: browsers and kubectl speak it to a plain-HTTP server.
//!
//! # Layout
//! - [`Server`] (here): the accept loop and one task per connection.
//! - [`limits`]: the bounds and their reasons; [`stall`]: the write-stall
//!   guard; [`fds`]: the open-files limit.
//! - [`host`]: the `Host` rule of a loopback server without a token, and the
//!   comparison of tokens.

pub mod fds;
pub mod host;
pub mod limits;
pub mod stall;

pub use limits::Limits;

use axum::Router;
use bytes::Bytes;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use stall::StallGuard;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::JoinSet;

/// A hook called with each accepted socket, before it is served.
pub type OnAccept = Arc<dyn Fn(&TcpStream) + Send + Sync>;

/// A hook called for each connection refused for the cap.
pub type OnRefused = Arc<dyn Fn() + Send + Sync>;

/// Pause after a failed accept (out of file descriptors, mostly): the
/// connections waiting in the backlog are taken once descriptors free up,
/// without spinning meanwhile.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// How one server treats its connections.
#[derive(Clone)]
pub struct Server {
    pub limits: Limits,
    /// A whole HTTP response (status line, headers with `Connection: close`,
    /// body), written to a connection refused for [`Limits::max_pending`].
    pub refusal: Bytes,
    /// Socket options, set on every accepted socket.
    pub on_accept: Option<OnAccept>,
    /// Counts refusals, when the server has a metric for them.
    pub on_refused: Option<OnRefused>,
}

impl Server {
    /// A server with `limits` that refuses with `refusal`.
    pub fn new(limits: Limits, refusal: impl Into<Bytes>) -> Self {
        Server {
            limits,
            refusal: refusal.into(),
            on_accept: None,
            on_refused: None,
        }
    }

    /// Serves `router` on `listener` until `shutdown` completes. Then it
    /// accepts no more, asks every connection not yet upgraded to close once
    /// its response in flight is done, and drops those still open after
    /// [`Limits::shutdown_grace`]. Upgraded connections are left to whoever
    /// took them over. Never fails for a connection's sake.
    pub async fn serve(
        self,
        listener: TcpListener,
        router: Router,
        shutdown: impl Future<Output = ()>,
    ) {
        let limits = Arc::new(self.limits);
        let pending = Arc::new(Semaphore::new(limits.max_pending));
        let (stop, stopped) = watch::channel(false);
        let mut connections = JoinSet::new();
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                () = &mut shutdown => break,
            };
            while connections.try_join_next().is_some() {}
            let tcp = match accepted {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    tracing::warn!("cannot accept a connection: {e}");
                    tokio::time::sleep(ACCEPT_RETRY).await;
                    continue;
                }
            };
            if let Some(on_accept) = &self.on_accept {
                on_accept(&tcp);
            }
            let Ok(permit) = pending.clone().try_acquire_owned() else {
                // Best effort, and never waited for: the socket is new, its
                // send buffer empty.
                let _ = tcp.try_write(&self.refusal);
                if let Some(on_refused) = &self.on_refused {
                    on_refused();
                }
                continue;
            };
            connections.spawn(connection(
                tcp,
                router.clone(),
                limits.clone(),
                stopped.clone(),
                permit,
            ));
        }
        let _ = stop.send(true);
        let drained = async { while connections.join_next().await.is_some() {} };
        let _ = tokio::time::timeout(limits.shutdown_grace, drained).await;
        connections.abort_all();
    }
}

/// Serves one connection until it closes, is upgraded, or runs out of time.
/// `_permit` is its place under [`Limits::max_pending`], given back when the
/// task ends.
async fn connection(
    tcp: TcpStream,
    router: Router,
    limits: Arc<Limits>,
    mut stopped: watch::Receiver<bool>,
    _permit: OwnedSemaphorePermit,
) {
    let io = TokioIo::new(StallGuard::new(tcp, limits.write_stall));
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read)
        .max_header_size(limits.max_header_bytes)
        .max_buf_size(limits.max_buffer_bytes);
    let conn = builder
        .serve_connection(io, TowerToHyperService::new(router))
        .with_upgrades();
    let mut conn = std::pin::pin!(conn);
    let handshake = async {
        match limits.handshake {
            Some(limit) => tokio::time::sleep(limit).await,
            None => std::future::pending().await,
        }
    };
    let grace = tokio::select! {
        result = conn.as_mut() => {
            if let Err(e) = result {
                tracing::debug!("a connection ended: {e}");
            }
            return;
        }
        () = handshake => limits.handshake.unwrap_or(limits.shutdown_grace),
        _ = stopped.wait_for(|stop| *stop) => limits.shutdown_grace,
    };
    conn.as_mut().graceful_shutdown();
    let _ = tokio::time::timeout(grace, conn).await;
}

#[cfg(test)]
mod tests;
