//! A frame as the viewers are sent it: one JSON text message, encoded once
//! and shared by every viewer that takes it.

use axum::extract::ws::Utf8Bytes;
use watchlife_protocol::ServerFrame;

/// Encodes a frame as one JSON text message.
pub fn encode(frame: &ServerFrame) -> Utf8Bytes {
    serde_json::to_string(frame)
        .expect("frames are plain data and always serialize")
        .into()
}
