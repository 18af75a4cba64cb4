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

mod fill;
mod idle;
mod measure;
mod page;
mod report;
mod viewer;

use crate::crowd;
use crate::machine::Renderers;
use crate::report::{Report, Section};
use crate::scenario::Scenario;
use measure::measure_all;
use report::{fill_table, idle_table, sizes_table, summary, wire_table};
use std::path::PathBuf;
use std::time::Duration;

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
    /// Bytes per frame under writes: an uncompressed viewer's and a
    /// compressed one's (the page's), side by side.
    wire: Option<(f64, f64)>,
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
        let (limit, affordable) = crowd::affordable();
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
        if let Some(f) = gathered.figures.iter().rev().find(|f| f.wire.is_some())
            && let Some((plain, compressed)) = f.wire
        {
            report.headline(
                format!(
                    "wire: bytes per frame at {} objects under writes, compressed ÷ uncompressed",
                    crate::stats::count(f.objects)
                ),
                format!("{:.1}%", compressed / plain * 100.0),
            );
        }
        report.sections.push(Section {
            title: "A big cluster: 10k to 150k objects on a real kube-apiserver".into(),
            method: self.method(&gathered),
            tables: vec![
                sizes_table(&gathered),
                idle_table(&gathered.empty),
                fill_table(&gathered.figures),
                wire_table(&gathered.figures),
            ],
            notes: self.notes(&gathered),
            summary: summary(&gathered),
            seconds,
        });
    }
}
