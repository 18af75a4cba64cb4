//! `/tap`: where a controller's `watchlife-tap` tells what it saw (the wire
//! of [`watchlife_protocol::tap`]), relayed to every viewer as the stream
//! frame `tap`, in one order with the bridge's own events.
//!
//! Off unless the bridge runs with `--accept-taps` (404 otherwise, saying
//! so). The door is the viewers' door: the `Host` rule, the token, the
//! `Origin` rule; then at most [`MAX_TAPS`] at once (503).
//!
//! A tap is a guest inside someone's controller, so the bridge bounds what
//! it takes rather than trusting it:
//! - the first message is the tap's `hello`, within [`HELLO_WITHIN`], of a
//!   wire version this bridge knows; otherwise the connection is closed with
//!   the reason (1008, or 1002 for another version);
//! - each message is one tap frame of at most [`MAX_TAP_MESSAGE_BYTES`]
//!   (1009 over it); one that does not read as a tap frame closes the
//!   connection with the reason (1007) and nothing of it is relayed;
//! - at most [`TAP_RATE`] frames a second: frames over it are dropped and
//!   counted (`watchlife_tap_frames_total{outcome="over_rate"}`), never
//!   relayed half; the connection stays, as the tap drops for itself too.
//!
//! When a tap's connection ends, however it ends, viewers are told (`left`).

use crate::app::App;
use crate::downstream::metrics::TapOutcome;
use crate::downstream::rate_limit::{Admit, Rate, RateLimiter};
use axum::extract::ws::{CloseFrame, Message, WebSocket, close_code};
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, watch};
use tokio::time::Instant;
use watchlife_protocol::FrameBody;
use watchlife_protocol::tap::{Hello, TAP_PROTOCOL_VERSION, TapFrame, TapRelay};

/// Taps connected at once. A page draws a lane per controller: more than a
/// handful is unreadable, and each holds a socket and a task.
pub const MAX_TAPS: usize = 16;

/// The largest message a tap may send. A frame is a few hundred bytes; the
/// longest free text in one is a reconcile error's message.
pub const MAX_TAP_MESSAGE_BYTES: usize = 64 * 1024;

/// Longest a controller's name is kept (a lane's title); longer is cut.
pub const MAX_CONTROLLER_CHARS: usize = 63;

/// How long a tap has to say hello after its handshake.
pub const HELLO_WITHIN: Duration = Duration::from_secs(10);

/// Frames a tap may send: 1,000 a second is a controller reconciling some
/// 400 objects a second with their watcher events, beyond what a page can
/// draw; a burst of 4,096 is the tap's whole buffer
/// (`watchlife_tap::BUFFER_FRAMES`), flushed at once when it reconnects.
/// A tap is never closed for its rate: what is over it is dropped.
pub const TAP_RATE: Rate = Rate {
    per_second: 1_000.0,
    burst: 4_096.0,
    flood: f64::INFINITY,
};

/// One accepted tap connection, handed over by the `/tap` handler.
pub struct TapConnection {
    pub app: Arc<App>,
    /// The tap's number among this bridge's taps (from 1).
    pub number: u64,
    /// Becomes `true` when the bridge shuts down.
    pub shutdown: watch::Receiver<bool>,
    /// The tap's place under [`MAX_TAPS`], released when it leaves.
    pub permit: OwnedSemaphorePermit,
}

/// Why the bridge ended a tap's connection.
#[derive(Debug, PartialEq)]
pub struct Refused {
    pub code: u16,
    pub reason: String,
}

/// Reads a tap's first message: its `hello`, of a version this bridge knows.
pub fn read_hello(text: &str) -> Result<Hello, Refused> {
    match serde_json::from_str::<TapFrame>(text) {
        Ok(TapFrame::Hello(hello)) if hello.version == TAP_PROTOCOL_VERSION => Ok(hello),
        Ok(TapFrame::Hello(hello)) => Err(Refused {
            code: close_code::PROTOCOL,
            reason: format!(
                "tap wire version {} is not known here (this watchlife reads version {TAP_PROTOCOL_VERSION})",
                hello.version
            ),
        }),
        Ok(_) => Err(Refused {
            code: close_code::POLICY,
            reason: "a tap's first frame is its hello".into(),
        }),
        Err(e) => Err(unreadable(&e)),
    }
}

/// Reads one frame after the hello. A second hello is refused: a tap says
/// who it is once per connection.
pub fn read_frame(text: &str) -> Result<TapFrame, Refused> {
    match serde_json::from_str::<TapFrame>(text) {
        Ok(TapFrame::Hello(_)) => Err(Refused {
            code: close_code::POLICY,
            reason: "a tap says hello once per connection".into(),
        }),
        Ok(frame) => Ok(frame),
        Err(e) => Err(unreadable(&e)),
    }
}

fn unreadable(e: &serde_json::Error) -> Refused {
    let mut reason = format!("not a tap frame: {e}");
    // A close frame's reason is at most 123 bytes.
    cut(&mut reason, 120);
    Refused {
        code: close_code::INVALID,
        reason,
    }
}

/// Cuts `text` to at most `bytes` bytes, on a character boundary.
fn cut(text: &mut String, bytes: usize) {
    if text.len() > bytes {
        let end = (0..=bytes).rev().find(|&i| text.is_char_boundary(i));
        text.truncate(end.unwrap_or(0));
    }
}

/// A lane's title from the tap's name: trimmed, cut to
/// [`MAX_CONTROLLER_CHARS`], never empty.
pub fn controller_name(hello: &Hello) -> String {
    let name: String = hello
        .controller
        .trim()
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_CONTROLLER_CHARS)
        .collect();
    if name.is_empty() {
        "unnamed controller".into()
    } else {
        name
    }
}

/// Serves one tap until it leaves, breaks a rule, or the bridge shuts down.
pub async fn serve(mut socket: WebSocket, mut tap: TapConnection) {
    let metrics = tap.app.hub.metrics().clone();
    let _connected = metrics.tap_connected();
    let hello = match tokio::time::timeout(HELLO_WITHIN, first_text(&mut socket)).await {
        Ok(Some(text)) => read_hello(&text),
        Ok(None) => return,
        Err(_) => Err(Refused {
            code: close_code::POLICY,
            reason: format!("no hello within {} s", HELLO_WITHIN.as_secs()),
        }),
    };
    let controller = match hello {
        Ok(hello) => controller_name(&hello),
        Err(refused) => {
            metrics.tap_frame(TapOutcome::Refused);
            return close(socket, refused).await;
        }
    };
    let relay = |frame: Option<TapFrame>, left: Option<String>| {
        tap.app.hub.publish(FrameBody::Tap(TapRelay {
            tap: tap.number,
            controller: controller.clone(),
            received: tap.app.now(),
            frame,
            left,
        }));
    };
    let mut limiter = RateLimiter::at_rate(TAP_RATE, Instant::now());
    let left = loop {
        let message = tokio::select! {
            _ = tap.shutdown.changed() => {
                let _ = close_with(&mut socket, close_code::AWAY, "watchlife is shutting down").await;
                break "watchlife shut down".to_string();
            }
            message = socket.next() => message,
        };
        let text = match message {
            Some(Ok(Message::Text(text))) => text,
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            Some(Ok(Message::Close(_))) | None => break "the tap closed its connection".into(),
            Some(Ok(Message::Binary(_))) => {
                metrics.tap_frame(TapOutcome::Refused);
                let reason = "a tap sends text frames".to_string();
                let _ = close_with(&mut socket, close_code::UNSUPPORTED, &reason).await;
                break reason;
            }
            Some(Err(e)) => break format!("the connection broke: {e}"),
        };
        match read_frame(&text) {
            Ok(frame) => match limiter.admit(Instant::now()) {
                Admit::Yes => {
                    metrics.tap_frame(TapOutcome::Relayed);
                    relay(Some(frame), None);
                }
                Admit::No { .. } | Admit::Flood => metrics.tap_frame(TapOutcome::OverRate),
            },
            Err(refused) => {
                metrics.tap_frame(TapOutcome::Refused);
                let _ = close_with(&mut socket, refused.code, &refused.reason).await;
                break format!("closed by watchlife: {}", refused.reason);
            }
        }
    };
    relay(None, Some(left));
    drop(tap.permit);
}

/// The first text message, answering nothing else; `None` when the socket
/// ends first.
async fn first_text(socket: &mut WebSocket) -> Option<String> {
    while let Some(Ok(message)) = socket.next().await {
        match message {
            Message::Text(text) => return Some(text.to_string()),
            Message::Close(_) => return None,
            _ => {}
        }
    }
    None
}

async fn close(mut socket: WebSocket, refused: Refused) {
    let _ = close_with(&mut socket, refused.code, &refused.reason).await;
}

/// Sends a close frame with `reason`, within a second (a tap that stopped
/// reading does not hold the bridge).
async fn close_with(socket: &mut WebSocket, code: u16, reason: &str) -> Result<(), ()> {
    let frame = CloseFrame {
        code,
        reason: reason.into(),
    };
    match tokio::time::timeout(
        Duration::from_secs(1),
        socket.send(Message::Close(Some(frame))),
    )
    .await
    {
        Ok(Ok(())) => Ok(()),
        _ => Err(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(version: u32, controller: &str) -> String {
        serde_json::to_string(&TapFrame::Hello(Hello {
            version,
            controller: controller.into(),
            tap_version: "0.1.0".into(),
            kube_runtime: "5.x".into(),
            started_at_us: 1,
            unobserved: vec!["scheduler".into()],
        }))
        .unwrap()
    }

    #[test]
    fn a_tap_starts_with_a_hello_of_a_known_version() {
        let known = read_hello(&hello(TAP_PROTOCOL_VERSION, "mine")).unwrap();
        assert_eq!(known.controller, "mine");

        let newer = read_hello(&hello(TAP_PROTOCOL_VERSION + 1, "mine")).unwrap_err();
        assert_eq!(newer.code, close_code::PROTOCOL);
        assert!(newer.reason.contains("not known here"), "{}", newer.reason);

        let stats = r#"{"type":"stats","seq":1,"at_us":2,"recorded":1,"dropped":0}"#;
        assert_eq!(read_hello(stats).unwrap_err().code, close_code::POLICY);
        assert_eq!(read_frame(stats).unwrap().seq(), 1);
    }

    #[test]
    fn what_is_not_a_tap_frame_is_refused_with_a_short_reason() {
        for bad in [
            "",
            "{",
            r#"{"type":"teleport","seq":1}"#,
            &"x".repeat(10_000),
        ] {
            let refused = read_frame(bad).unwrap_err();
            assert_eq!(refused.code, close_code::INVALID);
            assert!(refused.reason.starts_with("not a tap frame"));
            assert!(refused.reason.len() <= 123, "{}", refused.reason);
        }
        let again = read_frame(&hello(TAP_PROTOCOL_VERSION, "mine")).unwrap_err();
        assert_eq!(again.code, close_code::POLICY);
    }

    #[test]
    fn a_controllers_name_is_trimmed_cut_and_never_empty() {
        let named = |name: &str| {
            let text = hello(TAP_PROTOCOL_VERSION, name);
            controller_name(&read_hello(&text).unwrap())
        };
        assert_eq!(named("  web-sync \n"), "web-sync");
        assert_eq!(named(""), "unnamed controller");
        assert_eq!(named("a\u{7}b"), "ab");
        assert_eq!(
            named(&"é".repeat(100)).chars().count(),
            MAX_CONTROLLER_CHARS
        );
    }
}
