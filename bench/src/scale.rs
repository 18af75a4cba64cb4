//! Scale: memory per cached object at 10k and 150k objects, and the time of
//! the initial LIST.
//!
//! Two views. In process, the informer's Indexer is filled through
//! `enqueue_list` with pods parsed from JSON, and the bench's allocator
//! counts the heap it keeps per object. As a process, the real `watchlife`
//! list-watches configmaps from a demo API (in the bench, filled with N
//! objects, reached through a kubeconfig as any cluster is): the time until
//! its Reflector reports the LIST finished, the time until every listed
//! object has come out of the informer, and its resident memory per object.

use crate::objects::{configmap, pod, pod_event, pod_name};
use crate::process::{Watchlife, get, metric};
use crate::report::{Report, Section, Table};
use crate::scenario::{Runs, Scenario};
use crate::stats::{Spread, bytes, count, micros};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use watchlife_controlplane::limits::Limits;
use watchlife_controlplane::resource::CONFIGMAPS;
use watchlife_controlplane::{Clock, ControlPlane};
use watchlife_informer::Object;
use watchlife_informer_frames::Informer;
use watchlife_live_heap::live_bytes;
use watchlife_protocol::EventType;

/// How long one listing may take before the bench gives up on it.
const LIST_TIMEOUT: Duration = Duration::from_secs(180);

#[derive(Debug, Clone)]
pub struct Config {
    pub runs: usize,
    pub watchlife: PathBuf,
    pub sizes: Vec<usize>,
}

#[derive(Default)]
pub struct Figures {
    indexer_bytes: Spread,
    value_bytes: Spread,
    json_bytes: f64,
    bare_list: Spread,
    list_finished: Spread,
    all_out: Spread,
    rss_per_object: Spread,
}

/// One entry per size; the failure stopped the `watchlife` process figures.
type Gathered = Runs<Vec<Figures>>;

impl Scenario for Config {
    type Figures = Gathered;

    fn measure(&self) -> Gathered {
        let mut gathered: Gathered = Runs {
            figures: self.sizes.iter().map(|_| Figures::default()).collect(),
            failure: None,
        };
        // In process first, while no server of the bench is freeing memory in
        // the background: the allocator counts the whole process.
        self.measure_indexer(&mut gathered.figures);
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        gathered.failure = self.measure_process(&runtime, &mut gathered.figures).err();
        gathered
    }

    fn report(&self, gathered: Gathered, report: &mut Report, seconds: f64) {
        let figures = &gathered.figures;
        let mut summary = Vec::new();
        if let (Some(f), Some(n)) = (figures.last(), self.sizes.last()) {
            summary.push(format!(
                "{} objects: Indexer heap {} per object; watchlife LIST finished after {}, all out after {}, {} resident per object",
                count(*n),
                bytes(f.indexer_bytes.median()),
                micros(f.list_finished.median()),
                micros(f.all_out.median()),
                bytes(f.rss_per_object.median())
            ));
        }
        report.sections.push(Section {
            title: "Scale: memory per cached object, and the initial LIST".into(),
            method: format!(
                "Sizes {}. {} runs.",
                self.sizes
                    .iter()
                    .map(|n| count(*n))
                    .collect::<Vec<_>>()
                    .join(" and "),
                self.runs
            ),
            tables: vec![self.indexer_table(figures), self.listing_table(figures)],
            notes: notes(&gathered),
            summary,
            seconds,
        });
    }
}

impl Config {
    /// The Indexer's heap per object, in this process, every run and size.
    fn measure_indexer(&self, figures: &mut [Figures]) {
        for run in 0..self.runs {
            for (i, &n) in self.sizes.iter().enumerate() {
                progress!(
                    "scale: run {}/{}, the Indexer with {} objects",
                    run + 1,
                    self.runs,
                    count(n)
                );
                let sizes = indexer_bytes_per_object(n);
                figures[i].indexer_bytes.push(sizes.indexer);
                figures[i].value_bytes.push(sizes.values);
                figures[i].json_bytes = sizes.json;
            }
        }
    }

    /// The `watchlife` process listing each size, beside one with nothing to
    /// list; stops at the first failure.
    fn measure_process(
        &self,
        runtime: &tokio::runtime::Runtime,
        figures: &mut [Figures],
    ) -> Result<(), String> {
        for run in 0..self.runs {
            let baseline = runtime
                .block_on(list_with_watchlife(&self.watchlife, 0))?
                .rss;
            for (i, &n) in self.sizes.iter().enumerate() {
                progress!(
                    "scale: run {}/{}, watchlife listing {} objects",
                    run + 1,
                    self.runs,
                    count(n)
                );
                let listed = runtime.block_on(list_with_watchlife(&self.watchlife, n))?;
                let f = &mut figures[i];
                f.bare_list.push(listed.bare_list.as_secs_f64() * 1e6);
                f.list_finished
                    .push(listed.list_finished.as_secs_f64() * 1e6);
                f.all_out.push(listed.all_out.as_secs_f64() * 1e6);
                f.rss_per_object
                    .push((listed.rss as f64 - baseline as f64) / n as f64);
            }
        }
        Ok(())
    }

    fn indexer_table(&self, figures: &[Figures]) -> Table {
        let mut indexer = Table::new(
            "The informer's Indexer, in process (pods of about 700 bytes of JSON):",
            &[
                "objects",
                "Indexer heap per object",
                "the parsed object alone (reference)",
                "its JSON",
                "Indexer heap ÷ JSON",
            ],
        );
        for (f, n) in figures.iter().zip(&self.sizes) {
            indexer.row(vec![
                count(*n),
                f.indexer_bytes.show(bytes),
                f.value_bytes.show(bytes),
                bytes(f.json_bytes),
                format!("{:.1}×", f.indexer_bytes.median() / f.json_bytes),
            ]);
        }
        indexer
    }

    fn listing_table(&self, figures: &[Figures]) -> Table {
        let mut listing = Table::new(
            "The `watchlife` process, list-watching configmaps (about 200 bytes of JSON each) \
             from a demo API through a kubeconfig:",
            &[
                "objects",
                "the LIST as bytes, bare client (reference)",
                "start → LIST finished",
                "start → every object out of the informer",
                "resident memory per object",
            ],
        );
        for (f, n) in figures.iter().zip(&self.sizes) {
            listing.row(vec![
                count(*n),
                f.bare_list.show(micros),
                f.list_finished.show(micros),
                f.all_out.show(micros),
                f.rss_per_object.show(bytes),
            ]);
        }
        listing
    }
}

fn notes(gathered: &Gathered) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(f) = gathered.figures.last() {
        notes.push(format!(
            "The Indexer keeps each object as its JSON text and the few fields the stages \
             read: {} of heap per object for {} of JSON, with its map and namespace index. The \
             same object parsed into a `serde_json::Value` tree (a map per JSON object, a \
             string per key and value), the reference, takes {} alone.",
            bytes(f.indexer_bytes.median()),
            bytes(f.json_bytes),
            bytes(f.value_bytes.median()),
        ));
    }
    notes.extend([
        "The reference is the same LIST (`GET /api/v1/configmaps?resourceVersion=0`) read \
         to its end as bytes by a bare HTTP/1.0 client, just before `watchlife` starts: the \
         demo API's share of the time, with nothing parsed."
            .to_string(),
        "\"Start\" is when the bench spawned `watchlife`: the figures include the process \
         starting, discovery, the LIST itself (one unpaged request from resourceVersion 0, \
         as client-go's first LIST is) and parsing it. \"Every object out of the informer\" is \
         when the hub has published an event frame for every listed object. Resident memory \
         per object is the process's `VmRSS` after that, less the `VmRSS` of the same \
         process with nothing to list, divided by the number of objects: it holds each \
         object's text and parsed fields once, the Indexer's map and namespace index, and \
         the hub's entry for snapshots (the same object, shared), with the allocator's \
         slack."
            .to_string(),
    ]);
    if let Some(e) = &gathered.failure {
        notes.push(format!(
            "The `watchlife` process figures are incomplete: {e}."
        ));
    }
    notes
}

/// Heap bytes the Indexer keeps per object after a LIST of `n` pods, the
/// heap of the parsed objects alone, and the mean size of a pod's JSON.
fn indexer_bytes_per_object(n: usize) -> Sizes {
    let texts: Vec<String> = (0..n)
        .map(|i| {
            let mut p = pod(&pod_name(i), i as u64);
            p["metadata"]["resourceVersion"] = (1000 + i).to_string().into();
            p["metadata"]["uid"] = format!("00000000-0000-4000-8000-{i:012}").into();
            p.to_string()
        })
        .collect();
    let json = texts.iter().map(String::len).sum::<usize>() as f64 / n as f64;
    let before = live_bytes();
    let parsed: Vec<Arc<Value>> = texts
        .iter()
        .map(|t| Arc::new(serde_json::from_str(t).expect("the bench's own JSON")))
        .collect();
    let values = live_bytes().saturating_sub(before) as f64 / n as f64;
    drop(parsed);
    let before = live_bytes();
    let mut informer = Informer::new(watchlife_informer::informer::Options::pods());
    let clock = Clock::system();
    let items = texts
        .iter()
        .map(|t| {
            let object: Value = serde_json::from_str(t).expect("the bench's own JSON");
            pod_event(
                EventType::Added,
                Object::from_value(&object),
                clock.now(),
                true,
            )
        })
        .collect();
    informer.enqueue_list(items, clock.now());
    informer.drain(&|| clock.now());
    let per_object = live_bytes().saturating_sub(before) as f64 / n as f64;
    assert_eq!(informer.indexer().len(), n);
    drop(informer);
    Sizes {
        indexer: per_object,
        values,
        json,
    }
}

struct Sizes {
    indexer: f64,
    values: f64,
    json: f64,
}

struct Listed {
    bare_list: Duration,
    list_finished: Duration,
    all_out: Duration,
    rss: u64,
}

/// Serves a demo API holding `n` configmaps, runs `watchlife` on it, and
/// times its initial LIST.
async fn list_with_watchlife(binary: &std::path::Path, n: usize) -> Result<Listed, String> {
    // Far beyond the demo's own quotas: this measures the core at a
    // cluster's size, on loopback, for the bench alone.
    let cp = ControlPlane::with_limits(Clock::system(), Limits::UNBOUNDED);
    for i in 0..n {
        cp.create(CONFIGMAPS, configmap(&format!("config-{i:06}")))
            .map_err(|e| format!("filling the demo API: {e}"))?;
    }
    cp.compact();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let api = listener.local_addr().map_err(|e| e.to_string())?;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(watchlife_demo_apiserver::serve(cp, listener, async move {
        let _ = stop_rx.await;
    }));
    let dir = std::env::temp_dir().join(format!("watchlife-bench-{}", std::process::id()));
    let kubeconfig = dir.join("kubeconfig");
    watchlife_demo_apiserver::write_kubeconfig(&kubeconfig, &format!("http://{api}"))
        .map_err(|e| e.to_string())?;
    let kubeconfig_arg = kubeconfig.display().to_string();

    // The reference: the same LIST fetched as bytes by a bare client.
    let fetch = Instant::now();
    let body = get(api, "/api/v1/configmaps?resourceVersion=0")
        .await
        .ok_or("the demo API did not answer the LIST")?;
    let bare_list = fetch.elapsed();
    drop(body);

    let start = Instant::now();
    let result = async {
        let bridge = Watchlife::start_on_configmaps(binary, &kubeconfig_arg, &[])?;
        let list_finished = bridge.list_finished(start, LIST_TIMEOUT).await?;
        // list_started, list_finished, watch_started and one event per object.
        let want = n as f64 + 3.0;
        let deadline = Instant::now() + LIST_TIMEOUT;
        let all_out = loop {
            let published = get(bridge.addr, "/metrics")
                .await
                .and_then(|m| metric(&m, "watchlife_frames_published_total"))
                .unwrap_or(0.0);
            if published >= want {
                break start.elapsed();
            }
            if Instant::now() > deadline {
                return Err(format!("watchlife published {published} of {want} frames"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        // Let allocations settle (the LIST's buffers freed) before reading RSS.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let rss = crate::machine::rss_bytes(bridge.pid()).ok_or("no /proc entry")?;
        Ok(Listed {
            bare_list,
            list_finished,
            all_out,
            rss,
        })
    }
    .await;
    let _ = stop_tx.send(());
    let _ = server.await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}
