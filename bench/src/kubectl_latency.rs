//! Event latency on a real kube-apiserver, side by side: the same writes seen
//! by `kubectl get -w`, by watchlife's Reflector, by a WebSocket viewer of
//! watchlife, and drawn by the app in headless Chromium.
//!
//! One kube-apiserver v1.20.2 over etcd 3.4 (the tests' harness). Per run,
//! fresh watchers of the `default` namespace's configmaps:
//!
//! - `kubectl get configmaps -w --output-watch-events` printing each event's
//!   type and resourceVersion, its standard output read line by line;
//! - `watchlife --kubeconfig K --resources configmaps --namespace default`,
//!   whose event frames carry the `reflector` stage: when the Reflector
//!   decoded the event;
//! - a WebSocket viewer of that `watchlife` (tokio-tungstenite, in the bench);
//! - the app in headless Chromium at live speed, where a `MutationObserver`
//!   notes when the event's first visible change is drawn: its token, the
//!   line under the lanes that names events shown without one (`data-rvs`),
//!   or its row, whichever comes first (each carries the event's
//!   resourceVersion).
//!
//! Then the bench updates one configmap [`WRITES`] times at [`RATE`] writes/s
//! and, for each write, takes the resourceVersion of its response and the
//! time the response was read. Every watcher's time is measured from that
//! moment, on this machine's one clock. A watcher that saw the event before
//! the response reached the bench counts 0.

use crate::apiserver::Api;
use crate::browser::Driver;
use crate::machine::now_micros;
use crate::process::BridgeRuns;
use crate::process::Watchlife;
use crate::report::{Report, Section, Table};
use crate::scenario::{Scenario, stopped_early};
use crate::stats::{Histogram, Spread, micros, num, share};
use futures_util::StreamExt;
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;
use watchlife_protocol::{FrameBody, ServerFrame, Stage};

/// Writes per run.
const WRITES: usize = 200;
/// Writes per second: slow enough that every watcher, the page included,
/// is idle when the next write comes, so each latency is one event's alone.
const RATE: f64 = 10.0;
/// How long the watchers get after the last write.
const DRAIN: Duration = Duration::from_secs(3);
/// The page's live speed (`?speed=4`): tokens follow the measured times, and
/// an event finding no free lane is shown at once without one. Slower speeds
/// hold events for their tokens on purpose.
const LIVE_SPEED: usize = 4;
/// The configmap the bench updates.
const NAME: &str = "bench-latency";
const PATH: &str = "/api/v1/namespaces/default/configmaps";

/// The watchers, in the order of the table.
const WATCHERS: [&str; 4] = [
    "`kubectl get -w` prints the line",
    "watchlife's Reflector decodes the event",
    "a WebSocket viewer of watchlife reads the frame",
    "the app in headless Chromium (live speed) draws the event's first change",
];

#[derive(Debug, Clone)]
pub struct Config {
    pub bridge: BridgeRuns,
}

/// Per watcher, over the runs.
#[derive(Default)]
pub struct Figures {
    p50: Spread,
    p99: Spread,
    sent_p50: Spread,
    sent_p99: Spread,
    seen: Spread,
    early: Spread,
    all: Histogram,
}

/// What the runs found.
pub struct Gathered {
    /// One entry per watcher of [`WATCHERS`].
    figures: Vec<Figures>,
    /// Whether Chromium and chromedriver are here to measure the page.
    browser: bool,
    /// Why the runs stopped early, if they did.
    failure: Option<String>,
}

impl Scenario for Config {
    type Figures = Gathered;

    fn measure(&self) -> Gathered {
        let mut gathered = Gathered {
            figures: WATCHERS.iter().map(|_| Figures::default()).collect(),
            browser: crate::browser::installed(),
            failure: None,
        };
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        runtime.block_on(async {
            progress!("kubectl latency: starting etcd and kube-apiserver");
            let cluster = watchlife_tests::real_cluster::RealCluster::start().await;
            let api = Api::tls(cluster.base_url(), cluster.token(), cluster.ca_cert());
            for run in 0..self.bridge.runs {
                progress!("kubectl latency: run {}/{}", run + 1, self.bridge.runs);
                match measure(self, &api, cluster.kubeconfig(), gathered.browser).await {
                    Ok(seen) => gather(&mut gathered.figures, seen),
                    Err(e) => {
                        progress!("kubectl latency failed: {e}");
                        gathered.failure = Some(e);
                        break;
                    }
                }
            }
        });
        gathered
    }

    fn report(&self, gathered: Gathered, report: &mut Report, seconds: f64) {
        let figures = &gathered.figures;
        let table = table(figures, report);
        headlines(figures, report);
        let summary = figures
            .iter()
            .zip(WATCHERS)
            .filter(|(f, _)| !f.p50.runs.is_empty())
            .map(|(f, name)| {
                format!(
                    "{name}: p50 {} p99 {}",
                    micros(f.p50.median()),
                    micros(f.p99.median())
                )
            })
            .collect();
        report.sections.push(Section {
            title: "Event latency on a real kube-apiserver: kubectl beside watchlife".into(),
            method: self.method(),
            tables: vec![table],
            notes: notes(&gathered),
            summary,
            seconds,
        });
    }
}

/// Adds one run's latencies, watcher by watcher.
fn gather(figures: &mut [Figures], seen: [Option<Latencies>; 4]) {
    for (f, latencies) in figures.iter_mut().zip(seen) {
        let Some(latencies) = latencies else { continue };
        let answered = Histogram::new();
        let sent = Histogram::new();
        for (&a, &s) in latencies.answered.iter().zip(&latencies.sent) {
            answered.record(a);
            sent.record(s);
        }
        f.p50.push(answered.quantile_or_nan(0.5));
        f.p99.push(answered.quantile_or_nan(0.99));
        f.sent_p50.push(sent.quantile_or_nan(0.5));
        f.sent_p99.push(sent.quantile_or_nan(0.99));
        f.seen.push(latencies.answered.len() as f64 / WRITES as f64);
        f.early.push(latencies.early as f64);
        f.all.merge(&sent);
    }
}

/// One row per watcher; the latencies from the request go to the plot.
fn table(figures: &[Figures], report: &mut Report) -> Table {
    let mut table = Table::new(
        "",
        &[
            "until",
            "from the write's response: p50",
            "p99",
            "seen before the response (counted 0)",
            "from the write's request: p50",
            "p99",
            "writes seen",
        ],
    );
    for (f, name) in figures.iter().zip(WATCHERS) {
        if f.p50.runs.is_empty() {
            let mut row = vec![name.to_string(), "not measured".into()];
            row.resize(7, String::new());
            table.row(row);
            continue;
        }
        table.row(vec![
            name.into(),
            f.p50.show(micros),
            f.p99.show(micros),
            f.early.show(num),
            f.sent_p50.show(micros),
            f.sent_p99.show(micros),
            f.seen.show(share),
        ]);
        report.series(
            "real kube-apiserver: write request → seen",
            name,
            f.all.shape(),
        );
    }
    table
}

/// A WebSocket viewer and the page, each beside kubectl.
fn headlines(figures: &[Figures], report: &mut Report) {
    let kubectl = &figures[0];
    for (f, what) in [
        (&figures[2], "a WebSocket viewer"),
        (&figures[3], "the page"),
    ] {
        // From the write's request: from its response, kubectl's median is
        // often 0 (it printed the line first), and a ratio to 0 says nothing.
        if !f.sent_p50.runs.is_empty() && !kubectl.sent_p50.runs.is_empty() {
            report.ratio_headline(
                format!(
                    "real kube-apiserver: p50 latency from the write's request to {what} of \
                     watchlife ÷ to `kubectl get -w`"
                ),
                &f.sent_p50,
                &kubectl.sent_p50,
            );
        }
    }
    let page = &figures[3];
    if !page.sent_p99.runs.is_empty() && !kubectl.sent_p99.runs.is_empty() {
        report.headline(
            "real kube-apiserver: write → the page's first pixel, p99 less `kubectl get -w`'s \
             p99 (goal ≤ 20 ms)",
            micros(page.sent_p99.median() - kubectl.sent_p99.median()),
        );
    }
}

fn notes(gathered: &Gathered) -> Vec<String> {
    let figures = &gathered.figures;
    let kubectl = &figures[0];
    let mut notes = vec![format!(
        "**What watchlife adds.** kubectl decodes the event and prints it. watchlife's \
         Reflector decodes it too (the Reflector row is kubectl's work, in Rust), then the \
         event goes through the informer's FIFO, Indexer, handlers and workqueue, is encoded \
         once for every viewer, and crosses one more WebSocket hop (the page takes frames in \
         batches: while frames keep coming, one write every 16 ms at most; compressed, and \
         decompressed by the browser's own stream). At live speed the page draws the event's \
         first change in the first animation frame after the frame is read: its token enters \
         the pipeline, or, with no lane free, the line under the lanes names it (the event log, \
         redrawn at most ten times a second, may show the row later). At the median, from the \
         write's request, a viewer of watchlife gets the event {} after kubectl prints it, and \
         the page draws it {} after; at the 99th percentile, {} after (the goal is 20 ms).",
        micros(figures[2].sent_p50.median() - kubectl.sent_p50.median()),
        micros(figures[3].sent_p50.median() - kubectl.sent_p50.median()),
        micros(figures[3].sent_p99.median() - kubectl.sent_p99.median())
    )];
    if !gathered.browser {
        notes.push("Chromium or chromedriver is not installed: the page was not measured.".into());
    }
    notes.extend(stopped_early(gathered.failure.as_deref()));
    notes
}

impl Config {
    fn method(&self) -> String {
        format!(
            "kube-apiserver v1.20.2 over etcd 3.4 on loopback (TLS, a bearer token). Per run, \
             fresh watchers of the `default` namespace's configmaps: `kubectl get configmaps -w \
             --output-watch-events -o jsonpath=…` (kubectl {}) read line by line; \
             `{} --kubeconfig K --resources configmaps --namespace default` and a WebSocket \
             viewer of it; the app in headless Chromium at live speed (`?speed={LIVE_SPEED}`), \
             where a `MutationObserver` notes when the event's first change is drawn (its \
             token, the line under the lanes that names events shown without one, or its row, \
             whichever is first). The bench then updates one configmap {WRITES} \
             times at {RATE} writes/s; each watcher's time is measured from the moment the \
             write's response (with its resourceVersion) was read, as asked, and, since a \
             watch often delivers the event before the response reaches the writer, also \
             from the moment the request was sent. {} runs.",
            kubectl_version(),
            self.bridge.watchlife.display(),
            self.bridge.runs
        )
    }
}

/// One watcher's latencies in a run (µs) from each write's response and
/// from its request, and how many were seen before the response.
struct Latencies {
    answered: Vec<u64>,
    sent: Vec<u64>,
    early: usize,
}

/// What each watcher saw: resourceVersion → when (µs since the epoch).
type Seen = Arc<Mutex<HashMap<String, u64>>>;

async fn measure(
    config: &Config,
    api: &Api,
    kubeconfig: &Path,
    browser: bool,
) -> Result<[Option<Latencies>; 4], String> {
    let object = |n: usize| crate::objects::numbered_configmap(NAME, n as u64);
    // The object exists before anyone watches: its first write is not measured.
    let (code, _) = api.request("POST", PATH, Some(object(0))).await?;
    if code != 201 && code != 409 {
        return Err(format!("creating the configmap was answered {code}"));
    }

    let kubectl = Kubectl::start(kubeconfig)?;
    let kubeconfig_arg = kubeconfig.display().to_string();
    let bridge = Watchlife::start_on_configmaps(
        &config.bridge.watchlife,
        &kubeconfig_arg,
        &["--namespace", "default"],
    )?;
    let reflector: Seen = Default::default();
    let viewer: Seen = Default::default();
    let reading = tokio::spawn(view(bridge.ws_url(), reflector.clone(), viewer.clone()));
    let page = if browser {
        Some(Page::open(&bridge).await?)
    } else {
        None
    };
    // Every watcher has listed and is watching.
    tokio::time::sleep(Duration::from_secs(2)).await;

    let written = write_all(api).await?;
    tokio::time::sleep(DRAIN).await;
    reading.abort();
    let drawn = match &page {
        Some(page) => Some(page.seen().await?),
        None => None,
    };
    let printed = kubectl.seen.lock().expect("not poisoned").clone();
    let latencies = |seen: &HashMap<String, u64>| latencies(&written, seen);
    let result = [
        Some(latencies(&printed)),
        Some(latencies(&reflector.lock().expect("not poisoned"))),
        Some(latencies(&viewer.lock().expect("not poisoned"))),
        drawn.as_ref().map(latencies),
    ];
    if let Some(page) = page {
        page.close().await;
    }
    Ok(result)
}

/// One write: its resourceVersion, when its request was sent and when its
/// response was read (µs since the epoch).
type Written = (String, u64, u64);

/// Updates the configmap [`WRITES`] times at [`RATE`] writes/s.
async fn write_all(api: &Api) -> Result<Vec<Written>, String> {
    let mut written = Vec::with_capacity(WRITES);
    let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / RATE));
    for n in 1..=WRITES {
        ticks.tick().await;
        let sent = now_micros();
        let (code, body) = api
            .request(
                "PUT",
                &format!("{PATH}/{NAME}"),
                Some(crate::objects::numbered_configmap(NAME, n as u64)),
            )
            .await?;
        let answered = now_micros();
        if code != 200 {
            return Err(format!("a write was answered {code}"));
        }
        let rv = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v["metadata"]["resourceVersion"].as_str().map(String::from))
            .ok_or("a write's answer has no resourceVersion")?;
        written.push((rv, sent, answered));
    }
    Ok(written)
}

/// One watcher's latencies: each write it `seen`, from its request and its response.
fn latencies(written: &[Written], seen: &HashMap<String, u64>) -> Latencies {
    let mut out = Latencies {
        answered: Vec::new(),
        sent: Vec::new(),
        early: 0,
    };
    for (rv, sent, answered) in written {
        if let Some(&at) = seen.get(rv) {
            out.early += usize::from(at < *answered);
            out.answered.push(at.saturating_sub(*answered));
            out.sent.push(at.saturating_sub(*sent));
        }
    }
    out
}

/// Reads `watchlife`'s stream: when each event frame arrived, and its
/// Reflector stage.
async fn view(url: String, reflector: Seen, viewer: Seen) {
    let Ok((mut ws, _)) = tokio_tungstenite::connect_async(&url).await else {
        return;
    };
    while let Some(Ok(message)) = ws.next().await {
        let now = now_micros();
        let Message::Text(text) = message else {
            continue;
        };
        let Ok(frame) = serde_json::from_str::<ServerFrame>(text.as_str()) else {
            continue;
        };
        if let FrameBody::Event(event) = frame.body {
            if let Some(mark) = event.stages.get(&Stage::Reflector) {
                reflector
                    .lock()
                    .expect("not poisoned")
                    .insert(event.resource_version.clone(), mark.at);
            }
            viewer
                .lock()
                .expect("not poisoned")
                .insert(event.resource_version, now);
        }
    }
}

/// `kubectl get -w`, its lines timed as they are read; killed on drop.
struct Kubectl {
    child: Child,
    seen: Seen,
}

impl Kubectl {
    fn start(kubeconfig: &Path) -> Result<Kubectl, String> {
        let mut child = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args([
                "get",
                "configmaps",
                "--namespace",
                "default",
                "--watch",
                "--output-watch-events",
                "-o",
                "jsonpath={.type} {.object.metadata.resourceVersion}{\"\\n\"}",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run kubectl: {e}"))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let seen: Seen = Default::default();
        let lines = seen.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let now = now_micros();
                if let Some((_, rv)) = line.trim().split_once(' ') {
                    lines
                        .lock()
                        .expect("not poisoned")
                        .entry(rv.to_string())
                        .or_insert(now);
                }
            }
        });
        Ok(Kubectl { child, seen })
    }
}

impl Drop for Kubectl {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn kubectl_version() -> String {
    Command::new("kubectl")
        .args(["version", "--client", "-o", "json"])
        .output()
        .ok()
        .and_then(|o| serde_json::from_slice::<serde_json::Value>(&o.stdout).ok())
        .and_then(|v| v["clientVersion"]["gitVersion"].as_str().map(String::from))
        .unwrap_or_else(|| "of unknown version".into())
}

/// The app in headless Chromium, with an observer that notes when each
/// `data-rv` is first drawn.
struct Page {
    _driver: Driver,
    client: fantoccini::Client,
}

/// Notes, per resourceVersion, when an element carrying it as `data-rv` (or
/// among the names of `data-rvs`) first appears in the page (added, or an
/// existing element given a new one), in µs since the epoch.
const OBSERVER: &str = "window.__drawn = {}; \
    const one = (rv, t) => { if (rv && !(rv in window.__drawn)) window.__drawn[rv] = t; }; \
    const note = (el, t) => { if (!el.dataset) return; one(el.dataset.rv, t); \
      (el.dataset.rvs || '').split(' ').forEach(rv => one(rv, t)); }; \
    new MutationObserver(changes => { \
      const t = Math.round((performance.timeOrigin + performance.now()) * 1000); \
      for (const c of changes) { \
        if (c.type === 'attributes') { note(c.target, t); continue; } \
        for (const n of c.addedNodes) { if (n.nodeType !== 1) continue; \
          note(n, t); n.querySelectorAll('[data-rv],[data-rvs]').forEach(el => note(el, t)); } } \
    }).observe(document.body, {subtree: true, childList: true, attributes: true, \
      attributeFilter: ['data-rv', 'data-rvs']}); \
    return true;";

impl Page {
    async fn open(bridge: &Watchlife) -> Result<Page, String> {
        let driver = Driver::start()?;
        let client = driver.session().await?;
        client
            .goto(&format!("http://{}/?speed={LIVE_SPEED}", bridge.addr))
            .await
            .map_err(|e| format!("opening the app: {e}"))?;
        crate::browser::wait_connected(&client).await?;
        client
            .execute(OBSERVER, vec![])
            .await
            .map_err(|e| format!("installing the observer: {e}"))?;
        Ok(Page {
            _driver: driver,
            client,
        })
    }

    async fn seen(&self) -> Result<HashMap<String, u64>, String> {
        let drawn = self
            .client
            .execute("return window.__drawn;", vec![])
            .await
            .map_err(|e| e.to_string())?;
        Ok(drawn
            .as_object()
            .map(|m| {
                m.iter()
                    .filter_map(|(rv, t)| Some((rv.clone(), t.as_f64()? as u64)))
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn close(self) {
        let _ = self.client.close().await;
    }
}
