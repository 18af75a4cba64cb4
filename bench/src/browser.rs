//! The browser app under load, in headless Chromium: first paint, and frames
//! per second while the page receives the demo's events.
//!
//! `watchlife --demo --demo-rate N` serves the app; chromedriver opens it in
//! a fresh headless Chromium. First paint is the page's own
//! `first-contentful-paint` entry. Frames are counted with
//! `requestAnimationFrame` for [`COUNT_FOR`], with the longest gap between two
//! frames beside the rate; the frames the bridge wrote to the page meanwhile
//! come from its `/metrics`.

use crate::process::{Watchlife, get, metric};
use crate::report::{Report, Section, Table};
use crate::stats::{Spread, count, micros, num};
use fantoccini::{Client, ClientBuilder};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long frames are counted.
const COUNT_FOR: Duration = Duration::from_secs(5);
/// How long the page may take to connect.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
const CHROMIUM: &str = "/usr/bin/chromium";

#[derive(Debug, Clone)]
pub struct Config {
    pub runs: usize,
    pub watchlife: PathBuf,
    /// Demo changes per second to measure at.
    pub rates: Vec<u32>,
}

#[derive(Default)]
struct Figures {
    first_paint: Spread,
    fps: Spread,
    worst_frame: Spread,
    received: Spread,
    resyncs: Spread,
}

pub fn run(report: &mut Report, config: &Config) {
    let started = Instant::now();
    let missing = missing_programs();
    if !missing.is_empty() {
        report.not_measured.push(format!(
            "**The browser** (first paint, frames per second): {} not installed \
             (`make test` installs them).",
            missing.join(" and ")
        ));
        return;
    }
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let mut figures: Vec<Figures> = config.rates.iter().map(|_| Figures::default()).collect();
    let mut failure = None;
    'runs: for run in 0..config.runs {
        for (i, rate) in config.rates.iter().enumerate() {
            progress!("browser: run {}/{}, {rate} changes/s", run + 1, config.runs);
            match runtime.block_on(measure(config, *rate)) {
                Ok(m) => {
                    let f = &mut figures[i];
                    f.first_paint.push(m.first_paint_ms * 1000.0);
                    f.fps.push(m.fps);
                    f.worst_frame.push(m.worst_frame_ms * 1000.0);
                    f.received.push(m.received_per_second);
                    f.resyncs.push(m.resyncs_per_minute);
                }
                Err(e) => {
                    progress!("browser failed: {e}");
                    failure = Some(e);
                    break 'runs;
                }
            }
        }
    }
    let mut table = Table::new(
        "",
        &[
            "demo changes/s",
            "frames the page received per second",
            "resyncs per minute (the page fell behind)",
            "page frames per second",
            "longest frame",
            "first paint",
        ],
    );
    for (f, rate) in figures.iter().zip(&config.rates) {
        table.row(vec![
            count(*rate as usize),
            f.received.show(num),
            f.resyncs.show(num),
            f.fps.show(num),
            f.worst_frame.show(micros),
            f.first_paint.show(micros),
        ]);
    }
    let mut notes = vec![
        "Budgets: 60 frames per second while receiving 5,000 events per second, and first \
         paint under one second on loopback. Headless Chromium draws without a display and \
         shares the two cores with `watchlife` and its demo, so its frame rate is a lower \
         bound of what a desktop browser would do."
            .to_string(),
    ];
    if let Some(e) = failure {
        notes.push(format!("The measurement stopped early: {e}."));
    }
    let summary = figures
        .iter()
        .zip(&config.rates)
        .map(|(f, rate)| {
            format!(
                "at {} changes/s: {} frames/s received, page at {} fps (longest frame {}), first paint {}",
                count(*rate as usize),
                num(f.received.median()),
                num(f.fps.median()),
                micros(f.worst_frame.median()),
                micros(f.first_paint.median())
            )
        })
        .collect();
    report.sections.push(Section {
        title: "Browser app: frames per second under load, first paint".into(),
        method: format!(
            "`watchlife --demo --demo-rate N` serves the app; a fresh headless Chromium \
             (through chromedriver, 1280×800) opens it and waits until the link is connected. \
             First paint is the page's `first-contentful-paint`. Then, after two seconds, \
             `requestAnimationFrame` callbacks are counted for {} s. {} runs.",
            COUNT_FOR.as_secs(),
            config.runs
        ),
        tables: vec![table],
        notes,
        summary,
        seconds: started.elapsed().as_secs_f64(),
    });
}

struct Measured {
    first_paint_ms: f64,
    fps: f64,
    worst_frame_ms: f64,
    received_per_second: f64,
    resyncs_per_minute: f64,
}

async fn measure(config: &Config, rate: u32) -> Result<Measured, String> {
    let rate_arg = rate.to_string();
    let bridge = Watchlife::start(
        &config.watchlife,
        &[
            "--demo",
            "--demo-rate",
            &rate_arg,
            "--demo-api",
            "127.0.0.1:0",
        ],
    )?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let driver = Driver::start()?;
    let client = driver.session().await?;
    progress!("browser: Chromium is up");
    let result = async {
        client
            .goto(&format!("http://{}/", bridge.addr))
            .await
            .map_err(|e| format!("opening the app: {e}"))?;
        wait_connected(&client).await?;
        progress!("browser: the page is connected");
        let first_paint = client
            .execute(
                "const p = performance.getEntriesByName('first-contentful-paint')[0]; \
                 return p ? p.startTime : null;",
                vec![],
            )
            .await
            .map_err(|e| e.to_string())?
            .as_f64()
            .unwrap_or(f64::NAN);
        tokio::time::sleep(Duration::from_secs(2)).await;
        let sent = || async {
            get(bridge.addr, "/metrics")
                .await
                .and_then(|m| metric(&m, "watchlife_frames_sent_total"))
                // Unanswered (a bridge too busy): not a zero.
                .unwrap_or(f64::NAN)
        };
        let resyncs = || async {
            get(bridge.addr, "/metrics")
                .await
                .map(|m| crate::process::metric_sum(&m, "watchlife_resyncs_total"))
                .unwrap_or(f64::NAN)
        };
        let resyncs0 = resyncs().await;
        let sent0 = sent().await;
        let t0 = Instant::now();
        let counted = client
            .execute_async(
                &format!(
                    "const done = arguments[arguments.length - 1]; \
                     const start = performance.now(); let last = start, frames = 0, worst = 0; \
                     function tick(t) {{ frames++; worst = Math.max(worst, t - last); last = t; \
                       if (t - start < {}) requestAnimationFrame(tick); \
                       else done([frames, t - start, worst]); }} \
                     requestAnimationFrame(tick);",
                    COUNT_FOR.as_millis()
                ),
                vec![],
            )
            .await
            .map_err(|e| e.to_string())?;
        let seconds = t0.elapsed().as_secs_f64();
        let received = (sent().await - sent0) / seconds;
        let resynced = (resyncs().await - resyncs0) / seconds * 60.0;
        let v = |i: usize| counted.get(i).and_then(|x| x.as_f64()).unwrap_or(f64::NAN);
        Ok(Measured {
            first_paint_ms: first_paint,
            fps: v(0) / v(1) * 1000.0,
            worst_frame_ms: v(2),
            received_per_second: received,
            resyncs_per_minute: resynced,
        })
    }
    .await;
    progress!("browser: counted");
    let _ = client.close().await;
    drop(driver);
    drop(bridge);
    result
}

/// Chromium and chromedriver, by name, when they are not installed.
fn missing_programs() -> Vec<&'static str> {
    [("chromedriver", "chromedriver"), (CHROMIUM, "chromium")]
        .into_iter()
        .filter(|(program, _)| {
            Command::new(program)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .map_or(true, |s| !s.success())
        })
        .map(|(_, name)| name)
        .collect()
}

/// Whether Chromium and chromedriver are both installed.
pub fn installed() -> bool {
    missing_programs().is_empty()
}

/// Waits until the app in `client` says its link is connected.
pub async fn wait_connected(client: &Client) -> Result<(), String> {
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    loop {
        let connected = client
            .execute(
                "return !!document.querySelector('#link[data-link=connected]');",
                vec![],
            )
            .await
            .map_err(|e| e.to_string())?;
        if connected.as_bool() == Some(true) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err("the page did not connect".to_string());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// chromedriver on a free port, in a process group of its own so that the
/// Chromium it starts goes with it.
pub struct Driver {
    child: Child,
    port: u16,
    profile: PathBuf,
}

impl Driver {
    pub fn start() -> Result<Driver, String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let child = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| format!("chromedriver: {e}"))?;
        let profile = std::env::temp_dir().join(format!("watchlife-bench-chromium-{}", child.id()));
        Ok(Driver {
            child,
            port,
            profile,
        })
    }

    pub async fn session(&self) -> Result<Client, String> {
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            serde_json::json!({
                "binary": CHROMIUM,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", "--disable-dev-shm-usage", "--window-size=1280,800",
                    format!("--user-data-dir={}", self.profile.display()),
                ],
            }),
        );
        let url = format!("http://127.0.0.1:{}", self.port);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(caps.clone())
                .connect(&url)
                .await
            {
                Ok(client) => return Ok(client),
                Err(e) if Instant::now() > deadline => {
                    return Err(format!("no chromedriver session: {e}"));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // The whole group: chromedriver and the Chromium it started.
        let _ = Command::new("kill")
            .args(["-s", "KILL", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}
