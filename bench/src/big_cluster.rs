//! Big cluster: `watchlife` on a real kube-apiserver v1.20.2 holding 10k,
//! 50k and 150k configmaps of about 1 KB of data each, and a crowd of idle
//! viewers.
//!
//! One etcd 3.4 and kube-apiserver v1.20.2 (the tests' harness). The API is
//! far too slow to create 150k objects in a bench, so the bench writes them
//! straight into etcd: a JSON `ConfigMap` under
//! `/registry/configmaps/NAMESPACE/NAME`, with its name, namespace, uid and
//! creationTimestamp, [`PER_TXN`] puts to a transaction and [`TXNS_AT_ONCE`]
//! transactions in flight. kube-apiserver stores protobuf, but reads JSON as
//! well (its storage decoder falls back to the universal deserializer), and
//! fills each object's resourceVersion from the key's revision. The objects
//! spread over [`NAMESPACES`] namespaces, created through the API. Sizes
//! grow from one to the next (each fill adds the missing objects), and
//! kube-apiserver is restarted after each fill, so that its watch cache
//! starts from etcd as on any cluster, and the bench waits until that cache
//! is ready.
//!
//! For each size, a fresh `watchlife --kubeconfig K --resources configmaps`:
//!
//! - **the initial LIST**: from spawning the process until its Reflector
//!   reports the LIST finished (a viewer reading only the Reflector's frames),
//!   and until the hub has published a frame for every listed object
//!   (`watchlife_frames_published_total`);
//! - **memory per object**: the process's `VmRSS` once it is steady after the
//!   LIST, less the `VmRSS` of the same bridge over the empty cluster, divided
//!   by the number of objects;
//! - **a new viewer's opening**: a WebSocket viewer connects; the bench sums
//!   the length of every message until one holds the snapshot frame (a line
//!   whose JSON has `"type":"snapshot"` at its top level: a message may carry
//!   several frames, one per line), and times it from the connect. Nothing
//!   else of the frames is read, so the figure holds for any layout of them;
//! - **the page**: a fresh headless Chromium opens `/`; ready is when the link
//!   says connected (`#link[data-link=connected]`) and the object table counts
//!   every object (`section.objects[data-objects]`), as the browser tests
//!   read them. The renderers' memory is the sum of `VmRSS` of the browser's
//!   processes started with `--type=renderer` (found under chromedriver's
//!   process tree); the tab's own renderer is the one of them with the most
//!   anonymous memory (`RssAnon`), and its `VmRSS` is read against the goal;
//! - **under writes**: a writer patches configmaps through the API at
//!   [`WRITE_RATE`] writes/s for [`WRITE_FOR`], while a WebSocket viewer
//!   counts the frames it receives and the page counts its
//!   `requestAnimationFrame` callbacks.
//!
//! **Idle viewers**: before the fill, over the empty cluster, 1,000 then
//! 10,000 WebSocket viewers connect, read their opening and stay idle; the
//! growth of the bridge's `VmRSS`, divided by the number of viewers. (Over a
//! full cache, each of them would first be sent the whole snapshot: 10,000
//! times some megabytes is the snapshot's cost, not a viewer's.)
//!
//! Sizes: `--big-sizes 10000,50000,150000`; viewers: `--big-viewers
//! 1000,10000` (bounded by the open-files limit: `make bench` raises it).

use crate::apiserver::Api;
use crate::browser::Driver;
use crate::etcd_fill::{PER_TXN, TXNS_AT_ONCE, put_all, settings_text, uid};
use crate::machine::{fd_limit, kib_field, process_tree, rss_bytes, status};
use crate::process::{Watchlife, get, metric};
use crate::report::{Report, Section, Table};
use crate::scenario::Scenario;
use crate::stats::{bytes, count, micros, num, share};
use futures_util::StreamExt;
use serde::Deserialize;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// Namespaces the objects spread over (`big-0` …).
const NAMESPACES: usize = 4;
/// Bytes of data in each configmap, about.
const DATA_BYTES: usize = 1000;
/// How long a LIST, a snapshot or the page may take before the bench gives up.
const TIMEOUT: Duration = Duration::from_secs(300);
/// The writer's pace and duration, for the frames under writes.
const WRITE_RATE: u32 = 100;
const WRITE_FOR: Duration = Duration::from_secs(10);
/// Viewers connecting at once.
const CONNECTING: usize = 64;
/// File descriptors kept free for everything else.
const SPARE_FDS: u64 = 512;
/// The goals the figures are read against.
const GOAL_RSS_PER_OBJECT: f64 = 2048.0;
const GOAL_OPENING_BYTES: f64 = 14.0 * 1024.0 * 1024.0;
const GOAL_OPENING_SECONDS: f64 = 1.0;
const GOAL_RENDERER_BYTES: f64 = 300e6;
const GOAL_IDLE_VIEWER: f64 = 16.0 * 1024.0;

#[derive(Debug, Clone)]
pub struct Config {
    pub watchlife: PathBuf,
    pub sizes: Vec<usize>,
    pub viewers: Vec<usize>,
}

/// What one size measured; `None` where that part was not measured.
#[derive(Debug, Default, Clone)]
pub struct Figures {
    objects: usize,
    fill_seconds: f64,
    stored_json: f64,
    list_finished: Option<Duration>,
    all_out: Option<Duration>,
    rss: Option<f64>,
    opening_bytes: Option<f64>,
    opening_messages: usize,
    opening_time: Option<Duration>,
    page_ready: Option<Duration>,
    renderer: Option<Renderers>,
    writes_per_second: Option<f64>,
    frames_per_second: Option<f64>,
    events_per_second: Option<f64>,
    /// Event frames the viewer got by [`DRAIN`] after the last write, per write.
    events_seen: Option<f64>,
    resyncs: usize,
    page_fps: Option<f64>,
    failure: Option<String>,
}

/// The empty bridge, and the idle viewers.
#[derive(Debug, Default)]
pub struct Empty {
    rss: Option<f64>,
    /// Viewers, and the `VmRSS` growth per viewer.
    idle: Vec<(usize, f64)>,
    failure: Option<String>,
}

/// What the runs found.
pub struct Gathered {
    empty: Empty,
    /// One per size, smallest first.
    figures: Vec<Figures>,
    /// The sizes, smallest first.
    sizes: Vec<usize>,
    /// The idle viewers' steps, capped by the file limit.
    viewers: Vec<usize>,
    /// Files this process may open, and the viewers that allows.
    limit: u64,
    affordable: usize,
    /// Whether Chromium and chromedriver are here to measure the page.
    browser: bool,
}

impl Scenario for Config {
    type Figures = Gathered;

    fn measure(&self) -> Gathered {
        let browser = crate::browser::installed();
        let limit = fd_limit();
        let affordable = limit.saturating_sub(SPARE_FDS) as usize;
        let mut viewers: Vec<usize> = self.viewers.iter().map(|&n| n.min(affordable)).collect();
        viewers.dedup();
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        let mut sizes = self.sizes.clone();
        sizes.sort_unstable();
        let (empty, figures) = runtime.block_on(measure_all(self, &sizes, &viewers, browser));
        Gathered {
            empty,
            figures,
            sizes,
            viewers,
            limit,
            affordable,
            browser,
        }
    }

    fn report(&self, gathered: Gathered, report: &mut Report, seconds: f64) {
        report.sections.push(Section {
            title: "A big cluster: 10k to 150k objects on a real kube-apiserver".into(),
            method: self.method(&gathered),
            tables: vec![
                sizes_table(&gathered),
                idle_table(&gathered.empty),
                fill_table(&gathered.figures),
            ],
            notes: self.notes(&gathered),
            summary: summary(&gathered),
            seconds,
        });
    }
}

/// `–` for what was not measured, else the value shown.
fn or_dash(v: Option<f64>, show: fn(f64) -> String) -> String {
    v.map_or("–".to_string(), show)
}

fn duration(d: Option<Duration>) -> String {
    or_dash(d.map(|d| d.as_secs_f64() * 1e6), micros)
}

/// The value with ✓ or ✗ beside it where it has a goal.
fn against_goal(value: String, met: Option<bool>) -> String {
    match met {
        Some(true) => format!("{value} ✓"),
        Some(false) => format!("{value} ✗"),
        None => value,
    }
}

/// Resident memory per object beyond the empty bridge's.
fn per_object(f: &Figures, empty: &Empty) -> Option<f64> {
    Some((f.rss? - empty.rss?) / f.objects.max(1) as f64)
}

/// One row per size.
fn sizes_table(gathered: &Gathered) -> Table {
    let mut table = Table::new(
        "`watchlife --resources configmaps` on kube-apiserver v1.20.2, one run per size:",
        &[
            "objects",
            "start → LIST finished",
            "start → every object out",
            "resident memory per object (goal ≤ 2 KiB)",
            "new viewer: hello + snapshot (goal ≤ 14 MiB at 150k)",
            "its time (goal ≤ 1 s at 150k)",
            "page: open → ready",
            "page: all renderers' memory",
            "the tab's renderer (goal ≤ 300 MB)",
            "under writes: writes/s",
            "frames/s to a viewer (events)",
            "events seen ÷ writes (resyncs)",
            "page fps",
        ],
    );
    for f in &gathered.figures {
        table.row(size_row(f, &gathered.empty));
    }
    table
}

fn size_row(f: &Figures, empty: &Empty) -> Vec<String> {
    let big = f.objects >= 150_000;
    let per_object = per_object(f, empty);
    vec![
        count(f.objects),
        duration(f.list_finished),
        duration(f.all_out),
        against_goal(
            or_dash(per_object, bytes),
            per_object.map(|b| b <= GOAL_RSS_PER_OBJECT),
        ),
        against_goal(
            f.opening_bytes.map_or("–".to_string(), |b| {
                format!("{} in {} message(s)", bytes(b), f.opening_messages)
            }),
            f.opening_bytes
                .filter(|_| big)
                .map(|b| b <= GOAL_OPENING_BYTES),
        ),
        against_goal(
            duration(f.opening_time),
            f.opening_time
                .filter(|_| big)
                .map(|t| t.as_secs_f64() <= GOAL_OPENING_SECONDS),
        ),
        duration(f.page_ready),
        f.renderer.as_ref().map_or("–".to_string(), |r| {
            format!("{} in {} process(es)", megabytes(r.rss), r.processes)
        }),
        against_goal(
            f.renderer.as_ref().map_or("–".to_string(), |r| {
                format!(
                    "{} ({} anonymous)",
                    megabytes(r.tab_rss),
                    megabytes(r.tab_anon)
                )
            }),
            f.renderer
                .as_ref()
                .map(|r| r.tab_rss <= GOAL_RENDERER_BYTES),
        ),
        or_dash(f.writes_per_second, num),
        match (f.frames_per_second, f.events_per_second) {
            (Some(frames), Some(events)) => format!("{} ({})", num(frames), num(events)),
            _ => "–".into(),
        },
        f.events_seen.map_or("–".to_string(), |v| {
            format!("{} ({})", share(v), f.resyncs)
        }),
        or_dash(f.page_fps, num),
    ]
}

fn idle_table(empty: &Empty) -> Table {
    let mut idle = Table::new(
        "Idle viewers of the bridge over the empty cluster:",
        &[
            "viewers",
            "resident memory per viewer (goal ≤ 16 KiB)",
            "bridge's resident memory with no viewer",
        ],
    );
    for (n, per_viewer) in &empty.idle {
        idle.row(vec![
            count(*n),
            against_goal(bytes(*per_viewer), Some(*per_viewer <= GOAL_IDLE_VIEWER)),
            or_dash(empty.rss, bytes),
        ]);
    }
    idle
}

fn fill_table(figures: &[Figures]) -> Table {
    let mut fill = Table::new(
        "The fill, straight into etcd:",
        &[
            "objects",
            "stored JSON per object",
            "objects written per second",
        ],
    );
    let mut filled_before = 0;
    for f in figures {
        fill.row(vec![
            count(f.objects),
            bytes(f.stored_json),
            num((f.objects - filled_before) as f64 / f.fill_seconds.max(1e-9)),
        ]);
        filled_before = f.objects;
    }
    fill
}

fn summary(gathered: &Gathered) -> Vec<String> {
    let mut summary: Vec<String> = gathered
        .figures
        .iter()
        .map(|f| {
            format!(
                "{} objects: LIST finished after {}, {} resident per object, hello + snapshot {} in {}, page ready after {} with a {} renderer, {} frames/s to a viewer under {} writes/s",
                count(f.objects),
                duration(f.list_finished),
                or_dash(per_object(f, &gathered.empty), bytes),
                or_dash(f.opening_bytes, bytes),
                duration(f.opening_time),
                duration(f.page_ready),
                or_dash(f.renderer.as_ref().map(|r| r.tab_rss), megabytes),
                or_dash(f.frames_per_second, num),
                or_dash(f.writes_per_second, num),
            )
        })
        .collect();
    summary.extend(
        gathered
            .empty
            .idle
            .iter()
            .map(|(n, b)| format!("{} idle viewers: {} per viewer", count(*n), bytes(*b))),
    );
    summary
}

/// "10,000, 50,000" and the like.
fn counts(ns: &[usize], between: &str) -> String {
    ns.iter()
        .map(|n| count(*n))
        .collect::<Vec<_>>()
        .join(between)
}

impl Config {
    fn notes(&self, gathered: &Gathered) -> Vec<String> {
        let mut notes = vec![
            "Goals, read by eye (a ✓ or ✗ beside the figure; the snapshot's goals are for \
             150k objects only): resident memory ≤ 2 KiB per cached object; a new viewer's \
             hello and snapshot ≤ 14 MiB and ≤ 1 s at 150k objects; the tab's renderer ≤ 300 MB (its `VmRSS`); \
             an idle viewer ≤ 16 KiB of the bridge's memory."
                .to_string(),
            "\"Start\" is when the bench spawned `watchlife`: the times include the process \
             starting, discovery, the LIST (served by kube-apiserver's watch cache, from \
             resourceVersion 0, unpaged) and decoding it. Resident memory per object holds \
             everything the bridge keeps for an object (its text and parsed fields, once; the \
             Indexer's map and namespace index; the hub's entry for snapshots, the same object \
             shared), the frames kept for resuming viewers, and the allocator's slack; kernel \
             socket buffers are not in it."
                .to_string(),
            "The renderers' memory is the sum of `VmRSS` over the browser's renderer processes \
             (Chromium keeps a few beside the tab's; the pages of the Chromium binary and \
             libraries they share are counted in each). The tab's renderer alone is the one with \
             the most anonymous memory: its `VmRSS`, and in brackets its `RssAnon`, where the \
             page's wasm memory, JS heap and DOM live. \"Page fps\" counts `requestAnimationFrame` callbacks of the headless \
             window, which draws without a display and shares the two cores with the bridge, \
             kube-apiserver, etcd and the writer."
                .to_string(),
        ];
        if let Some(e) = &gathered.empty.failure {
            notes.push(format!("The empty bridge or the idle viewers: {e}."));
        }
        for f in &gathered.figures {
            if let Some(e) = &f.failure {
                notes.push(format!("At {} objects: {e}.", count(f.objects)));
            }
        }
        if !gathered.browser {
            notes.push(
                "Chromium or chromedriver is not installed: the page was not measured.".into(),
            );
        }
        if gathered.viewers != self.viewers {
            notes.push(format!(
                "This process may open {} files, so the viewers were capped at {}: raise \
                 the limit (`ulimit -n`) to measure more.",
                gathered.limit,
                count(gathered.affordable)
            ));
        }
        notes
    }

    fn method(&self, gathered: &Gathered) -> String {
        format!(
            "kube-apiserver v1.20.2 over etcd 3.4 on loopback. Configmaps of about {} of \
             data in {NAMESPACES} namespaces, written straight into etcd as JSON ({PER_TXN} \
             puts to a transaction, {TXNS_AT_ONCE} transactions at once); kube-apiserver \
             restarted after each fill and its watch cache ready before the bridge starts. \
             Sizes {}. Per size, a fresh `{} --kubeconfig K --resources configmaps`: the \
             initial LIST, resident memory per object, a new WebSocket viewer's opening \
             (hello and snapshot: the sum of WebSocket message lengths until the message \
             that holds the snapshot frame), the page in headless Chromium (ready when \
             connected and counting every object; renderer `VmRSS`), then {WRITE_RATE} \
             writes/s through the API (merge patches of random configmaps) for {} s, the \
             frames a WebSocket viewer receives and the page's frame rate meanwhile (and the \
             events that viewer saw by {} s after the last write, against the writes). Idle \
             viewers ({}) on a bridge over the empty cluster. One run.",
            bytes(DATA_BYTES as f64),
            counts(&gathered.sizes, ", "),
            self.watchlife.display(),
            WRITE_FOR.as_secs(),
            DRAIN.as_secs(),
            counts(&gathered.viewers, " then "),
        )
    }
}

fn megabytes(b: f64) -> String {
    format!("{} MB", num(b / 1e6))
}

async fn measure_all(
    config: &Config,
    sizes: &[usize],
    viewers: &[usize],
    browser: bool,
) -> (Empty, Vec<Figures>) {
    progress!("big cluster: starting etcd and kube-apiserver");
    let mut cluster = watchlife_tests::real_cluster::RealCluster::start().await;
    let api = Api::tls(cluster.base_url(), cluster.token(), cluster.ca_cert());
    let kubeconfig = cluster.kubeconfig().display().to_string();
    let mut empty = Empty::default();
    let mut figures = Vec::new();
    for ns in 0..NAMESPACES {
        let body =
            format!(r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"big-{ns}"}}}}"#);
        match api.request("POST", "/api/v1/namespaces", Some(body)).await {
            Ok((201 | 409, _)) => {}
            Ok((code, _)) => empty.failure = Some(format!("creating a namespace: {code}")),
            Err(e) => empty.failure = Some(e),
        }
    }
    progress!("big cluster: the empty bridge and idle viewers");
    if let Err(e) = measure_empty(config, &kubeconfig, viewers, &mut empty).await {
        progress!("big cluster: the empty bridge failed: {e}");
        empty.failure = Some(e);
    }
    let etcd = match etcd_client::Client::connect([cluster.etcd_endpoint()], None).await {
        Ok(c) => c,
        Err(e) => {
            empty.failure = Some(format!("cannot reach etcd: {e}"));
            return (empty, figures);
        }
    };
    let mut filled = 0;
    let mut stored = (0usize, 0usize);
    for &n in sizes {
        let mut f = Figures {
            objects: n,
            ..Figures::default()
        };
        progress!("big cluster: filling etcd up to {} configmaps", count(n));
        let t = Instant::now();
        match fill(&etcd, filled, n).await {
            Ok((written, json)) => {
                stored.0 += written;
                stored.1 += json;
            }
            Err(e) => {
                f.failure = Some(e);
                figures.push(f);
                break;
            }
        }
        f.fill_seconds = t.elapsed().as_secs_f64();
        f.stored_json = stored.1 as f64 / stored.0.max(1) as f64;
        filled = n;
        progress!(
            "big cluster: filled in {:.0} s; restarting kube-apiserver",
            f.fill_seconds
        );
        cluster.restart_apiserver().await;
        let result = async {
            let listed = wait_watch_cache(&api).await?;
            progress!(
                "big cluster: the watch cache holds {} configmaps",
                count(listed)
            );
            measure_size(config, &api, &kubeconfig, listed, browser, &mut f).await
        }
        .await;
        if let Err(e) = result {
            progress!("big cluster: {} objects failed: {e}", count(n));
            f.failure = Some(e);
        }
        figures.push(f);
    }
    (empty, figures)
}

/// The bridge over the empty cluster: its `VmRSS`, then idle viewers.
async fn measure_empty(
    config: &Config,
    kubeconfig: &str,
    viewers: &[usize],
    empty: &mut Empty,
) -> Result<(), String> {
    let start = Instant::now();
    let bridge = Watchlife::start_on_configmaps(
        &config.watchlife,
        kubeconfig,
        &["--max-viewers", "1000000"],
    )?;
    bridge.list_finished(start, TIMEOUT).await?;
    let before = steady_rss(bridge.pid()).await?;
    empty.rss = Some(before);
    let gate = Arc::new(Semaphore::new(CONNECTING));
    let failures = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for &n in viewers {
        progress!("big cluster: {} idle viewers", count(n));
        while tasks.len() < n {
            let permit = gate.clone().acquire_owned().await.expect("never closed");
            let url = bridge.ws_url();
            let failures = failures.clone();
            tasks.push(tokio::spawn(async move {
                let socket = connect(&url).await;
                drop(permit);
                let Ok(mut ws) = socket else {
                    failures.fetch_add(1, Ordering::Relaxed);
                    return;
                };
                // Reads what comes (the opening, heartbeats) and answers
                // pings, as an idle page does.
                while let Some(Ok(_)) = ws.next().await {}
            }));
        }
        drop(gate.acquire_many(CONNECTING as u32).await);
        let lost = failures.load(Ordering::Relaxed);
        if lost > 0 {
            return Err(format!("{lost} idle viewers could not connect"));
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        let rss = steady_rss(bridge.pid()).await?;
        empty.idle.push((n, (rss - before) / n as f64));
    }
    for t in &tasks {
        t.abort();
    }
    Ok(())
}

/// Writes configmaps `from..to` into etcd; returns how many and their JSON bytes.
async fn fill(
    etcd: &etcd_client::Client,
    from: usize,
    to: usize,
) -> Result<(usize, usize), String> {
    let json = put_all(etcd, from..to, stored_configmap).await?;
    Ok((to - from, json))
}

/// The `i`-th configmap as kube-apiserver would find it in etcd: its key, and
/// its JSON (no resourceVersion: the key's revision is that).
fn stored_configmap(i: usize) -> (String, String) {
    let ns = format!("big-{}", i % NAMESPACES);
    let name = format!("settings-{i:07}");
    let properties = settings_text(i, "service", DATA_BYTES);
    let object = serde_json::json!({
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": uid(i),
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": "settings", "shard": format!("s{}", i % 16)},
            "annotations": {"owner": "platform-team"}
        },
        "data": {
            "application.properties": properties,
            "mode": "production"
        }
    });
    (
        format!("/registry/configmaps/{ns}/{name}"),
        object.to_string(),
    )
}

/// Waits until kube-apiserver's watch cache for configmaps is ready (a watch
/// from the current resourceVersion is served only then), and returns how
/// many configmaps the cluster holds.
async fn wait_watch_cache(api: &Api) -> Result<usize, String> {
    let (code, body) = api
        .request("GET", "/api/v1/configmaps?limit=1", None)
        .await?;
    if code != 200 {
        return Err(format!("listing one configmap was answered {code}"));
    }
    let list: serde_json::Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .ok_or("a LIST without resourceVersion")?
        .to_string();
    let total = list["items"].as_array().map_or(0, Vec::len)
        + list["metadata"]["remainingItemCount"].as_u64().unwrap_or(0) as usize;
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let path = format!("/api/v1/configmaps?watch=1&resourceVersion={rv}&timeoutSeconds=1");
        if let Ok(mut body) = api.watch(&path).await {
            // Read to its end: the watch closes after a second.
            while let Some(Ok(_)) = http_body_util::BodyExt::frame(&mut body).await {}
            return Ok(total);
        }
        if Instant::now() > deadline {
            return Err("kube-apiserver's watch cache did not become ready".into());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The time from `start` until `bridge` has published every frame of a
/// LIST of `listed` objects; `None` when it has no such metric.
async fn all_out(
    bridge: &Watchlife,
    start: Instant,
    listed: usize,
) -> Result<Option<Duration>, String> {
    // list_started, list_finished, watch_started and one event per object.
    let want = listed as f64 + 3.0;
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let published = get(bridge.addr, "/metrics")
            .await
            .map(|m| metric(&m, "watchlife_frames_published_total"));
        match published {
            Some(Some(p)) if p >= want => return Ok(Some(start.elapsed())),
            // No such metric: the time is left out.
            Some(None) => return Ok(None),
            _ if Instant::now() > deadline => {
                return Err(format!("watchlife published fewer than {want} frames"));
            }
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// A new viewer's opening (hello and snapshot): its bytes, messages and time.
async fn measure_opening(bridge: &Watchlife, f: &mut Figures) -> Result<(), String> {
    let t0 = Instant::now();
    let mut ws = connect(&bridge.ws_url()).await?;
    let (opening, messages) = read_opening(&mut ws).await?;
    f.opening_time = Some(t0.elapsed());
    f.opening_bytes = Some(opening as f64);
    f.opening_messages = messages;
    drop(ws);
    progress!(
        "big cluster: hello + snapshot {} in {} messages",
        bytes(opening as f64),
        messages
    );
    Ok(())
}

/// One size: a fresh bridge's LIST and memory, a new viewer's opening,
/// the page, then writes through the API while a viewer and the page count.
async fn measure_size(
    config: &Config,
    api: &Api,
    kubeconfig: &str,
    listed: usize,
    browser: bool,
    f: &mut Figures,
) -> Result<(), String> {
    progress!(
        "big cluster: {} objects, watchlife listing",
        count(f.objects)
    );
    let start = Instant::now();
    let bridge = Watchlife::start_on_configmaps(&config.watchlife, kubeconfig, &[])?;
    f.list_finished = Some(bridge.list_finished(start, TIMEOUT).await?);
    f.all_out = all_out(&bridge, start, listed).await?;
    f.rss = Some(steady_rss(bridge.pid()).await?);
    progress!(
        "big cluster: listed in {}, {} resident",
        micros(f.list_finished.unwrap_or_default().as_secs_f64() * 1e6),
        bytes(f.rss.unwrap_or(f64::NAN))
    );

    measure_opening(&bridge, f).await?;

    let page = if browser {
        match Page::open(&bridge, listed, f).await {
            Ok(page) => Some(page),
            Err(e) => {
                f.failure = Some(format!("the page: {e}"));
                None
            }
        }
    } else {
        None
    };

    progress!(
        "big cluster: {WRITE_RATE} writes/s for {} s",
        WRITE_FOR.as_secs()
    );
    let mut ws = connect(&bridge.ws_url()).await?;
    read_opening(&mut ws).await?;
    let counting = async {
        match &page {
            Some(page) => page.fps(WRITE_FOR).await.ok(),
            None => None,
        }
    };
    let ((written, seconds), received, page_fps) = tokio::join!(
        write(api, f.objects),
        count_frames(&mut ws, WRITE_FOR),
        counting
    );
    f.writes_per_second = Some(written as f64 / seconds);
    f.frames_per_second = Some(received.frames as f64 / WRITE_FOR.as_secs_f64());
    f.events_per_second = Some(received.events as f64 / WRITE_FOR.as_secs_f64());
    f.events_seen = Some(received.events_drained as f64 / written.max(1) as f64);
    f.resyncs = received.resyncs;
    f.page_fps = page_fps;
    if let Some(page) = page {
        page.close().await;
    }
    Ok(())
}

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// A WebSocket viewer with no limit on a message's size: a snapshot of the
/// whole cache may exceed tungstenite's default 64 MiB.
async fn connect(url: &str) -> Result<Socket, String> {
    let config = WebSocketConfig::default()
        .max_message_size(None)
        .max_frame_size(None);
    tokio_tungstenite::connect_async_with_config(url, Some(config), true)
        .await
        .map(|(ws, _)| ws)
        .map_err(|e| format!("a viewer could not connect: {e}"))
}

/// Just the `type` of a frame, its other fields skipped.
#[derive(Deserialize)]
struct Typed {
    #[serde(rename = "type")]
    kind: Option<String>,
}

fn frame_type(line: &str) -> Option<String> {
    serde_json::from_str::<Typed>(line).ok()?.kind
}

/// Reads messages until one holds a snapshot frame; returns the bytes of
/// every message read, that one included, and how many messages.
async fn read_opening(ws: &mut Socket) -> Result<(usize, usize), String> {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    let (mut total, mut messages) = (0, 0);
    loop {
        let message = tokio::time::timeout_at(deadline, ws.next())
            .await
            .map_err(|_| "no snapshot in time".to_string())?
            .ok_or("the bridge closed the viewer")?
            .map_err(|e| e.to_string())?;
        let text = match &message {
            Message::Text(t) => t.as_str(),
            Message::Binary(b) => {
                total += b.len();
                messages += 1;
                continue;
            }
            _ => continue,
        };
        total += text.len();
        messages += 1;
        if text
            .split('\n')
            .any(|line| frame_type(line).as_deref() == Some("snapshot"))
        {
            return Ok((total, messages));
        }
    }
}

/// What a viewer received while the writer ran.
#[derive(Debug, Default, Clone, Copy)]
struct Received {
    /// Frames (lines) and event frames during the writer's window.
    frames: usize,
    events: usize,
    /// Event frames by [`DRAIN`] after the window, the window's included.
    events_drained: usize,
    /// `resync` frames (the viewer fell behind and was sent a snapshot).
    resyncs: usize,
}

/// How long the viewer reads on after the writer stops.
const DRAIN: Duration = Duration::from_secs(3);

/// Counts what a viewer receives during `length`, then during [`DRAIN`].
async fn count_frames(ws: &mut Socket, length: Duration) -> Received {
    let end = tokio::time::Instant::now() + length;
    let mut got = Received::default();
    let mut in_window = true;
    loop {
        let deadline = if in_window { end } else { end + DRAIN };
        match tokio::time::timeout_at(deadline, ws.next()).await {
            Ok(Some(Ok(Message::Text(text)))) => {
                for line in text.as_str().split('\n').filter(|l| !l.is_empty()) {
                    let kind = frame_type(line);
                    let event = usize::from(kind.as_deref() == Some("event"));
                    got.events_drained += event;
                    got.resyncs += usize::from(kind.as_deref() == Some("resync"));
                    if in_window {
                        got.frames += 1;
                        got.events += event;
                    }
                }
            }
            Ok(Some(Ok(_))) => {}
            Err(_) if in_window => in_window = false,
            _ => break,
        }
    }
    got
}

/// Patches configmaps through the API at [`WRITE_RATE`] for [`WRITE_FOR`];
/// returns the writes that succeeded and the seconds they took.
async fn write(api: &Api, objects: usize) -> (usize, f64) {
    let t0 = Instant::now();
    let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(WRITE_RATE)));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut written = 0;
    let mut k = 0usize;
    while t0.elapsed() < WRITE_FOR {
        ticks.tick().await;
        let i = k.wrapping_mul(7919) % objects.max(1);
        k += 1;
        let path = format!(
            "/api/v1/namespaces/big-{}/configmaps/settings-{i:07}",
            i % NAMESPACES
        );
        // Never a value an earlier size wrote: an update that changes
        // nothing makes no event.
        let body = format!(r#"{{"data":{{"mode":"write-{objects}-{k}"}}}}"#);
        if let Ok((200, _)) = api
            .request_typed("PATCH", &path, "application/merge-patch+json", body)
            .await
        {
            written += 1;
        }
    }
    (written, t0.elapsed().as_secs_f64())
}

/// `VmRSS` of `pid` once two readings a second apart differ by under 1%
/// (the LIST's buffers freed), or after ten seconds.
async fn steady_rss(pid: u32) -> Result<f64, String> {
    let read = || rss_bytes(pid).map(|b| b as f64).ok_or("watchlife is gone");
    let mut last = read()?;
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = read()?;
        if (now - last).abs() < last * 0.01 {
            return Ok(now);
        }
        last = now;
    }
    Ok(last)
}

/// The app in headless Chromium.
struct Page {
    driver: Driver,
    client: fantoccini::Client,
}

impl Page {
    /// Opens the app, waits until it is ready, and notes the time and the
    /// renderer's memory in `f`.
    async fn open(bridge: &Watchlife, listed: usize, f: &mut Figures) -> Result<Page, String> {
        let driver = Driver::start()?;
        let client = driver.session().await?;
        let page = Page { driver, client };
        let t0 = Instant::now();
        page.client
            .goto(&format!("http://{}/", bridge.addr))
            .await
            .map_err(|e| format!("opening the app: {e}"))?;
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let state = page
                .client
                .execute(
                    "const s = document.querySelector('section.objects'); \
                     return [!!document.querySelector('#link[data-link=connected]'), \
                       s ? Number(s.dataset.objects) : -1];",
                    vec![],
                )
                .await
                .map_err(|e| e.to_string())?;
            let connected = state[0].as_bool() == Some(true);
            let objects = state[1].as_f64().unwrap_or(-1.0);
            if connected && objects >= listed as f64 {
                f.page_ready = Some(t0.elapsed());
                break;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "not ready in {} s (connected: {connected}, objects: {objects})",
                    TIMEOUT.as_secs()
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        let renderers = renderers(page.driver.pid());
        progress!(
            "big cluster: page ready after {}, {} renderer(s), {} in all, the tab's {}",
            micros(f.page_ready.unwrap_or_default().as_secs_f64() * 1e6),
            renderers.processes,
            megabytes(renderers.rss),
            megabytes(renderers.tab_rss)
        );
        f.renderer = Some(renderers);
        Ok(page)
    }

    /// `requestAnimationFrame` callbacks per second over `length`.
    async fn fps(&self, length: Duration) -> Result<f64, String> {
        let counted = self
            .client
            .execute_async(
                &format!(
                    "const done = arguments[arguments.length - 1]; \
                     const start = performance.now(); let frames = 0; \
                     function tick(t) {{ frames++; \
                       if (t - start < {}) requestAnimationFrame(tick); \
                       else done([frames, t - start]); }} \
                     requestAnimationFrame(tick);",
                    length.as_millis()
                ),
                vec![],
            )
            .await
            .map_err(|e| e.to_string())?;
        let v = |i: usize| counted.get(i).and_then(|x| x.as_f64()).unwrap_or(f64::NAN);
        Ok(v(0) / v(1) * 1000.0)
    }

    async fn close(self) {
        let _ = self.client.close().await;
    }
}

/// The renderer processes of a browser.
#[derive(Debug, Clone)]
struct Renderers {
    processes: usize,
    /// `VmRSS`, summed over them (pages they share counted in each).
    rss: f64,
    /// The one with the most anonymous memory (the tab's own, where its
    /// wasm memory, JS heap and DOM live): its `VmRSS` and its `RssAnon`.
    tab_rss: f64,
    tab_anon: f64,
}

/// The processes under `root` started with `--type=renderer` (Chromium
/// rewrites its command line into one string, so it is searched, not split).
fn renderers(root: u32) -> Renderers {
    let mut found = Renderers {
        processes: 0,
        rss: 0.0,
        tab_rss: 0.0,
        tab_anon: 0.0,
    };
    for pid in process_tree(root) {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if !String::from_utf8_lossy(&cmdline).contains("--type=renderer") {
            continue;
        }
        let status = status(pid).unwrap_or_default();
        let field = |name| kib_field(&status, name).map(|b| b as f64);
        let (Some(rss), Some(anon)) = (field("VmRSS"), field("RssAnon")) else {
            continue;
        };
        found.processes += 1;
        found.rss += rss;
        if anon > found.tab_anon {
            found.tab_anon = anon;
            found.tab_rss = rss;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_configmap_is_about_a_kilobyte_of_data() {
        let (key, json) = stored_configmap(12345);
        assert_eq!(key, "/registry/configmaps/big-1/settings-0012345");
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let data = v["data"]["application.properties"].as_str().unwrap();
        assert!((DATA_BYTES..DATA_BYTES + 64).contains(&data.len()));
        assert_eq!(v["metadata"]["namespace"], "big-1");
        assert!(v["metadata"]["uid"].as_str().unwrap().len() == 36);
    }

    #[test]
    fn finds_the_type_of_a_frame_in_either_layout() {
        assert_eq!(
            frame_type(r#"{"seq":3,"type":"snapshot","objects":[{"type":"x"}]}"#).as_deref(),
            Some("snapshot")
        );
        assert_eq!(
            frame_type(r#"{"seq":3,"data":{"type":"x"},"type":"event"}"#).as_deref(),
            Some("event")
        );
        assert_eq!(frame_type("not json"), None);
    }
}
