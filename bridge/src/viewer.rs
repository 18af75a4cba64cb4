//! One viewer's WebSocket connection.
//!
//! Sends `hello`, then either the frames the viewer missed or a snapshot, then
//! the live stream, with a heartbeat on a period. Reads the viewer's messages
//! (filters, demo actions) and answers a bad one with an `error` frame; a bad
//! message never closes the connection, let alone the bridge.

use crate::app::App;
use crate::hub::{Join, Published, encode};
use axum::extract::ws::{Message, Utf8Bytes, WebSocket};
use futures_util::{SinkExt, StreamExt};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use watchlife_protocol::{
    ClientMessage, ErrorCode, ErrorFrame, Filter, FrameBody, Heartbeat, Resync, ServerFrame,
};

/// How often a heartbeat goes out. A viewer that hears nothing for three
/// periods calls the connection stalled: a dead link is noticed within seconds.
pub const HEARTBEAT: Duration = Duration::from_secs(5);

/// Largest message a viewer may send. Viewers send small commands; anything
/// bigger is a mistake or an attack.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024;

/// Serves one viewer until it leaves or the bridge shuts down.
pub async fn serve(socket: WebSocket, app: Arc<App>, since: Option<u64>) {
    let (mut sink, mut incoming) = socket.split();
    let attached = app.hub.attach(since);
    let mut cursor = attached.cursor;
    let mut live = attached.live;
    let mut filter = Filter::default();

    let mut opening = vec![control(cursor, FrameBody::Hello(app.hello()))];
    match attached.join {
        Join::Resume(frames) => opening.extend(frames.into_iter().map(|p| p.text)),
        Join::Snapshot(snapshot) => {
            if since.is_some() {
                opening.push(resync(
                    cursor,
                    "your cursor is no longer in the bridge's window",
                ));
            }
            opening.push(control(cursor, FrameBody::Snapshot(snapshot)));
        }
    }
    for text in opening {
        if sink.send(Message::Text(text)).await.is_err() {
            return;
        }
    }

    let mut heartbeat = tokio::time::interval(HEARTBEAT);
    heartbeat.reset();
    loop {
        let outgoing: Vec<Utf8Bytes> = tokio::select! {
            frame = live.recv() => match frame {
                Ok(p) if p.seq <= cursor => continue,
                Ok(p) => {
                    cursor = p.seq;
                    if !wanted(&filter, &p) { continue; }
                    vec![p.text]
                }
                Err(RecvError::Lagged(missed)) => {
                    let (seq, snapshot) = app.hub.snapshot();
                    cursor = seq;
                    vec![
                        resync(seq, &format!("you fell {missed} frames behind")),
                        control(seq, FrameBody::Snapshot(snapshot)),
                    ]
                }
                Err(RecvError::Closed) => break,
            },
            message = incoming.next() => match message {
                Some(Ok(Message::Text(text))) => handle(&app, &text, &mut filter, cursor).await,
                Some(Ok(Message::Binary(_))) => vec![error(cursor, ErrorCode::Malformed, "binary messages are not accepted; send JSON text")],
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                Some(Ok(Message::Close(_)) | Err(_)) | None => break,
            },
            _ = heartbeat.tick() => vec![control(cursor, FrameBody::Heartbeat(Heartbeat { at: app.now() }))],
        };
        for text in outgoing {
            if sink.send(Message::Text(text)).await.is_err() {
                return;
            }
        }
    }
}

/// Answers one message from the viewer.
async fn handle(app: &App, text: &str, filter: &mut Filter, cursor: u64) -> Vec<Utf8Bytes> {
    if text.len() > MAX_MESSAGE_BYTES {
        return vec![error(
            cursor,
            ErrorCode::TooLarge,
            &format!(
                "message of {} bytes is over the limit of {MAX_MESSAGE_BYTES}",
                text.len()
            ),
        )];
    }
    match serde_json::from_str::<ClientMessage>(text) {
        Err(e) => vec![error(
            cursor,
            ErrorCode::Malformed,
            &format!("not a valid message: {e}"),
        )],
        Ok(ClientMessage::Subscribe { filter: new }) => {
            *filter = new;
            vec![]
        }
        Ok(ClientMessage::Action { action }) => vec![match app.run_action(action).await {
            Ok(result) => control(cursor, FrameBody::ActionResult(result)),
            Err(e) => error(cursor, e.code, &e.message),
        }],
    }
}

fn wanted(filter: &Filter, frame: &Published) -> bool {
    (filter.resources.is_empty() || filter.resources.iter().any(|r| **r == *frame.resource))
        && match (&filter.namespace, &frame.namespace) {
            (None, _) => true,
            (Some(want), Some(ns)) => **want == **ns,
            // Cluster-scoped objects and reflector updates are not in any namespace.
            (Some(_), None) => true,
        }
}

fn control(seq: u64, body: FrameBody) -> Utf8Bytes {
    encode(&ServerFrame { seq, body })
}

fn resync(seq: u64, reason: &str) -> Utf8Bytes {
    control(
        seq,
        FrameBody::Resync(Resync {
            reason: reason.into(),
        }),
    )
}

fn error(seq: u64, code: ErrorCode, message: &str) -> Utf8Bytes {
    control(
        seq,
        FrameBody::Error(ErrorFrame {
            code,
            message: message.into(),
        }),
    )
}
