//! The WebSocket to the bridge: connect, read frames into the model, and when
//! the link drops or stalls, reconnect with backoff and resume from the cursor.

use crate::model::{Link, Model};
use futures::channel::mpsc;
use futures::future::{Either, select};
use futures::{SinkExt, StreamExt};
use gloo_net::websocket::{Message, futures::WebSocket};
use gloo_timers::future::TimeoutFuture;
use leptos::prelude::*;
use leptos::task::spawn_local;
use watchlife_protocol::ServerFrame;

/// First wait before reconnecting, doubled after each failure.
const FIRST_RETRY_MS: u32 = 500;
/// Longest wait between attempts: a returning bridge is found within this.
const MAX_RETRY_MS: u32 = 10_000;
/// Heartbeat periods of silence after which the link is called stalled.
const STALL_PERIODS: u64 = 3;
/// Silence allowed before the first `hello` tells the heartbeat period.
const DEFAULT_STALL_MS: u64 = 15_000;

/// Starts the connection loop; it runs for the life of the page.
pub fn connect(model: Model) {
    spawn_local(async move {
        let mut retry_ms = FIRST_RETRY_MS;
        loop {
            model.link.set(Link::Connecting);
            if let Ok(socket) = WebSocket::open(&url(&model))
                && read_until_closed(socket, model).await
            {
                retry_ms = FIRST_RETRY_MS;
            }
            if model.link.get_untracked() != Link::Stalled {
                model.link.set(Link::Reconnecting { retry_ms });
            }
            TimeoutFuture::new(retry_ms).await;
            retry_ms = (retry_ms * 2).min(MAX_RETRY_MS);
        }
    });
}

/// Reads frames until the socket closes or goes silent. True when the bridge
/// said hello (so the next failure starts the backoff afresh).
async fn read_until_closed(socket: WebSocket, model: Model) -> bool {
    let (mut write, mut read) = socket.split();
    // The writer: messages the page sends go out in order until the socket
    // or the sender (replaced on the next connection) goes away.
    let (tx, mut rx) = mpsc::unbounded::<String>();
    model.outbox.set_value(Some(tx));
    spawn_local(async move {
        while let Some(text) = rx.next().await {
            if write.send(Message::Text(text)).await.is_err() {
                break;
            }
        }
    });
    let greeted = read_frames(&mut read, model).await;
    model.outbox.set_value(None);
    greeted
}

/// The reading half of [`read_until_closed`].
async fn read_frames(read: &mut futures::stream::SplitStream<WebSocket>, model: Model) -> bool {
    let mut greeted = false;
    loop {
        let stall_ms = model
            .hello
            .with_untracked(|h| h.as_ref().map(|h| h.heartbeat_ms * STALL_PERIODS))
            .unwrap_or(DEFAULT_STALL_MS);
        let timer = TimeoutFuture::new(stall_ms.min(u32::MAX as u64) as u32);
        match select(read.next(), timer).await {
            Either::Left((Some(Ok(Message::Text(text))), _)) => {
                match serde_json::from_str::<ServerFrame>(&text) {
                    Ok(frame) => {
                        greeted |= matches!(frame.body, watchlife_protocol::FrameBody::Hello(_));
                        model.apply(frame);
                    }
                    Err(e) => model
                        .last_error
                        .set(Some(format!("a frame from the bridge did not parse: {e}"))),
                }
            }
            Either::Left((Some(Ok(Message::Bytes(_))), _)) => {}
            Either::Left((Some(Err(_)) | None, _)) => return greeted,
            Either::Right(_) => {
                model.link.set(Link::Stalled);
                return greeted;
            }
        }
    }
}

/// `ws://` or `wss://` URL of the bridge that served the page, with the
/// cursor to resume from.
fn url(model: &Model) -> String {
    let location = web_sys::window().expect("a page has a window").location();
    let scheme = match location.protocol().as_deref() {
        Ok("https:") => "wss",
        _ => "ws",
    };
    let host = location.host().unwrap_or_else(|_| "127.0.0.1:8080".into());
    match model.cursor.get_untracked() {
        Some((stream, since)) => format!("{scheme}://{host}/ws?stream={stream}&since={since}"),
        None => format!("{scheme}://{host}/ws"),
    }
}
