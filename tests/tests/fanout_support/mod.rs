//! What the fan-out and security tests share: raw WebSocket clients that see
//! every frame as sent (text, close frames, handshake refusals), the bridge's
//! metrics, and a bridge stopped with SIGTERM. A client that asked for a
//! compressed stream reads its binary messages as a page does.

#![allow(dead_code)]

use futures_util::{SinkExt, StreamExt};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use watchlife_protocol::connection::split_batch;
use watchlife_protocol::deflated::Reader;
use watchlife_protocol::{FrameBody, ServerFrame};

/// A generous bound on waiting for something that must happen; never a
/// measure of speed (the machine is shared and slow at times).
pub const WAIT: Duration = Duration::from_secs(60);

/// What a client read (a frame is boxed: an event frame is far larger than
/// a close).
#[derive(Debug)]
pub enum Read {
    Frame(Box<ServerFrame>, String),
    Closed(Option<CloseFrame>),
}

/// A WebSocket client of the bridge.
pub struct Client {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    /// Frames of a compressed message not yet read.
    pending: VecDeque<String>,
    inflate: Reader,
    /// Bytes of the messages received, as they came on the wire.
    pub wire_bytes: usize,
}

impl From<WebSocketStream<MaybeTlsStream<TcpStream>>> for Client {
    fn from(ws: WebSocketStream<MaybeTlsStream<TcpStream>>) -> Self {
        Client {
            ws,
            pending: VecDeque::new(),
            inflate: Reader::default(),
            wire_bytes: 0,
        }
    }
}

/// A refused handshake: the HTTP status and body.
#[derive(Debug)]
pub struct Refused {
    pub status: u16,
    pub body: String,
}

impl Client {
    /// Connects to `url`; panics when refused.
    pub async fn connect(url: &str) -> Client {
        Client::try_connect(url, &[])
            .await
            .unwrap_or_else(|r| panic!("{url} refused the handshake: {r:?}"))
    }

    /// Connects with extra headers; a refusal comes back as its status and body.
    pub async fn try_connect(url: &str, headers: &[(&str, &str)]) -> Result<Client, Refused> {
        let mut request = url.into_client_request().expect("a ws:// URL");
        for (name, value) in headers {
            request.headers_mut().insert(
                tokio_tungstenite::tungstenite::http::HeaderName::from_bytes(name.as_bytes())
                    .unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        match tokio_tungstenite::connect_async(request).await {
            Ok((ws, _)) => Ok(Client::from(ws)),
            Err(WsError::Http(response)) => Err(Refused {
                status: response.status().as_u16(),
                body: response
                    .body()
                    .as_ref()
                    .map(|b| String::from_utf8_lossy(b).into_owned())
                    .unwrap_or_default(),
            }),
            Err(e) => panic!("WebSocket connect to {url}: {e}"),
        }
    }

    /// Connects over a socket with a small receive buffer, so that a client
    /// that stops reading fills the bridge's send buffer quickly.
    pub async fn connect_small_buffer(addr: SocketAddr, path: &str) -> Client {
        let socket = TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let tcp = socket.connect(addr).await.expect("TCP connect");
        let url = format!("ws://{addr}{path}");
        let (ws, _) = tokio_tungstenite::client_async(url, MaybeTlsStream::Plain(tcp))
            .await
            .expect("WebSocket handshake");
        Client::from(ws)
    }

    /// The next frame or close, within `timeout`.
    pub async fn read(&mut self, timeout: Duration) -> Read {
        match self.read_text(timeout).await {
            Ok(text) => parsed(text),
            Err(close) => Read::Closed(close),
        }
    }

    /// The next frame's text, unparsed, or the close, within `timeout`.
    pub async fn read_text(&mut self, timeout: Duration) -> Result<String, Option<CloseFrame>> {
        loop {
            if let Some(text) = self.pending.pop_front() {
                return Ok(text);
            }
            let message = tokio::time::timeout(timeout, self.ws.next())
                .await
                .unwrap_or_else(|_| panic!("nothing from the bridge within {timeout:?}"));
            match message {
                Some(Ok(Message::Text(text))) => {
                    self.wire_bytes += text.len();
                    self.pending.extend(split_batch(&text).map(str::to_string));
                }
                Some(Ok(Message::Binary(bytes))) => {
                    self.wire_bytes += bytes.len();
                    let text = self
                        .inflate
                        .read(&bytes)
                        .unwrap_or_else(|e| panic!("a compressed message does not read: {e}"));
                    self.pending.extend(split_batch(&text).map(str::to_string));
                }
                Some(Ok(Message::Close(frame))) => return Err(frame),
                Some(Ok(_)) => continue,
                Some(Err(_)) | None => return Err(None),
            }
        }
    }

    /// The next frame; panics on a close.
    pub async fn frame(&mut self) -> (ServerFrame, String) {
        match self.read(WAIT).await {
            Read::Frame(f, text) => (*f, text),
            Read::Closed(c) => panic!("the bridge closed the connection: {c:?}"),
        }
    }

    /// Reads `hello` and what follows it up to and including the snapshot;
    /// returns `hello`'s stream id and the cursor.
    pub async fn greeting(&mut self) -> (String, u64) {
        let (hello, _) = self.frame().await;
        let FrameBody::Hello(h) = hello.body else {
            panic!("hello first, got {hello:?}")
        };
        let (snapshot, _) = self.frame().await;
        assert!(
            matches!(snapshot.body, FrameBody::Snapshot(_)),
            "a new viewer gets a snapshot after hello: {snapshot:?}"
        );
        (h.stream, snapshot.seq)
    }

    /// Reads until the close frame, skipping frames; its code and reason.
    pub async fn until_closed(&mut self) -> Option<(u16, String)> {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if let Read::Closed(frame) = self.read(left).await {
                return frame.map(|f| (u16::from(f.code), f.reason.to_string()));
            }
        }
    }

    pub async fn send_text(&mut self, text: &str) {
        self.ws
            .send(Message::text(text))
            .await
            .expect("send to the bridge");
    }

    /// Sends without waiting for the socket to flush each message.
    pub async fn feed_text(&mut self, text: &str) -> bool {
        self.ws.feed(Message::text(text)).await.is_ok()
    }

    pub async fn flush(&mut self) -> bool {
        self.ws.flush().await.is_ok()
    }

    pub async fn close(mut self) {
        let _ = self.ws.close(None).await;
    }
}

/// `GET /metrics` of a bridge (or the demo API): the value of the sample
/// whose name and labels are exactly `series`, or `None` when absent.
pub async fn metric(addr: SocketAddr, series: &str) -> Option<f64> {
    metric_at(addr, "/metrics", series).await
}

pub async fn metric_at(addr: SocketAddr, path: &str, series: &str) -> Option<f64> {
    let response = watchlife_tests::http::get(addr, path)
        .await
        .expect("GET /metrics");
    assert_eq!(response.status, 200, "{}", response.text());
    response
        .text()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            (name == series).then(|| value.parse().expect("a number"))
        })
}

/// Polls `metric` until `check` holds (or panics after [`WAIT`]).
pub async fn wait_for_metric(addr: SocketAddr, series: &str, check: impl Fn(f64) -> bool) -> f64 {
    let deadline = Instant::now() + WAIT;
    loop {
        let value = metric(addr, series).await.unwrap_or(f64::NAN);
        if check(value) {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "{series} is {value}, never what was expected"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A bridge run directly, to be stopped with a signal.
pub struct Process {
    pub child: Child,
    pub addr: SocketAddr,
    /// Its cache folder, where the demo writes its kubeconfig.
    _cache: tempfile::TempDir,
}

impl Process {
    /// Starts `watchlife --listen ADDR ARGS` (the demo's API on a free
    /// port) and waits for `/healthz`.
    pub async fn start(addr: SocketAddr, args: &[&str]) -> Process {
        let cache = tempfile::tempdir().expect("a temporary folder");
        let child = Command::new(watchlife_tests::bridge::binary())
            .current_dir(watchlife_tests::workspace())
            .env("XDG_CACHE_HOME", cache.path())
            .arg("--listen")
            .arg(addr.to_string())
            .args(["--demo-api", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the watchlife binary starts");
        let process = Process {
            child,
            addr,
            _cache: cache,
        };
        let deadline = Instant::now() + WAIT;
        loop {
            if let Ok(r) = watchlife_tests::http::get(addr, "/healthz").await
                && r.status == 200
            {
                return process;
            }
            assert!(Instant::now() < deadline, "watchlife never served /healthz");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Sends SIGTERM, as a service manager stops it.
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback address with a free port.
pub fn free_addr() -> SocketAddr {
    format!("127.0.0.1:{}", watchlife_tests::free_port())
        .parse()
        .unwrap()
}

/// A frame's text parsed; panics when it does not parse as the protocol says.
fn parsed(text: String) -> Read {
    let frame = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("frame does not parse as the protocol says ({e}): {text}"));
    Read::Frame(Box::new(frame), text)
}
