//! Test support: an in-process demo API on a free loopback port, and a raw
//! HTTP request for the headers a client library would tidy up. The HTTP
//! client is the shared one in `watchlife_testkit::client`.

#![allow(dead_code, reason = "each test file uses a part")]

use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use watchlife_controlplane::ControlPlane;
use watchlife_demo_apiserver::ServeOptions;

/// Query parameter names clients send, most of which the demo API reads
/// (`pretty` and `unknown` it ignores): what the fuzzed query strings are
/// made of.
pub const QUERY_NAMES: [&str; 17] = [
    "watch",
    "labelSelector",
    "fieldSelector",
    "resourceVersion",
    "resourceVersionMatch",
    "limit",
    "continue",
    "timeoutSeconds",
    "allowWatchBookmarks",
    "gracePeriodSeconds",
    "sendInitialEvents",
    "fieldManager",
    "force",
    "dryRun",
    "propagationPolicy",
    "pretty",
    "unknown",
];

/// A running demo API, stopped on drop.
pub struct Server {
    pub base: String,
    pub cp: ControlPlane,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Starts the API over a fresh control plane, its stages running as tasks
/// as in `watchlife --demo`, on 127.0.0.1 and a free port.
pub async fn start() -> Server {
    start_with(ServeOptions::default()).await
}

/// [`start`] with other options (a token).
pub async fn start_with(options: ServeOptions) -> Server {
    serve(options, watchlife_controlplane::Profile::default()).await
}

/// [`start`] with a server that behaves as `profile`.
pub async fn start_profile(profile: watchlife_controlplane::Profile) -> Server {
    serve(ServeOptions::default(), profile).await
}

async fn serve(options: ServeOptions, profile: watchlife_controlplane::Profile) -> Server {
    let cp = watchlife_demo_apiserver::stages::start_with_profile(
        watchlife_controlplane::limits::Limits::DEMO,
        watchlife_controlplane::cacher::watcher::DEMO_BOOKMARK_FREQUENCY,
        profile,
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(watchlife_demo_apiserver::serve_with(
        cp.clone(),
        listener,
        options,
        async {
            let _ = stopped.await;
        },
    ));
    Server {
        base,
        cp,
        stop: Some(stop),
    }
}

/// What a raw request got: the status code, and the body (JSON when the
/// server says so).
#[derive(Debug)]
pub struct Raw {
    pub code: u16,
    pub head: String,
    pub body: String,
}

impl Raw {
    /// The body as JSON (a `Status`, mostly); `Null` when it is not.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_default()
    }
}

/// Sends `request` (a whole HTTP/1.1 request, with `Connection: close`) to
/// `base` and reads the answer to the end.
pub async fn raw(base: &str, request: &str) -> Raw {
    let addr = base.trim_start_matches("http://");
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), tcp.read_to_end(&mut bytes))
        .await
        .expect("an answer within seconds")
        .expect("the server answers rather than resets");
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {text:?}"));
    Raw {
        code,
        head: head.to_string(),
        body: body.to_string(),
    }
}
