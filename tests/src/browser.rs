//! Headless Chromium driven through chromedriver, cleaned up on drop.

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
        caps.insert(
            "goog:chromeOptions".into(),
            serde_json::json!({ "args": args, "binary": "/usr/bin/chromium" }),
        );
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

    /// The value of a JavaScript expression.
    pub async fn eval(&self, expr: &str) -> serde_json::Value {
        self.client
            .execute(&format!("return ({expr});"), vec![])
            .await
            .unwrap_or_else(|e| panic!("evaluating {expr:?}: {e}"))
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

    /// Saves a PNG screenshot.
    pub async fn screenshot(&self, path: &std::path::Path) {
        let png = self.client.screenshot().await.expect("screenshot");
        std::fs::write(path, png).expect("write screenshot");
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
