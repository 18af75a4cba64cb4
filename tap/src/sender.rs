//! The sending task: connects to watchlife's `/tap`, sends what the
//! controller recorded, and reconnects with capped exponential backoff.
//! It owns the only `await`s of the tap; the controller never waits on it.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};
use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use watchlife_protocol::tap::{Hello, Stats, TAP_PROTOCOL_VERSION, TapFrame};

use crate::config::STATS_EVERY;
use crate::counters::Counters;
use crate::names::now_us;

/// First wait after a failed connection: quick enough to catch a watchlife
/// that is just starting.
const BACKOFF_MIN: Duration = Duration::from_millis(200);
/// Longest wait between attempts: a watchlife started later is found within
/// this, and an absent one costs a connection attempt this often at most.
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// A connection (TCP and WebSocket handshake) that takes longer is given up:
/// a peer that accepts and never answers must not hold the tap forever.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// A frame that cannot be written for this long means a peer that stopped
/// reading: the connection is dropped and made again.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// Frames written together before one flush: what a busy controller records
/// between two turns of the sending task, bounded so that one write never
/// holds a large batch.
const BATCH_FRAMES: usize = 64;

/// Where the task connects, and as whom.
pub(crate) struct Peer {
    pub(crate) endpoint: url::Url,
    pub(crate) token: Option<String>,
    pub(crate) controller: String,
}

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Why a session ended.
enum End {
    /// Every `Tap` is gone: the task ends.
    TapGone,
    /// The connection broke or stalled: connect again.
    Broken,
}

/// Runs until every `Tap` handle is dropped.
pub(crate) async fn run(peer: Peer, mut rx: mpsc::Receiver<TapFrame>, counters: Arc<Counters>) {
    let started_at_us = now_us();
    let mut backoff = backoff();
    loop {
        if let Some(socket) = connect(&peer).await {
            backoff = self::backoff();
            let hello = hello(&peer, started_at_us);
            if let End::TapGone = session(socket, hello, &mut rx, &counters).await {
                return;
            }
        }
        if rx.is_closed() && rx.is_empty() {
            return;
        }
        let wait = backoff.next().unwrap_or(BACKOFF_MAX);
        tokio::time::sleep(wait).await;
    }
}

/// Capped exponential backoff with jitter, never giving up.
fn backoff() -> impl Iterator<Item = Duration> {
    ExponentialBuilder::default()
        .with_min_delay(BACKOFF_MIN)
        .with_max_delay(BACKOFF_MAX)
        .with_jitter()
        .without_max_times()
        .build()
}

/// A WebSocket to the peer, or `None` (refused, unreachable, stalled).
async fn connect(peer: &Peer) -> Option<Socket> {
    let mut request = peer.endpoint.as_str().into_client_request().ok()?;
    if let Some(token) = &peer.token {
        let value = HeaderValue::from_str(&format!("Bearer {token}")).ok()?;
        request.headers_mut().insert("authorization", value);
    }
    let attempt = tokio_tungstenite::connect_async(request);
    match tokio::time::timeout(CONNECT_TIMEOUT, attempt).await {
        Ok(Ok((socket, _))) => Some(socket),
        Ok(Err(e)) => {
            tracing::debug!(target: "watchlife_tap", "cannot connect to {}: {e}", peer.endpoint);
            None
        }
        Err(_) => None,
    }
}

fn hello(peer: &Peer, started_at_us: u64) -> TapFrame {
    TapFrame::Hello(Hello {
        version: TAP_PROTOCOL_VERSION,
        controller: peer.controller.clone(),
        tap_version: env!("CARGO_PKG_VERSION").to_owned(),
        kube_runtime: crate::KUBE_RUNTIME_SUPPORTED.to_owned(),
        started_at_us,
        unobserved: vec!["scheduler".to_owned(), "runner".to_owned()],
    })
}

/// Sends frames until the connection breaks or every `Tap` is gone.
async fn session(
    mut socket: Socket,
    hello: TapFrame,
    rx: &mut mpsc::Receiver<TapFrame>,
    counters: &Counters,
) -> End {
    if !send(&mut socket, &hello).await {
        return End::Broken;
    }
    let mut stats = tokio::time::interval(STATS_EVERY);
    loop {
        let frame = tokio::select! {
            frame = rx.recv() => match frame {
                Some(frame) => frame,
                None => {
                    let _ = socket.close(None).await;
                    return End::TapGone;
                }
            },
            _ = stats.tick() => stats_frame(counters),
            incoming = socket.next() => match incoming {
                Some(Ok(_)) => continue,
                _ => return End::Broken,
            },
        };
        // What else is buffered goes with it, written together and flushed
        // once: a write to the socket per frame costs the controller's
        // thread more than recording them.
        let mut batch = vec![frame];
        while batch.len() < BATCH_FRAMES
            && let Ok(more) = rx.try_recv()
        {
            batch.push(more);
        }
        if !send_all(&mut socket, &batch).await {
            // Taken from the buffer and not delivered.
            counters
                .dropped
                .fetch_add(batch.len() as u64, Ordering::Relaxed);
            return End::Broken;
        }
    }
}

fn stats_frame(counters: &Counters) -> TapFrame {
    let seq = counters.next_seq();
    // The stats frame counts itself as recorded.
    let recorded = counters.recorded.fetch_add(1, Ordering::Relaxed) + 1;
    TapFrame::Stats(Stats {
        seq,
        at_us: now_us(),
        recorded,
        dropped: counters.dropped.load(Ordering::Relaxed),
    })
}

/// Writes one frame as JSON text; `false` when it could not be written.
async fn send(socket: &mut Socket, frame: &TapFrame) -> bool {
    send_all(socket, std::slice::from_ref(frame)).await
}

/// Writes frames as JSON text, one message each, and flushes once; `false`
/// when they could not all be written within [`WRITE_TIMEOUT`].
async fn send_all(socket: &mut Socket, frames: &[TapFrame]) -> bool {
    let written = async {
        for frame in frames {
            let text = serde_json::to_string(frame).map_err(|_| ())?;
            socket.feed(Message::text(text)).await.map_err(|_| ())?;
        }
        socket.flush().await.map_err(|_| ())
    };
    matches!(
        tokio::time::timeout(WRITE_TIMEOUT, written).await,
        Ok(Ok(()))
    )
}
