//! With `--etcd-endpoints`, which of two reports of one write reaches
//! watchlife first: etcd's own watch notification (the etcd mark) or the
//! apiserver's watch event, decoded by the Reflector (the Reflector mark).
//!
//! One kube-apiserver v1.20.2 over etcd 3.4 on loopback (the tests'
//! harness), and `watchlife --resources configmaps --namespace default
//! --etcd-endpoints URL` beside it. Per run, the bench creates [`WRITES`]
//! configmaps one at a time at [`RATE`] writes/s, then [`WRITES`] more back
//! to back (each sent when the previous one was answered), and reads from a
//! WebSocket viewer both marks of each created configmap's event: both are
//! stamped by watchlife's one clock. (Reflector − etcd) is positive when
//! etcd's notification came first; negative when the apiserver's event did,
//! and the etcd mark then is whatever watchlife waited for it (at most its
//! 250 ms; an event still without one counts as unmatched).

use crate::apiserver::Api;
use crate::process::BridgeRuns;
use crate::process::Watchlife;
use crate::report::{Report, Section, Table};
use crate::scenario::{Runs, Scenario, stopped_early};
use crate::stats::{Spread, micros};
use futures_util::StreamExt;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;
use watchlife_protocol::{FrameBody, ServerFrame, Stage};

/// Configmaps created per run and pace.
const WRITES: usize = 300;
/// Writes per second when paced: each event passes an idle pipeline.
const RATE: f64 = 20.0;
/// How long the viewer gets after the last write.
const DRAIN: Duration = Duration::from_secs(2);
/// How long watchlife may take to watch both the apiserver and etcd.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
const PATH: &str = "/api/v1/namespaces/default/configmaps";

/// The two paces, in the order of the table.
const PACES: [&str; 2] = [
    "one at a time, 20 writes/s",
    "back to back (the next when one is answered)",
];

#[derive(Debug, Clone)]
pub struct Config {
    pub bridge: BridgeRuns,
}

/// One pace's figures over the runs.
#[derive(Default)]
pub struct Figures {
    seen: Spread,
    etcd_first: Spread,
    reflector_first: Spread,
    unmatched: Spread,
    p50: Spread,
    p99: Spread,
    lowest: Spread,
}

/// Each event's marks, by resourceVersion: (etcd, Reflector), µs.
type Marks = Arc<Mutex<HashMap<String, (Option<u64>, u64)>>>;

/// Per pace of [`PACES`].
type Gathered = Runs<Vec<Figures>>;

impl Scenario for Config {
    type Figures = Gathered;

    fn measure(&self) -> Gathered {
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        let mut figures: Vec<Figures> = PACES.iter().map(|_| Figures::default()).collect();
        let failure = runtime.block_on(self.drive(&mut figures)).err();
        Runs { figures, failure }
    }

    fn report(&self, gathered: Gathered, report: &mut Report, seconds: f64) {
        let Runs { figures, failure } = gathered;
        report
            .sections
            .push(section(self, &figures, failure, seconds));
    }
}

impl Config {
    /// Starts the cluster and measures every run; stops at the first failure.
    async fn drive(&self, figures: &mut [Figures]) -> Result<(), String> {
        progress!("etcd order: starting etcd and kube-apiserver");
        let cluster = watchlife_tests::real_cluster::RealCluster::start().await;
        let api = Api::tls(cluster.base_url(), cluster.token(), cluster.ca_cert());
        for run in 0..self.bridge.runs {
            progress!("etcd order: run {}/{}", run + 1, self.bridge.runs);
            let runs = measure(
                self,
                &api,
                cluster.kubeconfig(),
                cluster.etcd_endpoint(),
                run,
            )
            .await
            .inspect_err(|e| progress!("etcd order failed: {e}"))?;
            for (f, (intervals, unmatched)) in figures.iter_mut().zip(runs) {
                f.add(&intervals, unmatched);
            }
        }
        Ok(())
    }
}

impl Figures {
    /// Adds one run: the (Reflector − etcd) intervals of the matched events
    /// and the count of events with no etcd mark.
    fn add(&mut self, intervals: &[i64], unmatched: usize) {
        let total = intervals.len() + unmatched;
        if total == 0 {
            return;
        }
        let share = |n: usize| n as f64 / total as f64;
        let mut sorted = intervals.to_vec();
        sorted.sort_unstable();
        self.seen.push(total as f64);
        self.etcd_first
            .push(share(sorted.iter().filter(|d| **d >= 0).count()));
        self.reflector_first
            .push(share(sorted.iter().filter(|d| **d < 0).count()));
        self.unmatched.push(share(unmatched));
        if let Some(&lowest) = sorted.first() {
            self.p50.push(quantile(&sorted, 0.5));
            self.p99.push(quantile(&sorted, 0.99));
            self.lowest.push(lowest as f64);
        }
    }
}

/// The sample of rank ⌈q·n⌉ in `sorted` (nearest rank).
fn quantile(sorted: &[i64], q: f64) -> f64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1] as f64
}

fn section(config: &Config, figures: &[Figures], failure: Option<String>, seconds: f64) -> Section {
    let percent = |v: f64| format!("{:.1}%", v * 100.0);
    let mut table = Table::new(
        "",
        &[
            "configmaps created",
            "events seen",
            "etcd first (Reflector − etcd ≥ 0)",
            "Reflector first (negative)",
            "no etcd mark",
            "Reflector − etcd: median",
            "p99",
            "lowest",
        ],
    );
    for (f, pace) in figures.iter().zip(PACES) {
        table.row(vec![
            pace.into(),
            f.seen.show(|v| format!("{v:.0}")),
            f.etcd_first.show(percent),
            f.reflector_first.show(percent),
            f.unmatched.show(percent),
            f.p50.show(micros),
            f.p99.show(micros),
            f.lowest.show(micros),
        ]);
    }
    let mut notes = vec![
        "**What the etcd mark is.** On a real cluster watchlife cannot see etcd commit: the \
         mark is the moment etcd's watch notification (gRPC, the `etcd-client` crate) reached \
         watchlife, and the page says so (\"notified watchlife\"). The apiserver's event \
         comes from its own watch on the same etcd, then through its watch cache and one more \
         HTTP stream; a positive interval is that detour, a negative one an event whose etcd \
         notification was the later of the two."
            .to_string(),
    ];
    notes.extend(stopped_early(failure.as_deref()));
    let summary = figures
        .iter()
        .zip(PACES)
        .filter(|(f, _)| !f.p50.runs.is_empty())
        .map(|(f, pace)| {
            format!(
                "etcd notified before the Reflector ({pace}): {:.1}%, Reflector − etcd p50 {} p99 {}",
                f.etcd_first.median() * 100.0,
                micros(f.p50.median()),
                micros(f.p99.median())
            )
        })
        .collect();
    Section {
        title: "etcd's notification beside the Reflector's event on a real kube-apiserver".into(),
        method: format!(
            "kube-apiserver v1.20.2 over etcd 3.4, both on loopback (the apiserver over TLS, \
             etcd plain). `{} --kubeconfig K --resources configmaps --namespace default \
             --etcd-endpoints URL` and a WebSocket viewer of it. Per run the bench creates \
             {WRITES} configmaps at each pace and takes, from each created configmap's event \
             frame, its `etcd` mark (when etcd's watch notification of the revision reached \
             watchlife) and its `reflector` mark (when the Reflector decoded the apiserver's \
             event); both are stamped by watchlife's one clock. {} runs.",
            config.bridge.watchlife.display(),
            config.bridge.runs
        ),
        tables: vec![table],
        notes,
        summary,
        seconds,
    }
}

/// One run: per pace, the (Reflector − etcd) intervals (µs) of the events
/// matched to their etcd write, and how many were not.
async fn measure(
    config: &Config,
    api: &Api,
    kubeconfig: &Path,
    etcd: &str,
    run: usize,
) -> Result<[(Vec<i64>, usize); 2], String> {
    let kubeconfig = kubeconfig.display().to_string();
    let bridge = Watchlife::start_on_configmaps(
        &config.bridge.watchlife,
        &kubeconfig,
        &["--namespace", "default", "--etcd-endpoints", etcd],
    )?;
    let marks: Marks = Default::default();
    let reading = tokio::spawn(view(bridge.ws_url(), marks.clone()));
    ready(api, &marks, run).await?;

    let mut out = [(Vec::new(), 0), (Vec::new(), 0)];
    let mut written = [Vec::new(), Vec::new()];
    let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / RATE));
    for (pace, written) in written.iter_mut().enumerate() {
        for n in 0..WRITES {
            if pace == 0 {
                ticks.tick().await;
            }
            written.push(create(api, &format!("bench-etcd-{run}-{pace}-{n}")).await?);
        }
    }
    tokio::time::sleep(DRAIN).await;
    reading.abort();
    let marks = marks.lock().expect("not poisoned");
    for ((intervals, unmatched), written) in out.iter_mut().zip(&written) {
        for rv in written {
            match marks.get(rv) {
                Some((Some(etcd), reflector)) => intervals.push(*reflector as i64 - *etcd as i64),
                Some((None, _)) => *unmatched += 1,
                None => {}
            }
        }
    }
    Ok(out)
}

/// Waits until watchlife delivers an event with its etcd mark: it watches
/// both the apiserver and etcd.
async fn ready(api: &Api, marks: &Marks, run: usize) -> Result<(), String> {
    let deadline = Instant::now() + READY_TIMEOUT;
    for n in 0.. {
        let rv = create(api, &format!("bench-etcd-{run}-ready-{n}")).await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let matched = marks
            .lock()
            .expect("not poisoned")
            .get(&rv)
            .is_some_and(|(etcd, _)| etcd.is_some());
        if matched {
            return Ok(());
        }
        if Instant::now() > deadline {
            break;
        }
    }
    Err(format!(
        "watchlife delivered no event with an etcd mark within {READY_TIMEOUT:?}"
    ))
}

/// Creates configmap `name`; its resourceVersion.
async fn create(api: &Api, name: &str) -> Result<String, String> {
    let (code, body) = api
        .request(
            "POST",
            PATH,
            Some(crate::objects::numbered_configmap(name, 0)),
        )
        .await?;
    if code != 201 {
        return Err(format!("creating {name} was answered {code}"));
    }
    serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["metadata"]["resourceVersion"].as_str().map(String::from))
        .ok_or_else(|| format!("the answer to creating {name} has no resourceVersion"))
}

/// Reads `watchlife`'s stream: each watch event's etcd and Reflector marks.
async fn view(url: String, marks: Marks) {
    let Ok((mut ws, _)) = tokio_tungstenite::connect_async(&url).await else {
        return;
    };
    while let Some(Ok(message)) = ws.next().await {
        let Message::Text(text) = message else {
            continue;
        };
        let Ok(frame) = serde_json::from_str::<ServerFrame>(text.as_str()) else {
            continue;
        };
        if let FrameBody::Event(event) = frame.body
            && !event.initial
            && let Some(reflector) = event.stages.get(&Stage::Reflector)
        {
            let etcd = event.stages.get(&Stage::Etcd).map(|m| m.at);
            marks
                .lock()
                .expect("not poisoned")
                .insert(event.resource_version, (etcd, reflector.at));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_intervals_count_as_reflector_first() {
        let mut f = Figures::default();
        f.add(&[-5, 10, 20, 30], 1);
        assert_eq!(f.seen.median(), 5.0);
        assert_eq!(f.etcd_first.median(), 0.6);
        assert_eq!(f.reflector_first.median(), 0.2);
        assert_eq!(f.unmatched.median(), 0.2);
        assert_eq!(f.p50.median(), 10.0);
        assert_eq!(f.p99.median(), 30.0);
        assert_eq!(f.lowest.median(), -5.0);
    }
}
