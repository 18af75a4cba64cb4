//! A WebSocket viewer of the big cluster's bridge: its opening (hello and
//! snapshot) and the frames it receives, read by their `type` alone.

use super::TIMEOUT;
use crate::process::{Socket, connect_whole};
use futures_util::StreamExt;
use serde::Deserialize;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

/// A WebSocket viewer, with no limit on a message's size: the snapshot holds
/// the whole cache.
pub async fn connect(url: &str) -> Result<Socket, String> {
    connect_whole(url)
        .await
        .map_err(|e| format!("a viewer could not connect: {e}"))
}

/// Just the `type` of a frame, its other fields skipped.
#[derive(Deserialize)]
struct Typed {
    #[serde(rename = "type")]
    kind: Option<String>,
}

fn frame_type(line: &str) -> Option<String> {
    serde_json::from_str::<Typed>(line).ok()?.kind
}

/// Reads messages until one holds a snapshot frame; returns the bytes of
/// every message read, that one included, and how many messages.
pub async fn read_opening(ws: &mut Socket) -> Result<(usize, usize), String> {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    let (mut total, mut messages) = (0, 0);
    loop {
        let message = tokio::time::timeout_at(deadline, ws.next())
            .await
            .map_err(|_| "no snapshot in time".to_string())?
            .ok_or("the bridge closed the viewer")?
            .map_err(|e| e.to_string())?;
        let text = match &message {
            Message::Text(t) => t.as_str(),
            Message::Binary(b) => {
                total += b.len();
                messages += 1;
                continue;
            }
            _ => continue,
        };
        total += text.len();
        messages += 1;
        if text
            .split('\n')
            .any(|line| frame_type(line).as_deref() == Some("snapshot"))
        {
            return Ok((total, messages));
        }
    }
}

/// What a viewer received while the writer ran.
#[derive(Debug, Default, Clone, Copy)]
pub struct Received {
    /// Frames (lines) and event frames during the writer's window.
    pub frames: usize,
    pub events: usize,
    /// Event frames by [`DRAIN`] after the window, the window's included.
    pub events_drained: usize,
    /// `resync` frames (the viewer fell behind and was sent a snapshot).
    pub resyncs: usize,
}

/// How long the viewer reads on after the writer stops.
pub const DRAIN: Duration = Duration::from_secs(3);

/// Counts what a viewer receives during `length`, then during [`DRAIN`].
pub async fn count_frames(ws: &mut Socket, length: Duration) -> Received {
    let end = tokio::time::Instant::now() + length;
    let mut got = Received::default();
    let mut in_window = true;
    loop {
        let deadline = if in_window { end } else { end + DRAIN };
        match tokio::time::timeout_at(deadline, ws.next()).await {
            Ok(Some(Ok(Message::Text(text)))) => {
                for line in text.as_str().split('\n').filter(|l| !l.is_empty()) {
                    let kind = frame_type(line);
                    let event = usize::from(kind.as_deref() == Some("event"));
                    got.events_drained += event;
                    got.resyncs += usize::from(kind.as_deref() == Some("resync"));
                    if in_window {
                        got.frames += 1;
                        got.events += event;
                    }
                }
            }
            Ok(Some(Ok(_))) => {}
            Err(_) if in_window => in_window = false,
            _ => break,
        }
    }
    got
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_type_of_a_frame_in_either_layout() {
        assert_eq!(
            frame_type(r#"{"seq":3,"type":"snapshot","objects":[{"type":"x"}]}"#).as_deref(),
            Some("snapshot")
        );
        assert_eq!(
            frame_type(r#"{"seq":3,"data":{"type":"x"},"type":"event"}"#).as_deref(),
            Some("event")
        );
        assert_eq!(frame_type("not json"), None);
    }
}
