//! A real WebSocket client (tokio-tungstenite) speaking the watchlife protocol.
//! A viewer that asked for a compressed stream (`compress=deflate`) reads its
//! binary messages as a page does, and takes their frames one by one.

use futures_util::{SinkExt, StreamExt};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream, connect_async};
use watchlife_protocol::connection::split_batch;
use watchlife_protocol::deflated::Reader;
use watchlife_protocol::{ClientMessage, FrameBody, ReflectorState, ServerFrame};

/// A viewer connected to a bridge.
pub struct Viewer {
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
    /// Text frames read by [`Viewer::read_while`], not yet taken.
    pending: std::collections::VecDeque<String>,
    /// The compressed streams' state, for binary messages.
    inflate: Reader,
    /// Bytes of messages received, as they came on the wire.
    pub wire_bytes: usize,
}

impl Viewer {
    /// Connects to `url` (`ws://host:port/ws?...`).
    pub async fn connect(url: &str) -> Viewer {
        let (socket, _) = connect_async(url)
            .await
            .unwrap_or_else(|e| panic!("WebSocket connect to {url}: {e}"));
        Viewer {
            socket,
            pending: Default::default(),
            inflate: Reader::default(),
            wire_bytes: 0,
        }
    }

    /// Connects to `url`, or says why not (the bridge not listening yet).
    pub async fn try_connect(url: &str) -> Result<Viewer, String> {
        let (socket, _) = connect_async(url)
            .await
            .map_err(|e| format!("WebSocket connect to {url}: {e}"))?;
        Ok(Viewer {
            socket,
            pending: Default::default(),
            inflate: Reader::default(),
            wire_bytes: 0,
        })
    }

    /// The next text message, as raw text, within `timeout`.
    pub async fn next_text(&mut self, timeout: Duration) -> String {
        if let Some(text) = self.pending.pop_front() {
            return text;
        }
        loop {
            let message = tokio::time::timeout(timeout, self.socket.next())
                .await
                .unwrap_or_else(|_| panic!("no frame within {timeout:?}"))
                .expect("the bridge closed the stream")
                .expect("a WebSocket error");
            match message {
                Message::Text(text) => {
                    self.wire_bytes += text.len();
                    return text.to_string();
                }
                Message::Binary(bytes) => {
                    self.take_binary(&bytes);
                    if let Some(text) = self.pending.pop_front() {
                        return text;
                    }
                }
                Message::Ping(_) | Message::Pong(_) => continue,
                other => panic!("expected a text frame, got {other:?}"),
            }
        }
    }

    /// The next frame, parsed as the protocol says; panics when it does not parse.
    pub async fn next_frame(&mut self, timeout: Duration) -> ServerFrame {
        let text = self.next_text(timeout).await;
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("frame does not parse as the protocol says ({e}): {text}"))
    }

    /// The next frame, or `None` once the connection has ended: closed by
    /// the bridge, or cut (its process killed). Waits as long as it takes.
    pub async fn next_frame_or_end(&mut self) -> Option<ServerFrame> {
        let text = match self.pending.pop_front() {
            Some(text) => text,
            None => loop {
                match self.socket.next().await {
                    Some(Ok(Message::Text(text))) => break text.to_string(),
                    Some(Ok(Message::Binary(bytes))) => {
                        self.take_binary(&bytes);
                        match self.pending.pop_front() {
                            Some(text) => break text,
                            None => continue,
                        }
                    }
                    Some(Ok(Message::Close(_)) | Err(_)) | None => return None,
                    Some(Ok(_)) => continue,
                }
            },
        };
        Some(
            serde_json::from_str(&text).unwrap_or_else(|e| {
                panic!("frame does not parse as the protocol says ({e}): {text}")
            }),
        )
    }

    /// Reads frames until `pick` returns something, within `timeout` in all.
    pub async fn until<T>(
        &mut self,
        timeout: Duration,
        mut pick: impl FnMut(&ServerFrame) -> Option<T>,
    ) -> T {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let frame = self.next_frame(left).await;
            if let Some(found) = pick(&frame) {
                return found;
            }
        }
    }

    /// The first state of the Reflector of `resource` that `pick` accepts,
    /// live or in a snapshot, within `timeout`.
    pub async fn reflector<T>(
        &mut self,
        timeout: Duration,
        resource: &str,
        mut pick: impl FnMut(&ReflectorState) -> Option<T>,
    ) -> T {
        self.until(timeout, |f| match &f.body {
            FrameBody::Reflector(u) if u.resource == resource => pick(&u.state),
            FrameBody::Snapshot(s) => s
                .reflectors
                .iter()
                .filter(|u| u.resource == resource)
                .find_map(|u| pick(&u.state)),
            _ => None,
        })
        .await
    }

    /// Runs `work` while reading (so the bridge's pings are answered and it
    /// does not call this viewer gone); the frames that arrive meanwhile are
    /// kept for the next reads.
    pub async fn read_while<F: std::future::Future>(&mut self, work: F) -> F::Output {
        tokio::pin!(work);
        loop {
            tokio::select! {
                out = &mut work => return out,
                message = self.socket.next() => match message {
                    Some(Ok(Message::Text(text))) => self.pending.push_back(text.to_string()),
                    Some(Ok(Message::Binary(bytes))) => self.take_binary(&bytes),
                    Some(Ok(_)) => {}
                    Some(Err(e)) => panic!("a WebSocket error: {e:?}"),
                    None => panic!("the bridge closed the stream"),
                },
            }
        }
    }

    /// A compressed connection's message, read as a page reads it: its
    /// frames wait in `pending`. Panics when it cannot be read.
    fn take_binary(&mut self, bytes: &[u8]) {
        self.wire_bytes += bytes.len();
        let text = self
            .inflate
            .read(bytes)
            .unwrap_or_else(|e| panic!("a compressed message does not read: {e}"));
        self.pending.extend(split_batch(&text).map(str::to_string));
    }

    /// Sends a message.
    pub async fn send(&mut self, message: &ClientMessage) {
        self.send_text(&serde_json::to_string(message).unwrap())
            .await;
    }

    /// Sends raw text (for malformed-input tests).
    pub async fn send_text(&mut self, text: &str) {
        self.socket
            .send(Message::text(text))
            .await
            .expect("send to the bridge");
    }
}
