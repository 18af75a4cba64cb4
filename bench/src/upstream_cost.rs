//! What viewers cost the cluster: watches open at a real kube-apiserver, and
//! the CPU of kube-apiserver and etcd, with 1, 100 and 1,000 viewers of
//! watchlife, against a naive relay that opens one watch per viewer.
//!
//! Both relay the `default` namespace's configmaps over WebSocket:
//!
//! - **watchlife**: `watchlife --kubeconfig K --resources configmaps
//!   --namespace default`, one list-watch whatever the number of viewers;
//! - **a naive relay**, in the bench: for each WebSocket viewer it opens a
//!   watch of its own at the apiserver (`GET …/configmaps?watch=1`, as
//!   `kubectl get -w` does) and forwards each line as a message.
//!
//! Viewers join in steps; at each step, while the bench updates a configmap
//! at [`WRITE_RATE`] writes/s for [`WINDOW`], it reads the apiserver's
//! `apiserver_registered_watchers` for configmaps (less what it was before
//! the relay started: the apiserver's own informers) and the CPU time of
//! both server processes, and counts the updates each viewer received.

use crate::apiserver::Api;
use crate::crowd::Crowd;
use crate::machine::cpu_time;
use crate::process::Watchlife;
use crate::report::{Report, Section, Table};
use crate::scenario::{Runs, Scenario, stopped_early};
use crate::stats::{Spread, count, num, percent, share};
use futures_util::{SinkExt, StreamExt};
use http_body_util::BodyExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;

/// Writes per second while a step is measured: enough to make every watch
/// work, few enough that 1,000 naive watches keep up on two cores.
const WRITE_RATE: f64 = 20.0;
/// How long each step is measured.
const WINDOW: Duration = Duration::from_secs(6);
/// Viewers connecting at once.
const CONNECTING: usize = 32;
/// Longest wait for the apiserver's count of watchers to stand still.
const SETTLE_MAX: Duration = Duration::from_secs(30);
const PATH: &str = "/api/v1/namespaces/default/configmaps";
const NAME: &str = "bench-upstream";

/// The two relays, in the order of the table.
const RELAYS: [&str; 2] = ["watchlife", "naive relay (one watch per viewer)"];

#[derive(Debug, Clone)]
pub struct Config {
    pub runs: usize,
    pub watchlife: PathBuf,
    pub viewers: Vec<usize>,
}

#[derive(Default)]
pub struct Figures {
    watches: Spread,
    apiserver_cpu: Spread,
    etcd_cpu: Spread,
    relay_cpu: Spread,
    delivered: Spread,
}

/// Per relay of [`RELAYS`], per viewer count.
type Gathered = Runs<Vec<Vec<Figures>>>;

impl Scenario for Config {
    type Figures = Gathered;

    fn measure(&self) -> Gathered {
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        let mut gathered: Gathered = Runs {
            figures: RELAYS
                .iter()
                .map(|_| self.viewers.iter().map(|_| Figures::default()).collect())
                .collect(),
            failure: None,
        };
        runtime.block_on(async {
            progress!("upstream cost: starting etcd and kube-apiserver");
            let cluster = watchlife_tests::real_cluster::RealCluster::start().await;
            let api = Api::tls(cluster.base_url(), cluster.token(), cluster.ca_cert());
            let servers = Servers {
                api,
                pids: cluster.pids(),
            };
            let kubeconfig = cluster.kubeconfig().display().to_string();
            gathered.failure = self
                .drive(&servers, &kubeconfig, &mut gathered.figures)
                .await
                .err();
        });
        gathered
    }

    fn report(&self, gathered: Gathered, report: &mut Report, seconds: f64) {
        let figures = &gathered.figures;
        self.headlines(figures, report);
        let mut notes = vec![
            "The naive relay runs in the bench, so its CPU is the bench's (its viewers' reading \
             included); watchlife's is its own process's. etcd does little here whatever the \
             number of watches: the apiserver serves every watch from its watch cache, which holds \
             one etcd watch per resource. What grows with a naive relay's viewers is the \
             apiserver's work: one more watcher to dispatch each event to, one more encoding and \
             TLS stream per viewer."
                .to_string(),
        ];
        notes.extend(stopped_early(gathered.failure.as_deref()));
        report.sections.push(Section {
            title: "Upstream cost of viewers: watchlife beside a naive relay".into(),
            method: self.method(),
            tables: vec![self.table(figures)],
            notes,
            summary: self.summary(figures),
            seconds,
        });
    }
}

impl Config {
    /// Every run, watchlife then the naive relay; stops at the first failure
    /// and says which relay had it.
    async fn drive(
        &self,
        servers: &Servers,
        kubeconfig: &str,
        figures: &mut [Vec<Figures>],
    ) -> Result<(), String> {
        for run in 0..self.runs {
            for (r, relay) in RELAYS.iter().enumerate() {
                progress!("upstream cost: run {}/{}, {relay}", run + 1, self.runs);
                let outcome = if r == 0 {
                    steps_with_watchlife(self, servers, kubeconfig, &mut figures[r]).await
                } else {
                    steps_with_naive_relay(self, servers, &mut figures[r]).await
                };
                outcome.map_err(|e| {
                    progress!("upstream cost failed: {e}");
                    format!("{relay}: {e}")
                })?;
            }
        }
        Ok(())
    }

    fn table(&self, figures: &[Vec<Figures>]) -> Table {
        let mut table = Table::new(
            "",
            &[
                "relay",
                "viewers",
                "watches open at the apiserver",
                "kube-apiserver CPU (100% = one core)",
                "etcd CPU",
                "the relay's CPU",
                "updates each viewer got ÷ written",
            ],
        );
        for (r, relay) in RELAYS.iter().enumerate() {
            for (f, n) in figures[r].iter().zip(&self.viewers) {
                table.row(vec![
                    relay.to_string(),
                    count(*n),
                    f.watches.show(num),
                    f.apiserver_cpu.show(percent),
                    f.etcd_cpu.show(percent),
                    f.relay_cpu.show(percent),
                    f.delivered.show(share),
                ]);
            }
        }
        table
    }

    /// The naive relay beside watchlife, at the most viewers.
    fn headlines(&self, figures: &[Vec<Figures>], report: &mut Report) {
        let last = self.viewers.len().saturating_sub(1);
        let (Some(ours), Some(naive)) = (figures[0].get(last), figures[1].get(last)) else {
            return;
        };
        let n = count(self.viewers[last]);
        report.ratio_headline(
            format!("upstream: kube-apiserver CPU with {n} viewers, naive relay ÷ watchlife"),
            &naive.apiserver_cpu,
            &ours.apiserver_cpu,
        );
        report.ratio_headline(
            format!(
                "upstream: watches open at the apiserver with {n} viewers, naive relay ÷ watchlife"
            ),
            &naive.watches,
            &ours.watches,
        );
    }

    fn summary(&self, figures: &[Vec<Figures>]) -> Vec<String> {
        let mut summary = Vec::new();
        for (r, relay) in RELAYS.iter().enumerate() {
            for (f, n) in figures[r].iter().zip(&self.viewers) {
                summary.push(format!(
                    "{relay}, {} viewers: {} watches, kube-apiserver CPU {:.0}%, etcd {:.0}%",
                    count(*n),
                    num(f.watches.median()),
                    f.apiserver_cpu.median(),
                    f.etcd_cpu.median()
                ));
            }
        }
        summary
    }

    fn method(&self) -> String {
        format!(
            "kube-apiserver v1.20.2 over etcd 3.4 on loopback. watchlife (`{} --kubeconfig K \
             --resources configmaps --namespace default`) and a naive relay in the bench (one \
             `GET …/configmaps?watch=1` at the apiserver per WebSocket viewer, each line \
             forwarded as a message), each with real WebSocket viewers joining in steps of {}. \
             At each step the bench updates a configmap at {WRITE_RATE} writes/s for {} s and \
             reads, over that window, `apiserver_registered_watchers` for configmaps (less its \
             value before the relay started), the CPU time of kube-apiserver, etcd and the \
             relay, and the updates each viewer received. {} runs.",
            self.watchlife.display(),
            self.viewers
                .iter()
                .map(|n| count(*n))
                .collect::<Vec<_>>()
                .join(", "),
            WINDOW.as_secs(),
            self.runs
        )
    }
}

/// The apiserver as the bench reaches it, and the pids of kube-apiserver and etcd.
struct Servers {
    api: Api,
    pids: [u32; 2],
}

impl Servers {
    /// Watchers of configmaps registered at the apiserver.
    async fn configmap_watchers(&self) -> Result<f64, String> {
        let (code, body) = self.api.request("GET", "/metrics", None).await?;
        if code != 200 {
            return Err(format!("the apiserver's /metrics answered {code}"));
        }
        Ok(String::from_utf8_lossy(&body)
            .lines()
            .filter(|l| l.starts_with("apiserver_registered_watchers{"))
            .filter(|l| l.contains("kind=\"ConfigMap\""))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum())
    }

    /// Watchers of configmaps once their number stands still: the watches of
    /// the relay measured before take a moment to be unregistered.
    async fn settled_watchers(&self) -> Result<f64, String> {
        let deadline = Instant::now() + SETTLE_MAX;
        let mut last = self.configmap_watchers().await?;
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let now = self.configmap_watchers().await?;
            if now == last || Instant::now() > deadline {
                return Ok(now);
            }
            last = now;
        }
    }
}

async fn steps_with_watchlife(
    config: &Config,
    servers: &Servers,
    kubeconfig: &str,
    figures: &mut [Figures],
) -> Result<(), String> {
    let before = servers.settled_watchers().await?;
    let bridge = Watchlife::start_on_configmaps(
        &config.watchlife,
        kubeconfig,
        &["--namespace", "default", "--max-viewers", "100000"],
    )?;
    let url = bridge.ws_url();
    steps(config, servers, before, bridge.pid(), &url, figures).await
}

async fn steps_with_naive_relay(
    config: &Config,
    servers: &Servers,
    figures: &mut [Figures],
) -> Result<(), String> {
    let before = servers.settled_watchers().await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let url = format!(
        "ws://{}/",
        listener.local_addr().map_err(|e| e.to_string())?
    );
    let relay = tokio::spawn(naive_relay(listener, servers.api.clone()));
    let result = steps(config, servers, before, std::process::id(), &url, figures).await;
    relay.abort();
    result
}

/// Adds viewers of `url` step by step and measures each step.
async fn steps(
    config: &Config,
    servers: &Servers,
    watchers_before: f64,
    relay_pid: u32,
    url: &str,
    figures: &mut [Figures],
) -> Result<(), String> {
    let updates = Arc::new(AtomicU64::new(0));
    let mut crowd = Crowd::new(CONNECTING);
    let object = |n: u64| crate::objects::numbered_configmap(NAME, n);
    let (code, _) = servers.api.request("POST", PATH, Some(object(0))).await?;
    if code != 201 && code != 409 {
        return Err(format!("creating the configmap was answered {code}"));
    }
    let mut written = 0;
    for (f, &n) in figures.iter_mut().zip(&config.viewers) {
        crowd
            .grow_to(n, |permit| view(url.to_string(), updates.clone(), permit))
            .await;
        // Each viewer has its list (or snapshot) and is watching.
        tokio::time::sleep(Duration::from_secs(2)).await;

        let watches = servers.configmap_watchers().await? - watchers_before;
        let cpu = |pid| cpu_time(pid).unwrap_or_default();
        let [apiserver, etcd] = servers.pids;
        let (etcd0, apiserver0, relay0) = (cpu(etcd), cpu(apiserver), cpu(relay_pid));
        let updates0 = updates.load(Ordering::Relaxed);
        let t0 = Instant::now();
        let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / WRITE_RATE));
        let mut writes = 0;
        while t0.elapsed() < WINDOW {
            ticks.tick().await;
            written += 1;
            let (code, _) = servers
                .api
                .request("PUT", &format!("{PATH}/{NAME}"), Some(object(written)))
                .await?;
            if code != 200 {
                return Err(format!("a write was answered {code}"));
            }
            writes += 1;
        }
        // The last writes reach every viewer.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let seconds = t0.elapsed().as_secs_f64();
        let of_a_core = |a: Duration, b: Duration| (a - b).as_secs_f64() / seconds * 100.0;
        f.watches.push(watches);
        f.etcd_cpu.push(of_a_core(cpu(etcd), etcd0));
        f.apiserver_cpu.push(of_a_core(cpu(apiserver), apiserver0));
        f.relay_cpu.push(of_a_core(cpu(relay_pid), relay0));
        let got = (updates.load(Ordering::Relaxed) - updates0) as f64;
        f.delivered.push(got / n as f64 / writes as f64);
    }
    Ok(())
}

/// One viewer: counts the messages that carry an update (`MODIFIED`, in a
/// watchlife frame or a raw watch line alike).
async fn view(url: String, updates: Arc<AtomicU64>, permit: tokio::sync::OwnedSemaphorePermit) {
    let socket = tokio_tungstenite::connect_async(&url).await;
    drop(permit);
    let Ok((mut ws, _)) = socket else { return };
    while let Some(Ok(message)) = ws.next().await {
        if let Message::Text(text) = message
            && text.as_str().contains("MODIFIED")
        {
            updates.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The naive relay: every WebSocket connection gets a watch of its own at
/// the apiserver, and every line of it as one message. Aborting it closes
/// every connection and its watch.
async fn naive_relay(listener: tokio::net::TcpListener, api: Api) {
    let mut connections = tokio::task::JoinSet::new();
    while let Ok((tcp, _)) = listener.accept().await {
        let api = api.clone();
        connections.spawn(async move {
            let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else {
                return;
            };
            let Ok(mut body) = api.watch(&format!("{PATH}?watch=1")).await else {
                let _ = ws.close(None).await;
                return;
            };
            let mut pending = Vec::new();
            while let Some(Ok(frame)) = body.frame().await {
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                pending.extend_from_slice(&data);
                while let Some(i) = pending.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=i).collect();
                    let text = String::from_utf8_lossy(&line[..i]).into_owned();
                    if ws.send(Message::Text(text.into())).await.is_err() {
                        return;
                    }
                }
            }
        });
    }
}
