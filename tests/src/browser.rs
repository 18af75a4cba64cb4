//! Headless Chromium driven through chromedriver, cleaned up on drop, and a
//! [`ScriptedBridge`]: the app's files and a `/ws` that sends exactly the
//! frames a test chooses, for stories the demo tells only by chance (a
//! coalesced event, a DELETED, a newer protocol).

use fantoccini::{Client, ClientBuilder, Locator};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Flags headless Chromium needs on these machines: no GPU, no sandbox (root),
/// and no background networking (the network is closed, and Chromium would
/// otherwise flood it with connection attempts).
const CHROMIUM_FLAGS: [&str; 9] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
];

/// The narrowest window headless Chromium draws: a narrower `--window-size`
/// is widened to this.
pub const MIN_WINDOW_WIDTH: u32 = 500;

/// How long an element may take to appear.
pub const WAIT: Duration = Duration::from_secs(20);

/// A browser session. Dropping it ends the session and kills chromedriver
/// with every Chromium it started, also when a test panics.
pub struct Browser {
    pub client: Client,
    driver: Child,
    _profile: TempDir,
}

impl Browser {
    /// Starts chromedriver on a free port and a headless Chromium session with
    /// a fresh profile, sized `width`×`height`.
    pub async fn start(width: u32, height: u32) -> Browser {
        Browser::start_with(width, height).await
    }

    /// A session whose page is `width`×`height` CSS pixels as a phone's is:
    /// Chromium's window cannot be narrower than [`MIN_WINDOW_WIDTH`], so a
    /// phone's screen is emulated (DevTools' device metrics, one pixel per
    /// CSS pixel, a mobile viewport) rather than asked of the window.
    pub async fn start_phone(width: u32, height: u32) -> Browser {
        let browser = Browser::start_with(width.max(MIN_WINDOW_WIDTH), height).await;
        browser
            .cdp(
                "Emulation.setDeviceMetricsOverride",
                serde_json::json!({
                    "width": width, "height": height, "deviceScaleFactor": 1, "mobile": true
                }),
            )
            .await;
        browser
    }

    async fn start_with(width: u32, height: u32) -> Browser {
        let port = crate::free_port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own process group, so drop can kill Chromium too.
            .process_group(0)
            .spawn()
            .expect("chromedriver is installed (make test installs Debian's chromium-driver)");
        let profile = TempDir::new("watchlife-chromium");
        let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|s| s.to_string()).collect();
        args.push(format!("--user-data-dir={}", profile.0.display()));
        args.push(format!("--window-size={width},{height}"));
        let mut caps = serde_json::Map::new();
        let options = serde_json::json!({ "args": args, "binary": "/usr/bin/chromium" });
        caps.insert("goog:chromeOptions".into(), options);
        let url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(20);
        let client = loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(caps.clone())
                .connect(&url)
                .await
            {
                Ok(client) => break client,
                Err(e) if Instant::now() > deadline => panic!("no chromedriver session: {e}"),
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        };
        Browser {
            client,
            driver,
            _profile: profile,
        }
    }

    /// A `width`×`height` session on `url`.
    pub async fn open(width: u32, height: u32, url: &str) -> Browser {
        let browser = Browser::start(width, height).await;
        browser.goto(url).await;
        browser
    }

    /// A `width`×`height` session on the live page at `url` (a bridge's, or
    /// a [`ScriptedBridge`]'s), once its link to the bridge is connected.
    pub async fn open_connected(width: u32, height: u32, url: &str) -> Browser {
        let browser = Browser::open(width, height, url).await;
        browser.wait_connected().await;
        browser
    }

    /// A `width`×`height` session on the replay page at `url`, once its
    /// recording is loaded.
    pub async fn open_replay(width: u32, height: u32, url: &str) -> Browser {
        let browser = Browser::open(width, height, url).await;
        browser
            .wait_until(
                "the recording is loaded",
                "document.querySelector('#replay-status[data-status=ready]')",
            )
            .await;
        browser
    }

    /// Loads `url` in this session.
    pub async fn goto(&self, url: &str) {
        self.client
            .goto(url)
            .await
            .unwrap_or_else(|e| panic!("open {url}: {e}"));
    }

    /// Waits until the header's badge says the page's link to its bridge is
    /// connected.
    pub async fn wait_connected(&self) {
        self.wait_until(
            "the link is connected",
            "document.querySelector('#link[data-link=connected]')",
        )
        .await;
    }

    /// Waits for an element matching a CSS selector.
    pub async fn wait_for(&self, css: &str) -> fantoccini::elements::Element {
        self.client
            .wait()
            .at_most(WAIT)
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no element {css:?} within {WAIT:?}: {e}"))
    }

    /// Text of the first element matching `css`.
    pub async fn text(&self, css: &str) -> String {
        self.wait_for(css).await.text().await.expect("element text")
    }

    /// Polls `check` (a JavaScript expression returning a boolean) until true.
    pub async fn wait_until(&self, what: &str, check: &str) {
        let deadline = Instant::now() + WAIT;
        loop {
            let ok = self
                .client
                .execute(&format!("return !!({check});"), vec![])
                .await
                .map(|v| v.as_bool() == Some(true))
                .unwrap_or(false);
            if ok {
                return;
            }
            assert!(Instant::now() < deadline, "timed out waiting until {what}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Fails when two visible elements matching `css` overlap (by more
    /// than half a pixel): text written over text.
    pub async fn assert_no_overlap(&self, css: &str) {
        let css_json = serde_json::to_string(css).expect("a string");
        let pair = self
            .eval(&format!(
                "(() => {{ const all = [...document.querySelectorAll({css_json})]
                    .map(e => [e, e.getBoundingClientRect()]).filter(([, b]) => b.width > 0);
                  for (let i = 0; i < all.length; i++) for (let j = i + 1; j < all.length; j++) {{
                    const [ea, a] = all[i], [eb, b] = all[j];
                    if (a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5)
                      return [ea.textContent, eb.textContent];
                  }}
                  return null; }})()"
            ))
            .await;
        assert!(pair.is_null(), "{css}: {pair} overlap");
    }

    /// Runs a Chrome DevTools Protocol command (see [`crate::cdp`]).
    pub async fn cdp(&self, cmd: &str, params: serde_json::Value) -> serde_json::Value {
        let cmd = crate::cdp::Cdp {
            cmd: cmd.into(),
            params,
        };
        self.client
            .issue_cmd(cmd)
            .await
            .unwrap_or_else(|e| panic!("a DevTools command: {e}"))
    }

    /// Runs `script` in every document the session opens from now on, before
    /// the page's own scripts.
    pub async fn before_every_page(&self, script: &str) {
        self.cdp(
            "Page.addScriptToEvaluateOnNewDocument",
            serde_json::json!({ "source": script }),
        )
        .await;
    }

    /// The value of a JavaScript expression.
    pub async fn eval(&self, expr: &str) -> serde_json::Value {
        self.client
            .execute(&format!("return ({expr});"), vec![])
            .await
            .unwrap_or_else(|e| panic!("evaluating {expr:?}: {e}"))
    }

    /// Runs `script`, whose last argument is a callback, and returns what it
    /// passes to it: for a value read after the page's own microtasks and
    /// timers (`setTimeout(() => done(x), 0)`), not a WebDriver round trip
    /// later.
    pub async fn eval_async(&self, script: &str) -> serde_json::Value {
        self.client
            .execute_async(script, vec![])
            .await
            .unwrap_or_else(|e| panic!("running {script:?}: {e}"))
    }

    /// Runs `script` (statements, a library's source say) in the page.
    pub async fn run(&self, script: &str) {
        self.client
            .execute(script, vec![])
            .await
            .unwrap_or_else(|e| panic!("running a script of {} bytes: {e}", script.len()));
    }

    /// Presses a key as the page sees it: a `keydown` on the focused element
    /// (or the body), bubbling up to the window.
    pub async fn press(&self, key: &str) {
        let key = serde_json::to_string(key).expect("a key is a string");
        self.eval(&format!(
            "(document.activeElement || document.body).dispatchEvent(new KeyboardEvent('keydown', {{key: {key}, bubbles: true}})) && true"
        ))
        .await;
    }

    /// Sets a form field's value and tells the page, as typing would.
    pub async fn fill(&self, css: &str, value: &str) {
        self.wait_for(css).await;
        let css = serde_json::to_string(css).expect("a selector is a string");
        let value = serde_json::to_string(value).expect("a value is a string");
        self.eval(&format!(
            "(() => {{ const el = document.querySelector({css}); el.value = {value}; \
             el.dispatchEvent(new Event(el.tagName === 'SELECT' ? 'change' : 'input', {{bubbles: true}})); return true; }})()"
        ))
        .await;
    }

    /// Clicks the element matching `css` as it is now. Unlike clicking a
    /// found element, this cannot miss a row that was redrawn in between.
    pub async fn click(&self, css: &str) {
        self.wait_for(css).await;
        let css = serde_json::to_string(css).expect("a selector is a string");
        self.eval(&format!(
            "(() => {{ document.querySelector({css}).click(); return true; }})()"
        ))
        .await;
    }

    /// Saves a PNG screenshot.
    pub async fn screenshot(&self, path: &std::path::Path) {
        let png = self.client.screenshot().await.expect("screenshot");
        std::fs::write(path, png).expect("write screenshot");
    }

    /// Saves a PNG screenshot as `docs/screenshots/{name}`, the pictures the
    /// documentation shows.
    pub async fn screenshot_for_docs(&self, name: &str) {
        self.screenshot(&crate::workspace().join("docs/screenshots").join(name))
            .await;
    }

    /// Ends the session cleanly (drop also cleans up, less politely).
    pub async fn close(self) {
        let _ = self.client.clone().close().await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The negative pid names the whole process group: chromedriver and
        // every Chromium process it started.
        let _ = Command::new("kill")
            .args(["-9", "--", &format!("-{}", self.driver.id())])
            .status();
        let _ = self.driver.wait();
    }
}

/// A temporary directory removed on drop.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    pub fn new(prefix: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir().join(format!("{prefix}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A stand-in for the bridge: serves the built app from `dist/` and, on
/// `/ws`, sends `hello`, then the opening frames, then whatever the test
/// sends, with a heartbeat so the page never calls the link stalled.
pub struct ScriptedBridge {
    pub addr: std::net::SocketAddr,
    frames: tokio::sync::broadcast::Sender<String>,
    requests: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl ScriptedBridge {
    /// Starts serving on a free loopback port. `opening` follows `hello`
    /// on every connection (usually a `snapshot`).
    pub async fn start(
        hello: watchlife_protocol::Hello,
        opening: Vec<watchlife_protocol::ServerFrame>,
    ) -> ScriptedBridge {
        let dist = crate::workspace().join("dist");
        assert!(
            dist.join("index.html").is_file(),
            "{} has no app: build it with `make frontend`",
            dist.display()
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("loopback is available");
        let addr = listener.local_addr().expect("a bound address");
        let (frames, _) = tokio::sync::broadcast::channel(256);
        let requests = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut greeting = vec![frame_text(&watchlife_protocol::ServerFrame {
            seq: 0,
            body: watchlife_protocol::FrameBody::Hello(hello),
        })];
        greeting.extend(opening.iter().map(frame_text));
        let (tx, log) = (frames.clone(), requests.clone());
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (dist, greeting, live, log) =
                    (dist.clone(), greeting.clone(), tx.subscribe(), log.clone());
                tokio::spawn(async move {
                    let _ = scripted::serve(stream, &dist, greeting, live, log).await;
                });
            }
        });
        ScriptedBridge {
            addr,
            frames,
            requests,
            task,
        }
    }

    /// `http://addr`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Sends a frame to every connected page.
    pub fn send(&self, frame: &watchlife_protocol::ServerFrame) {
        let _ = self.frames.send(frame_text(frame));
    }

    /// The request targets (`/ws?token=…`) of every `/ws` connection so far.
    pub fn ws_requests(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for ScriptedBridge {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The `hello` of a scripted stream named `stream`: this protocol, the demo
/// as its source, every stage observed, no demo actions, Kubernetes 1.36's
/// rules, watching `resources`.
pub fn scripted_hello(stream: &str, resources: &[&str]) -> watchlife_protocol::Hello {
    watchlife_protocol::Hello {
        protocol: watchlife_protocol::PROTOCOL_VERSION,
        server_version: "0.1.0".into(),
        stream: stream.into(),
        source: watchlife_protocol::Source::Demo {
            api: "http://127.0.0.1:1".into(),
        },
        resources: resources.iter().map(|r| r.to_string()).collect(),
        observed_stages: watchlife_protocol::Stage::ALL.to_vec(),
        demo_actions: false,
        heartbeat_ms: 5_000,
        kubernetes: "1.36".into(),
        cluster_version: None,
    }
}

/// The pod `default/{name}`, as a scripted frame names it.
pub fn scripted_pod(name: &str) -> watchlife_protocol::ObjectRef {
    watchlife_protocol::ObjectRef {
        resource: "pods".into(),
        kind: "Pod".into(),
        namespace: Some("default".into()),
        name: name.into(),
    }
}

fn frame_text(frame: &watchlife_protocol::ServerFrame) -> String {
    serde_json::to_string(frame).expect("frames serialize")
}

mod scripted {
    use futures_util::{SinkExt, StreamExt};
    use std::path::Path;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;
    use tokio::sync::broadcast;
    use tokio_tungstenite::tungstenite::Message;

    /// Longest request head read.
    const MAX_HEAD: usize = 16 * 1024;

    /// One connection: a file, or the scripted stream.
    pub async fn serve(
        mut stream: TcpStream,
        dist: &Path,
        greeting: Vec<String>,
        mut live: broadcast::Receiver<String>,
        log: Arc<Mutex<Vec<String>>>,
    ) -> std::io::Result<()> {
        // Peek at the head without consuming it: a WebSocket handshake must
        // reach tungstenite whole.
        let mut buf = vec![0; MAX_HEAD];
        let head = loop {
            let n = stream.peek(&mut buf).await?;
            let text = String::from_utf8_lossy(&buf[..n]).into_owned();
            if text.contains("\r\n\r\n") || n == MAX_HEAD {
                break text;
            }
            if n == 0 {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        let target = head.split_whitespace().nth(1).unwrap_or("/").to_string();
        if target == "/ws" || target.starts_with("/ws?") {
            log.lock().unwrap_or_else(|p| p.into_inner()).push(target);
            let mut ws = tokio_tungstenite::accept_async(stream)
                .await
                .map_err(std::io::Error::other)?;
            for text in greeting {
                ws.send(Message::text(text))
                    .await
                    .map_err(std::io::Error::other)?;
            }
            let mut heartbeat = tokio::time::interval(Duration::from_secs(2));
            loop {
                let out = tokio::select! {
                    frame = live.recv() => match frame {
                        Ok(text) => text,
                        Err(broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(broadcast::error::RecvError::Closed) => return Ok(()),
                    },
                    incoming = ws.next() => match incoming {
                        Some(Ok(_)) => continue,
                        _ => return Ok(()),
                    },
                    _ = heartbeat.tick() => r#"{"seq":0,"type":"heartbeat","data":{"at":0}}"#.to_string(),
                };
                ws.send(Message::text(out))
                    .await
                    .map_err(std::io::Error::other)?;
            }
        }
        // A plain GET: consume the head, answer with the file.
        let end = head.find("\r\n\r\n").map_or(head.len(), |i| i + 4);
        let mut discard = vec![0; end];
        stream.read_exact(&mut discard).await?;
        let path = target
            .split('?')
            .next()
            .unwrap_or("/")
            .trim_start_matches('/');
        let path = if path.is_empty() { "index.html" } else { path };
        let file = (!path.contains(".."))
            .then(|| std::fs::read(dist.join(path)).ok())
            .flatten();
        let (status, body, kind) = match file {
            Some(body) => ("200 OK", body, content_type(path)),
            None => ("404 Not Found", b"not found".to_vec(), "text/plain"),
        };
        let head = format!(
            "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(&body).await?;
        stream.shutdown().await
    }

    fn content_type(path: &str) -> &'static str {
        match path.rsplit('.').next() {
            Some("html") => "text/html; charset=utf-8",
            Some("js") => "text/javascript",
            Some("wasm") => "application/wasm",
            Some("css") => "text/css",
            Some("svg") => "image/svg+xml",
            _ => "application/octet-stream",
        }
    }
}

/// The folder `make embed` writes (`WATCHLIFE_EMBED`, else `embed/` in the
/// workspace): the replay page as a static host serves it.
pub fn embed_folder() -> std::path::PathBuf {
    let dir = std::env::var_os("WATCHLIFE_EMBED")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| crate::workspace().join("embed"));
    assert!(
        dir.join("embed.html").is_file(),
        "{} has no embed.html: run `make embed` first (make test does)",
        dir.display()
    );
    dir
}
