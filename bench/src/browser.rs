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
use crate::scenario::{Scenario, stopped_early};
use crate::stats::{Spread, count, micros, num};
use fantoccini::{Client, ClientBuilder};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long frames are counted.
const COUNT_FOR: Duration = Duration::from_secs(5);
/// How long the bridge's output is counted when choosing the demo's rate.
const CALIBRATE_FOR: Duration = Duration::from_secs(3);
/// Attempts at finding the demo rate that makes the bridge publish a target
/// number of frames a second.
const CALIBRATE_TRIES: usize = 5;
/// A rate is close enough when the bridge publishes this share of the
/// target or more…
const CALIBRATE_UNDER: f64 = 0.95;
/// …and at most this share: above, a lower rate is tried.
const CALIBRATE_OVER: f64 = 1.15;
/// Times a measurement is made again at a higher rate when the page
/// received fewer frames than wanted.
const RAISES: usize = 2;
/// How much more than the shortfall a raise asks for: the demo's output
/// does not grow in proportion to its rate.
const RAISE_MARGIN: f64 = 1.05;
/// The demo's highest rate (`watchlife --demo-rate`).
const MAX_DEMO_RATE: f64 = 10_000.0;
/// How long the page may take to connect.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
const CHROMIUM: &str = "/usr/bin/chromium";
/// The browser window: tall enough for the whole page, so that every panel
/// draws (a shorter one would leave the object table and the event log out
/// of view, and cheaper).
const WINDOW: (u32, u32) = (1280, 1800);

#[derive(Debug, Clone)]
pub struct Config {
    pub runs: usize,
    pub watchlife: PathBuf,
    /// Frames per second the page should receive: the demo's rate is chosen
    /// to make the bridge publish about that many.
    pub targets: Vec<u32>,
}

#[derive(Default)]
pub struct Figures {
    /// The demo rate chosen for the target.
    pub rate: u32,
    pub first_paint: Spread,
    pub fps: Spread,
    pub worst_frame: Spread,
    pub received: Spread,
    pub resyncs: Spread,
}

impl Figures {
    /// Adds one run's measurement.
    pub fn add(&mut self, m: &Measured) {
        self.first_paint.push(m.first_paint_ms * 1000.0);
        self.fps.push(m.fps);
        self.worst_frame.push(m.worst_frame_ms * 1000.0);
        self.received.push(m.received_per_second);
        self.resyncs.push(m.resyncs_per_minute);
    }
}

/// The headers of a [`frames_table`] that differ between the sections
/// that draw one.
pub struct FramesHeaders {
    /// What a row's target counts ("frames per second wanted").
    pub wanted: &'static str,
    /// Whether the page's resyncs have a column (where it can fall behind).
    pub resyncs: bool,
    pub fps: &'static str,
    pub first_paint: &'static str,
}

/// A row per target: the demo rate chosen, what the page received, its
/// frames per second, its longest frame and its first paint.
pub fn frames_table(headers: &FramesHeaders, targets: &[u32], figures: &[Figures]) -> Table {
    let mut columns = vec![
        headers.wanted,
        "demo changes/s chosen",
        "frames the page received per second",
    ];
    if headers.resyncs {
        columns.push("resyncs per minute (the page fell behind)");
    }
    columns.extend([headers.fps, "longest frame", headers.first_paint]);
    let mut table = Table::new("", &columns);
    for (f, target) in figures.iter().zip(targets) {
        let mut cells = vec![
            count(*target as usize),
            count(f.rate as usize),
            f.received.show(num),
        ];
        if headers.resyncs {
            cells.push(f.resyncs.show(num));
        }
        cells.extend([
            f.fps.show(num),
            f.worst_frame.show(micros),
            f.first_paint.show(micros),
        ]);
        table.row(cells);
    }
    table
}

/// What the runs found, or the programs missing to measure anything.
pub enum Gathered {
    Missing(Vec<&'static str>),
    Measured {
        /// One entry per frame rate of [`Config::targets`].
        figures: Vec<Figures>,
        /// Why the runs stopped early, if they did.
        failure: Option<String>,
    },
}

impl Scenario for Config {
    type Figures = Gathered;

    fn measure(&self) -> Gathered {
        let missing = missing_programs();
        if !missing.is_empty() {
            return Gathered::Missing(missing);
        }
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        let mut figures: Vec<Figures> = self.targets.iter().map(|_| Figures::default()).collect();
        let mut failure = None;
        for (f, target) in figures.iter_mut().zip(&self.targets) {
            match runtime.block_on(calibrate(self, *target)) {
                Ok(rate) => f.rate = rate,
                Err(e) => failure = Some(e),
            }
        }
        if failure.is_none() {
            failure = self.drive(&runtime, &mut figures).err();
        }
        Gathered::Measured { figures, failure }
    }

    fn report(&self, gathered: Gathered, report: &mut Report, seconds: f64) {
        let (figures, failure) = match gathered {
            Gathered::Missing(missing) => {
                report.not_measured.push(format!(
                    "**The browser** (first paint, frames per second): {} not installed \
                     (`make test` installs them).",
                    missing.join(" and ")
                ));
                return;
            }
            Gathered::Measured { figures, failure } => (figures, failure),
        };
        let mut notes = vec![
            "Budgets: 60 frames per second while receiving 5,000 events per second, and first \
             paint under one second on loopback. Headless Chromium draws without a display and \
             shares the two cores with `watchlife` and its demo, so its frame rate is a lower \
             bound of what a desktop browser would do. The window is tall enough to show the \
             whole page, every panel drawing at once."
                .to_string(),
        ];
        notes.extend(stopped_early(failure.as_deref()));
        let summary = figures
            .iter()
            .map(|f| {
                format!(
                    "demo at {} changes/s: {} frames/s received, page at {} fps (longest frame {}), first paint {}",
                    count(f.rate as usize),
                    num(f.received.median()),
                    num(f.fps.median()),
                    micros(f.worst_frame.median()),
                    micros(f.first_paint.median())
                )
            })
            .collect();
        report.sections.push(Section {
            title: "Browser app: frames per second under load, first paint".into(),
            method: self.method(),
            tables: vec![self.table(&figures)],
            notes,
            summary,
            seconds,
        });
    }
}

impl Config {
    /// Every run at each calibrated rate; stops at the first failure.
    fn drive(
        &self,
        runtime: &tokio::runtime::Runtime,
        figures: &mut [Figures],
    ) -> Result<(), String> {
        for run in 0..self.runs {
            for (f, target) in figures.iter_mut().zip(&self.targets) {
                progress!(
                    "browser: run {}/{}, demo at {} changes/s",
                    run + 1,
                    self.runs,
                    f.rate
                );
                let m = runtime
                    .block_on(measure_at(self, &mut f.rate, *target))
                    .inspect_err(|e| progress!("browser failed: {e}"))?;
                f.add(&m);
            }
        }
        Ok(())
    }

    fn table(&self, figures: &[Figures]) -> Table {
        let headers = FramesHeaders {
            wanted: "frames per second wanted",
            resyncs: true,
            fps: "page frames per second",
            first_paint: "first paint",
        };
        frames_table(&headers, &self.targets, figures)
    }

    fn method(&self) -> String {
        format!(
            "For each number of frames per second wanted, the demo's rate is chosen first: \
             `watchlife --demo --demo-rate N` runs alone while its published frames are counted \
             for {} s, and N is scaled until the bridge publishes about that many (a change of \
             the demo's story sets off a varying number of events). Then `watchlife --demo \
             --demo-rate N` serves the app; a fresh headless Chromium \
             (through chromedriver, {}×{}) opens it and waits until the link is connected. \
             First paint is the page's `first-contentful-paint`. Then, after two seconds, \
             `requestAnimationFrame` callbacks are counted for {} s. When the page received \
             fewer frames than wanted (the page's own load slows the demo), N is raised \
             and the run measured again, up to {} times. {} runs.",
            CALIBRATE_FOR.as_secs(),
            WINDOW.0,
            WINDOW.1,
            COUNT_FOR.as_secs(),
            RAISES,
            self.runs
        )
    }
}

/// The demo rate at which the bridge publishes about `target` frames a
/// second on this machine: the lowest rate tried that reached it, or the
/// one that came closest. The demo's output does not grow in proportion to
/// its rate, so each try interpolates between the closest tries below and
/// above.
pub async fn calibrate(config: &Config, target: u32) -> Result<u32, String> {
    let target = f64::from(target);
    let mut tried: Vec<(f64, f64)> = Vec::new();
    let mut rate = target.min(MAX_DEMO_RATE);
    for _ in 0..CALIBRATE_TRIES {
        let published = published_per_second(config, rate.round() as u32).await?;
        progress!("browser: demo at {rate:.0} changes/s publishes {published:.0} frames/s");
        tried.push((rate, published));
        let below = tried
            .iter()
            .filter(|t| t.1 < target)
            .max_by(|a, b| a.0.total_cmp(&b.0));
        let above = tried
            .iter()
            .filter(|t| t.1 >= target)
            .min_by(|a, b| a.0.total_cmp(&b.0));
        rate = match (below, above) {
            (_, Some(a)) if a.1 <= target * CALIBRATE_OVER => break,
            (Some(b), Some(a)) => b.0 + (a.0 - b.0) * (target - b.1) / (a.1 - b.1),
            (Some(b), None) if b.0 >= MAX_DEMO_RATE => break,
            (Some(b), None) => (b.0 * target / b.1.max(1.0)).min(MAX_DEMO_RATE),
            (None, Some(a)) => a.0 * target / a.1,
            (None, None) => break,
        };
    }
    let enough = tried
        .iter()
        .filter(|t| t.1 >= target * CALIBRATE_UNDER)
        .min_by(|a, b| a.0.total_cmp(&b.0));
    let closest = tried.iter().max_by(|a, b| a.1.total_cmp(&b.1));
    enough
        .or(closest)
        .map(|t| t.0.round() as u32)
        .ok_or_else(|| "no demo rate could be tried".to_string())
}

/// Frames the bridge publishes per second with the demo at `rate`, no viewer.
async fn published_per_second(config: &Config, rate: u32) -> Result<f64, String> {
    let rate = rate.to_string();
    let bridge = Watchlife::start_demo(&config.watchlife, &rate, &[])?;
    let published = || async {
        get(bridge.addr, "/metrics")
            .await
            .and_then(|m| metric(&m, "watchlife_frames_published_total"))
            .ok_or_else(|| "no /metrics from the bridge".to_string())
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = published().await?;
    let t0 = Instant::now();
    tokio::time::sleep(CALIBRATE_FOR).await;
    let after = published().await?;
    Ok((after - before) / t0.elapsed().as_secs_f64())
}

/// [`measure`] at `rate`, raised (and measured again) while the page receives
/// fewer than `target` frames a second: the page's own load slows the demo
/// below what it publishes alone. The rate stays raised for the next runs.
async fn measure_at(config: &Config, rate: &mut u32, target: u32) -> Result<Measured, String> {
    let mut measured = measure(config, *rate).await?;
    for _ in 0..RAISES {
        let short = f64::from(target) / measured.received_per_second.max(1.0);
        if short <= 1.0 || f64::from(*rate) >= MAX_DEMO_RATE {
            break;
        }
        *rate = (f64::from(*rate) * short * RAISE_MARGIN)
            .min(MAX_DEMO_RATE)
            .round() as u32;
        progress!(
            "browser: the page received {:.0} frames/s; again with the demo at {rate} changes/s",
            measured.received_per_second
        );
        measured = measure(config, *rate).await?;
    }
    Ok(measured)
}

/// One measurement of a page: first paint, frames, and what it received.
pub struct Measured {
    pub first_paint_ms: f64,
    pub fps: f64,
    pub worst_frame_ms: f64,
    pub received_per_second: f64,
    pub resyncs_per_minute: f64,
}

async fn measure(config: &Config, rate: u32) -> Result<Measured, String> {
    let rate_arg = rate.to_string();
    let bridge = Watchlife::start_demo(&config.watchlife, &rate_arg, &[])?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let driver = Driver::start()?;
    let client = driver.session().await?;
    progress!("browser: Chromium is up");
    let result = measure_page(&client, bridge.addr).await;
    progress!("browser: counted");
    let _ = client.close().await;
    drop(driver);
    drop(bridge);
    result
}

/// Opens the app served at `addr` in `client`, waits until it is connected,
/// then counts its animation frames and the bridge's frames sent meanwhile.
pub async fn measure_page(client: &Client, addr: std::net::SocketAddr) -> Result<Measured, String> {
    client
        .goto(&format!("http://{addr}/"))
        .await
        .map_err(|e| format!("opening the app: {e}"))?;
    wait_connected(client).await?;
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
        get(addr, "/metrics")
            .await
            .and_then(|m| metric(&m, "watchlife_frames_sent_total"))
            // Unanswered (a bridge too busy): not a zero.
            .unwrap_or(f64::NAN)
    };
    let resyncs = || async {
        get(addr, "/metrics")
            .await
            .map(|m| crate::process::metric_sum(&m, "watchlife_resyncs_total"))
            .unwrap_or(f64::NAN)
    };
    let resyncs0 = resyncs().await;
    let sent0 = sent().await;
    let t0 = Instant::now();
    let counted = count_animation_frames(client).await?;
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

/// `requestAnimationFrame` callbacks for [`COUNT_FOR`]: the frames, the
/// milliseconds they took, and the longest frame's.
pub async fn count_animation_frames(client: &Client) -> Result<serde_json::Value, String> {
    client
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
        .map_err(|e| e.to_string())
}

/// Runs a DevTools command in `client`'s session (see `watchlife_tests::cdp`).
pub async fn cdp(client: &Client, cmd: &str, params: serde_json::Value) -> Result<(), String> {
    let cmd = watchlife_tests::cdp::Cdp {
        cmd: cmd.into(),
        params,
    };
    client
        .issue_cmd(cmd)
        .await
        .map(drop)
        .map_err(|e| format!("a DevTools command: {e}"))
}

/// Chromium and chromedriver, by name, when they are not installed.
pub fn missing_programs() -> Vec<&'static str> {
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

    /// chromedriver's process id: the Chromium it starts is below it.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A session in a [`WINDOW`]-sized window.
    pub async fn session(&self) -> Result<Client, String> {
        self.session_sized(WINDOW).await
    }

    /// A session in a `window.0`×`window.1` window.
    pub async fn session_sized(&self, window: (u32, u32)) -> Result<Client, String> {
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            serde_json::json!({
                "binary": CHROMIUM,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", "--disable-dev-shm-usage",
                    format!("--window-size={},{}", window.0, window.1),
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
