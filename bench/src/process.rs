//! The `watchlife` binary as a child process, the little HTTP the bench
//! needs to talk to it (`/metrics`), and a viewer's WebSocket to it.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::{self, protocol::WebSocketConfig};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// How long `watchlife` may take to print the address it serves.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A section that starts the `watchlife` binary afresh in each of its runs.
#[derive(Debug, Clone)]
pub struct BridgeRuns {
    pub runs: usize,
    pub watchlife: PathBuf,
}

/// A running `watchlife`, killed on drop.
pub struct Watchlife {
    child: Child,
    pub addr: SocketAddr,
    /// Its own cache folder (where the demo writes its kubeconfig), removed
    /// on drop: a killed bridge cannot remove its kubeconfig itself.
    cache: PathBuf,
}

/// The query of the page's stream (`frontend/src/connection.rs`).
pub const PAGE_QUERY: &str = "?batch=true&compress=deflate&bodies=patch";

impl Watchlife {
    /// Starts `binary --listen 127.0.0.1:0 args...` and waits for the line
    /// `watchlife is serving http://ADDR/`.
    pub fn start(binary: &Path, args: &[&str]) -> Result<Watchlife, String> {
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let cache = std::env::temp_dir().join(format!(
            "watchlife-bench-cache-{}-{}",
            std::process::id(),
            STARTED.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&cache).map_err(|e| format!("{}: {e}", cache.display()))?;
        let mut child = Command::new(binary)
            .env("XDG_CACHE_HOME", &cache)
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("serving http://").nth(1) {
                    let _ = tx.send(rest.trim_end_matches('/').to_string());
                }
            }
        });
        let mut process = Watchlife {
            child,
            addr: "127.0.0.1:0".parse().expect("an address"),
            cache,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(addr) = rx.recv_timeout(Duration::from_millis(100)) {
                process.addr = addr
                    .parse()
                    .map_err(|e| format!("watchlife printed an odd address {addr}: {e}"))?;
                return Ok(process);
            }
            if let Ok(Some(status)) = process.child.try_wait() {
                return Err(format!("watchlife exited at start: {status}"));
            }
            if Instant::now() > deadline {
                return Err(format!("watchlife did not start within {START_TIMEOUT:?}"));
            }
        }
    }

    /// `binary --demo --demo-rate RATE --demo-api 127.0.0.1:0 extra...`: the
    /// embedded demo at `rate` changes a second, its API on a free port.
    pub fn start_demo(binary: &Path, rate: &str, extra: &[&str]) -> Result<Watchlife, String> {
        let mut args = vec!["--demo", "--demo-rate", rate, "--demo-api", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        Watchlife::start(binary, &args)
    }

    /// `binary --kubeconfig KUBECONFIG --resources configmaps extra...`: the
    /// configmaps of a cluster.
    pub fn start_on_configmaps(
        binary: &Path,
        kubeconfig: &str,
        extra: &[&str],
    ) -> Result<Watchlife, String> {
        let mut args = vec!["--kubeconfig", kubeconfig, "--resources", "configmaps"];
        args.extend_from_slice(extra);
        Watchlife::start(binary, &args)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The kubeconfig the demo wrote for its API (`--demo`), in this
    /// process's own cache folder.
    pub fn demo_kubeconfig(&self) -> Result<PathBuf, String> {
        let folder = self.cache.join("watchlife");
        std::fs::read_dir(&folder)
            .map_err(|e| format!("{}: {e}", folder.display()))?
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .find(|path| path.to_string_lossy().ends_with("demo.kubeconfig"))
            .ok_or_else(|| format!("the demo wrote no kubeconfig in {}", folder.display()))
    }

    pub fn ws_url(&self) -> String {
        format!("ws://{}/ws", self.addr)
    }

    /// The stream as the page asks for it: batches, compressed, updates'
    /// bodies as merge patches.
    pub fn page_ws_url(&self) -> String {
        format!("{}{PAGE_QUERY}", self.ws_url())
    }

    /// Connects a viewer that hears only the Reflector (a filter on a
    /// namespace no object is in) and returns the time since `start` when
    /// it reports the list whole: a LIST finished, or a streaming list's
    /// initial events ended (Kubernetes 1.36's rules), or a snapshot says
    /// the watch has started (a viewer that joined after the LIST). At
    /// most `timeout`.
    pub async fn list_finished(
        &self,
        start: Instant,
        timeout: Duration,
    ) -> Result<Duration, String> {
        self.hear_reflector(timeout, "the LIST did not finish in time", |frame| {
            let snapshot =
                frame.starts_with("{\"seq\":") && frame.contains(",\"type\":\"snapshot\"");
            (frame.contains("\"list_finished\"")
                || frame.contains("\"initial_events_end\"")
                || (snapshot && frame.contains("\"watch_started\"")))
            .then(|| start.elapsed())
        })
        .await
    }

    /// Connects a viewer that hears only the Reflector (a filter on a
    /// namespace no object is in) and hands it every frame until `heard`
    /// returns something, which this returns. At most `timeout`; `late`
    /// says what did not come in time.
    pub async fn hear_reflector<T>(
        &self,
        timeout: Duration,
        late: &str,
        mut heard: impl FnMut(&str) -> Option<T>,
    ) -> Result<T, String> {
        use futures_util::{SinkExt, StreamExt};
        use tokio_tungstenite::tungstenite::Message;
        // The snapshot before the filter holds every object.
        let mut ws = connect_whole(&self.ws_url())
            .await
            .map_err(|e| format!("the viewer could not connect: {e}"))?;
        ws.send(Message::text(
            r#"{"type":"subscribe","filter":{"namespace":"bench-nothing-here"}}"#,
        ))
        .await
        .map_err(|e| e.to_string())?;
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let message = tokio::time::timeout_at(deadline, ws.next())
                .await
                .map_err(|_| late.to_string())?
                .ok_or("the bridge closed the viewer")?
                .map_err(|e| e.to_string())?;
            let Message::Text(text) = message else {
                continue;
            };
            for frame in watchlife_protocol::connection::split_batch(text.as_str()) {
                if let Some(found) = heard(frame) {
                    return Ok(found);
                }
            }
        }
    }
}

impl Drop for Watchlife {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.cache);
    }
}

/// A viewer's WebSocket.
pub type Socket = WebSocketStream<MaybeTlsStream<tokio::net::TcpStream>>;

/// Connects a viewer of `url` with no limit on a message's size: a snapshot
/// of the whole cache may exceed tungstenite's default 64 MiB.
pub async fn connect_whole(url: &str) -> Result<Socket, tungstenite::Error> {
    let config = WebSocketConfig::default()
        .max_message_size(None)
        .max_frame_size(None);
    tokio_tungstenite::connect_async_with_config(url, Some(config), true)
        .await
        .map(|(ws, _)| ws)
}

/// `GET path` over plain HTTP/1.0; the body, or `None` on any failure.
pub async fn get(addr: SocketAddr, path: &str) -> Option<String> {
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await
        .ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).await.ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.lines().next()?;
    (status.split_whitespace().nth(1) == Some("200")).then(|| body.to_string())
}

/// The value of an unlabelled Prometheus metric in `text`.
pub fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

/// The sum of a metric over all its labels (`name{...} value` lines).
pub fn metric_sum(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}
