//! The demo control plane against the real one, over the same HTTP: the demo
//! API (in the bench) and kube-apiserver v1.20.2 with etcd 3.4 (started on
//! loopback by the tests' harness), each with 1, 100 and 1,000 watchers.
//!
//! The same client does the same thing to both: it opens the watches
//! (`GET .../configmaps?watch=1&resourceVersion=RV`), then
//!
//! - **writes/s delivered to every watcher**: [`WRITERS`] writers each merge-
//!   patch a configmap of their own, in batches of [`BATCH`] writes, and
//!   every batch is waited for until each watcher has read its events;
//! - **write → watcher latency** at a steady [`PACED_RATE`] writes/s: from the
//!   moment the write was sent to the moment a watcher has read its event
//!   line (neither server says when it committed, so the write's send time
//!   stands for it, on both).
//!
//! The watchers read raw lines and look for the write's number without
//! parsing the JSON, so that the reading costs little beside the servers.

use crate::machine::now_micros;
use crate::report::{Report, Section, Table};
use crate::scenario::WriteLoad;
use crate::scenario::{Runs, Scenario, stopped_early};
use crate::stats::{Histogram, Spread, count, micros, num, plural, ratio, times};
use bytes::Bytes;
use http_body_util::BodyExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use watchlife_controlplane::{Clock, ControlPlane};
use watchlife_testkit::client::Client;

/// Concurrent writers, each on a configmap of its own.
const WRITERS: usize = 4;
/// Writes between two waits for every watcher.
const BATCH: usize = 20;
/// Writes per second while latency is measured.
const PACED_RATE: f64 = 50.0;
/// Watches opened at once.
const OPENING: usize = 32;
/// How long a batch may take to reach every watcher.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(60);
const NAMESPACE_PATH: &str = "/api/v1/namespaces/default/configmaps";

#[derive(Debug, Clone)]
pub struct Config {
    pub load: WriteLoad,
}

#[derive(Default)]
pub struct Figures {
    writes_per_second: Spread,
    p50: Spread,
    p99: Spread,
    latency: Histogram,
}

/// One API server as the client sees it.
struct Target {
    name: &'static str,
    api: Api,
}

/// The servers compared, in the table's order: the demo API, then kube-apiserver.
const NAMES: [&str; 2] = ["demo API (watchlife)", "kube-apiserver + etcd"];

/// Per server of [`NAMES`], per watcher count.
type Gathered = Runs<Vec<Vec<Figures>>>;

impl Scenario for Config {
    type Figures = Gathered;

    fn measure(&self) -> Gathered {
        let runtime = crate::machine::two_thread_runtime();
        let mut gathered: Gathered = Runs {
            figures: NAMES
                .iter()
                .map(|_| {
                    self.load
                        .watchers
                        .iter()
                        .map(|_| Figures::default())
                        .collect()
                })
                .collect(),
            failure: None,
        };
        runtime.block_on(async {
            progress!("real cluster: starting etcd and kube-apiserver");
            let cluster = watchlife_tests::real_cluster::RealCluster::start().await;
            let (demo_addr, stop, server) = serve_demo_api().await;
            let targets = [
                Target {
                    name: NAMES[0],
                    api: Api::plain(&format!("http://{demo_addr}")),
                },
                Target {
                    name: NAMES[1],
                    api: Api::tls(cluster.base_url(), cluster.token(), cluster.ca_cert()),
                },
            ];
            gathered.failure = self.drive(&targets, &mut gathered.figures).await.err();
            let _ = stop.send(());
            let _ = server.await;
            drop(cluster);
        });
        gathered
    }

    fn report(&self, gathered: Gathered, report: &mut Report, seconds: f64) {
        let table = self.table(&gathered.figures, report);
        let summary = self.compare(&gathered.figures, report);
        let mut notes = vec![
            "The two servers are not doing the same work, and the table should be read with \
             that in mind: kube-apiserver speaks TLS, authenticates a token, runs admission and \
             validation, writes to etcd (which syncs its log to disk) and reads the change back \
             through its watch before its cache fans it out; the demo API keeps everything in \
             memory in the bench's own process, behind one lock. The comparison says what the \
             demo's numbers mean beside the real thing, not which is better."
                .to_string(),
        ];
        notes.extend(stopped_early(gathered.failure.as_deref()));
        report.sections.push(Section {
            title: "The demo control plane beside kube-apiserver + etcd".into(),
            method: self.method(),
            tables: vec![table],
            notes,
            summary,
            seconds,
        });
    }
}

/// The demo API over a fresh control plane, served from the bench on a free
/// port: its address, the sender that stops it, and its task.
async fn serve_demo_api() -> (
    std::net::SocketAddr,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let cp = ControlPlane::new(Clock::system());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let demo_addr = listener.local_addr().expect("a bound address");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(watchlife_demo_apiserver::serve(cp, listener, async move {
        let _ = stopped.await;
    }));
    (demo_addr, stop, server)
}

impl Config {
    /// Every run against both servers, each watcher count in turn; stops at
    /// the first failure and says which server had it.
    async fn drive(&self, targets: &[Target], figures: &mut [Vec<Figures>]) -> Result<(), String> {
        for run in 0..self.load.runs {
            for (t, target) in targets.iter().enumerate() {
                for (i, &n) in self.load.watchers.iter().enumerate() {
                    progress!(
                        "real cluster: run {}/{}, {}, {n} watchers",
                        run + 1,
                        self.load.runs,
                        target.name
                    );
                    let m = measure(&target.api, n, self).await.map_err(|e| {
                        progress!("real cluster failed: {e}");
                        format!("{}: {e}", target.name)
                    })?;
                    let f = &mut figures[t][i];
                    f.writes_per_second.push(m.writes_per_second);
                    f.p50.push(m.latency.quantile_or_nan(0.5));
                    f.p99.push(m.latency.quantile_or_nan(0.99));
                    f.latency.merge(&m.latency);
                }
            }
        }
        Ok(())
    }

    /// One row per server and watcher count; the latencies go to the plot.
    fn table(&self, figures: &[Vec<Figures>], report: &mut Report) -> Table {
        let mut table = Table::new(
            "",
            &[
                "server",
                "watchers",
                "writes/s, delivered to every watcher",
                "write → watcher p50",
                "write → watcher p99",
            ],
        );
        for (t, name) in NAMES.iter().enumerate() {
            for (i, n) in self.load.watchers.iter().enumerate() {
                let f = &figures[t][i];
                table.row(vec![
                    name.to_string(),
                    count(*n),
                    f.writes_per_second.show(num),
                    f.p50.show(micros),
                    f.p99.show(micros),
                ]);
                let server = if t == 0 { "demo API" } else { "kube-apiserver" };
                report.series(
                    "write → watcher over HTTP",
                    &format!("{server}, {} watcher{}", count(*n), plural(*n)),
                    f.latency.shape(),
                );
            }
        }
        table
    }

    /// The headlines, demo beside kube-apiserver; returns the summary's lines.
    fn compare(&self, figures: &[Vec<Figures>], report: &mut Report) -> Vec<String> {
        let mut summary = Vec::new();
        for (i, n) in self.load.watchers.iter().enumerate() {
            let (demo, kube) = (&figures[0][i], &figures[1][i]);
            let latency = ratio(&kube.p50, &demo.p50);
            report.ratio_headline(
                format!(
                    "demo API ÷ kube-apiserver + etcd, writes/s delivered to {} watcher{}",
                    count(*n),
                    plural(*n)
                ),
                &demo.writes_per_second,
                &kube.writes_per_second,
            );
            if i + 1 == self.load.watchers.len() {
                report.headline(
                    format!(
                        "kube-apiserver + etcd ÷ demo API, write → watcher p50 at {} watchers",
                        count(*n)
                    ),
                    latency.show(times),
                );
            }
            summary.push(format!(
                "{} watchers: demo {} writes/s, p50 {}; kube-apiserver {} writes/s, p50 {} (p50 ratio kube ÷ demo {})",
                count(*n),
                num(demo.writes_per_second.median()),
                micros(demo.p50.median()),
                num(kube.writes_per_second.median()),
                micros(kube.p50.median()),
                latency.show(times)
            ));
        }
        summary
    }

    fn method(&self) -> String {
        format!(
            "Both servers on loopback, on the same machine, in the same run: the demo API \
             (`watchlife-demo-apiserver` over `ControlPlane::new(Clock::system())`, plain HTTP, \
             served from the bench) and kube-apiserver v1.20.2 over etcd 3.4 (TLS, a bearer \
             token; started by the tests' `RealCluster`). For each, N watches of the \
             `default` namespace's configmaps, then {WRITERS} writers merge-patch a configmap \
             each: {} writes in batches of {BATCH}, each batch waited for until every watcher \
             has read it (writes/s); then {} writes at {} writes/s, timed from send to each \
             watcher's read (latency). {} runs against the same two servers.",
            num(self.load.writes as f64),
            num(self.load.paced_writes as f64),
            num(PACED_RATE),
            self.load.runs
        )
    }
}

struct Measured {
    writes_per_second: f64,
    latency: Histogram,
}

/// What the watcher tasks share.
struct Watching {
    lines: AtomicU64,
    recording: AtomicBool,
    /// When each numbered write was sent (micros), by its number.
    sent: Vec<AtomicU64>,
    latency: Histogram,
    /// Which measurement this is, in the bench's run.
    measurement: u64,
}

/// One server with `n` watchers: throughput, then latency.
async fn measure(api: &Api, n: usize, config: &Config) -> Result<Measured, String> {
    let rv = prepare(api).await?;
    let total = config.load.writes.div_ceil(BATCH) * BATCH + config.load.paced_writes + 1;
    let shared = Arc::new(Watching {
        lines: AtomicU64::new(0),
        recording: AtomicBool::new(false),
        sent: (0..total).map(|_| AtomicU64::new(0)).collect(),
        latency: Histogram::new(),
        measurement: {
            static MEASUREMENTS: AtomicU64 = AtomicU64::new(0);
            MEASUREMENTS.fetch_add(1, Ordering::Relaxed)
        },
    });
    let path = format!("{NAMESPACE_PATH}?watch=1&resourceVersion={rv}&timeoutSeconds=1800");
    let watchers = open_watchers(api, &path, n, &shared).await?;
    let result = async {
        let (writes_per_second, written) = throughput(api, n, config, &shared).await?;
        paced(api, n, config, &shared, written).await?;
        Ok::<f64, String>(writes_per_second)
    }
    .await;
    for w in &watchers {
        w.abort();
    }
    let latency = Histogram::new();
    latency.merge(&shared.latency);
    Ok(Measured {
        writes_per_second: result?,
        latency,
    })
}

/// Creates one configmap per writer (a second run finds them) and returns
/// the resourceVersion of a LIST after them.
async fn prepare(api: &Api) -> Result<String, String> {
    for w in 0..WRITERS {
        let body = serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("bench-writer-{w}"), "namespace": "default"},
            "data": {"n": "0"}
        });
        let (code, _) = api
            .request("POST", NAMESPACE_PATH, Some(body.to_string()))
            .await?;
        if code != 201 && code != 409 {
            return Err(format!("creating a configmap: {code}"));
        }
    }
    let (code, list) = api.request("GET", NAMESPACE_PATH, None).await?;
    if code != 200 {
        return Err(format!("listing configmaps: {code}"));
    }
    serde_json::from_slice::<serde_json::Value>(&list)
        .ok()
        .and_then(|v| v["metadata"]["resourceVersion"].as_str().map(String::from))
        .ok_or_else(|| "a LIST without a resourceVersion".to_string())
}

/// Opens `n` watches of `path`, [`OPENING`] at a time (one after the other,
/// a thousand TLS handshakes would take most of a minute), each read by a task.
async fn open_watchers(
    api: &Api,
    path: &str,
    n: usize,
    shared: &Arc<Watching>,
) -> Result<Vec<tokio::task::JoinHandle<()>>, String> {
    let mut watchers = Vec::with_capacity(n);
    let mut opening = tokio::task::JoinSet::new();
    for k in 0..n {
        let (api, path) = (api.clone(), path.to_string());
        opening.spawn(async move { api.watch(&path).await });
        if opening.len() >= OPENING || k + 1 == n {
            while let Some(opened) = opening.join_next().await {
                let body = opened.map_err(|e| e.to_string())??;
                watchers.push(tokio::spawn(read_watch(body, shared.clone())));
            }
        }
    }
    Ok(watchers)
}

/// Throughput: batches of writes from [`WRITERS`] writers, each batch
/// delivered to every watcher. Returns writes/s and the writes made.
async fn throughput(
    api: &Api,
    n: usize,
    config: &Config,
    shared: &Arc<Watching>,
) -> Result<(f64, usize), String> {
    let mut expected = 0u64;
    let mut number = 0usize;
    let start = Instant::now();
    let batches = config.load.writes.div_ceil(BATCH);
    for _ in 0..batches {
        let mut writers = Vec::new();
        for w in 0..WRITERS {
            let numbers: Vec<usize> = (0..BATCH / WRITERS)
                .map(|k| number + w + k * WRITERS)
                .collect();
            let (api, shared) = (api.clone(), shared.clone());
            writers.push(tokio::spawn(async move {
                for m in numbers {
                    write(&api, w, m, &shared).await?;
                }
                Ok::<(), String>(())
            }));
        }
        for writer in writers {
            writer.await.map_err(|e| e.to_string())??;
        }
        number += BATCH;
        expected += (BATCH * n) as u64;
        delivered(shared, expected).await?;
    }
    Ok((
        (batches * BATCH) as f64 / start.elapsed().as_secs_f64(),
        number,
    ))
}

/// Latency: one writer at [`PACED_RATE`], its writes numbered from `number`,
/// recorded as every watcher reads them.
async fn paced(
    api: &Api,
    n: usize,
    config: &Config,
    shared: &Arc<Watching>,
    mut number: usize,
) -> Result<(), String> {
    // Every watcher has had every write before these.
    let mut expected = (number * n) as u64;
    shared.recording.store(true, Ordering::Relaxed);
    let period = Duration::from_secs_f64(1.0 / PACED_RATE);
    let paced_start = tokio::time::Instant::now();
    for k in 0..config.load.paced_writes {
        tokio::time::sleep_until(paced_start + period * k as u32).await;
        write(api, 0, number, shared).await?;
        number += 1;
    }
    expected += (config.load.paced_writes * n) as u64;
    delivered(shared, expected).await?;
    shared.recording.store(false, Ordering::Relaxed);
    Ok(())
}

/// Merge-patches writer `w`'s configmap with the write's number. The
/// measurement's own number goes in too, so that no write repeats the value
/// it finds: kube-apiserver sends no event for a write that changes nothing.
async fn write(api: &Api, w: usize, number: usize, shared: &Watching) -> Result<(), String> {
    let body = format!(
        r#"{{"data":{{"m":"{}","n":"{number}"}}}}"#,
        shared.measurement
    );
    shared.sent[number].store(now_micros(), Ordering::Relaxed);
    let (code, _) = api
        .request_typed(
            "PATCH",
            &format!("{NAMESPACE_PATH}/bench-writer-{w}"),
            "application/merge-patch+json",
            body,
        )
        .await?;
    if code == 200 {
        Ok(())
    } else {
        Err(format!("a write was answered {code}"))
    }
}

/// Waits until the watchers have read `expected` lines between them.
async fn delivered(shared: &Watching, expected: u64) -> Result<(), String> {
    let deadline = Instant::now() + DELIVERY_TIMEOUT;
    while shared.lines.load(Ordering::Relaxed) < expected {
        if Instant::now() > deadline {
            return Err(format!(
                "the watchers read {} of {expected} events",
                shared.lines.load(Ordering::Relaxed)
            ));
        }
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    Ok(())
}

/// Reads one watch to its end, a line at a time, without parsing it.
async fn read_watch(mut body: hyper::body::Incoming, shared: Arc<Watching>) {
    let mut pending: Vec<u8> = Vec::new();
    while let Some(Ok(frame)) = body.frame().await {
        let Ok(data) = frame.into_data() else {
            continue;
        };
        pending.extend_from_slice(&data);
        while let Some(end) = pending.iter().position(|b| *b == b'\n') {
            let now = now_micros();
            if shared.recording.load(Ordering::Relaxed)
                && let Some(number) = written_number(&pending[..end])
                && let Some(sent) = shared.sent.get(number)
            {
                let at = sent.load(Ordering::Relaxed);
                if at > 0 {
                    shared.latency.record(now.saturating_sub(at));
                }
            }
            pending.drain(..=end);
            shared.lines.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The write number in an event line: the value of `"n":"…"` in the data.
fn written_number(line: &[u8]) -> Option<usize> {
    let key = b"\"n\":\"";
    let at = line.windows(key.len()).rposition(|w| w == key)? + key.len();
    let digits = line[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&line[at..at + digits])
        .ok()?
        .parse()
        .ok()
}

/// The tests' HTTP client for one API server, with the calls the bench
/// makes: whole answers as bytes (never parsed), and watches read raw.
#[derive(Clone)]
pub struct Api(Client);

impl Api {
    pub fn plain(base: &str) -> Api {
        Api(Client::new(base, None))
    }

    pub fn tls(base: &str, token: &str, ca: &std::path::Path) -> Api {
        Api(Client::with_ca(base, Some(token.to_string()), ca))
    }

    pub async fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<String>,
    ) -> Result<(u16, Bytes), String> {
        let content_type = body.as_ref().map(|_| "application/json");
        self.whole(method, path, content_type, body).await
    }

    pub async fn request_typed(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: String,
    ) -> Result<(u16, Bytes), String> {
        self.whole(method, path, Some(content_type), Some(body))
            .await
    }

    async fn whole(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: Option<String>,
    ) -> Result<(u16, Bytes), String> {
        let response = self
            .0
            .send(
                method,
                path,
                content_type,
                body.unwrap_or_default().into(),
                None,
            )
            .await
            .map_err(|e| format!("{method} {path}: {e}"))?;
        let code = response.status().as_u16();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok((code, bytes))
    }

    /// Opens a watch; its body is read by the caller as it comes.
    pub async fn watch(&self, path: &str) -> Result<hyper::body::Incoming, String> {
        let response = self
            .0
            .send("GET", path, None, Vec::new(), None)
            .await
            .map_err(|e| format!("GET {path}: {e}"))?;
        if response.status() != 200 {
            return Err(format!("a watch was answered {}", response.status()));
        }
        Ok(response.into_body())
    }
}

#[cfg(test)]
mod tests {
    use super::written_number;

    #[test]
    fn finds_the_write_number_in_a_line() {
        let line = br#"{"type":"MODIFIED","object":{"data":{"n":"4711"},"metadata":{"name":"bench-writer-1"}}}"#;
        assert_eq!(written_number(line), Some(4711));
        assert_eq!(written_number(b"{\"type\":\"BOOKMARK\"}"), None);
    }
}
