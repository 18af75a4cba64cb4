//! `/metrics` of the bridge and of the demo API, read by the reference
//! parser of the format: Python's `prometheus_client` (its OpenMetrics text
//! parser, since that is the `Content-Type` both serve). A family missing, a
//! label renamed, a counter that is not one, or any line the parser rejects
//! fails here.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;
use watchlife_protocol::{FrameBody, Stage};
use watchlife_tests::bridge::Bridge;
use watchlife_tests::ws::Viewer;

/// How long the demo may take to produce what is waited for.
const WAIT: Duration = Duration::from_secs(60);

/// Parses the exposition on stdin with prometheus_client's OpenMetrics
/// parser and prints every family as JSON: name, type, and each sample's
/// name, labels and value. The parser raises on anything invalid.
const PARSE: &str = r#"
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
families = [
    {"name": f.name, "type": f.type,
     "samples": [{"name": s.name, "labels": s.labels, "value": s.value} for s in f.samples]}
    for f in text_string_to_metric_families(sys.stdin.read())
]
print(json.dumps(families))
"#;

/// One family as the parser saw it.
#[derive(Debug)]
struct Family {
    kind: String,
    samples: Vec<(String, BTreeMap<String, String>, f64)>,
}

impl Family {
    /// The label names of its samples (`le` included for histogram buckets).
    fn label_names(&self) -> BTreeSet<String> {
        self.samples
            .iter()
            .flat_map(|(_, labels, _)| labels.keys().cloned())
            .collect()
    }

    /// The values a label takes.
    fn label_values(&self, label: &str) -> BTreeSet<String> {
        self.samples
            .iter()
            .filter_map(|(_, labels, _)| labels.get(label).cloned())
            .collect()
    }

    /// The value of the sample with this name and these labels exactly.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let want: BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.samples
            .iter()
            .find(|(n, l, _)| n == name && *l == want)
            .map(|(_, _, v)| *v)
    }
}

/// GETs `path` from `addr`, checks it is served as OpenMetrics, and parses it.
async fn scrape(addr: SocketAddr, path: &str) -> BTreeMap<String, Family> {
    let response = watchlife_tests::http::get(addr, path)
        .await
        .unwrap_or_else(|e| panic!("GET {path} from {addr}: {e}"));
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(
        response.header("content-type"),
        Some("application/openmetrics-text; version=1.0.0; charset=utf-8")
    );
    parse(&response.text())
}

fn parse(text: &str) -> BTreeMap<String, Family> {
    let mut python = Command::new("python3")
        .args(["-c", PARSE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    python
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = python.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("No module named 'prometheus_client'"),
        "Python's prometheus_client is missing: `make test-setup` installs it (pip install prometheus_client)"
    );
    assert!(
        out.status.success(),
        "prometheus_client rejects the exposition: {stderr}\n{text}"
    );
    let families: Vec<Value> = serde_json::from_slice(&out.stdout).expect("the script prints JSON");
    families
        .into_iter()
        .map(|f| {
            let samples = f["samples"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| {
                    let labels = s["labels"]
                        .as_object()
                        .unwrap()
                        .iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                        .collect();
                    (
                        s["name"].as_str().unwrap().to_string(),
                        labels,
                        s["value"].as_f64().unwrap(),
                    )
                })
                .collect();
            let family = Family {
                kind: f["type"].as_str().unwrap().to_string(),
                samples,
            };
            (f["name"].as_str().unwrap().to_string(), family)
        })
        .collect()
}

fn family<'a>(families: &'a BTreeMap<String, Family>, name: &str) -> &'a Family {
    families.get(name).unwrap_or_else(|| {
        panic!(
            "no family {name}; there are {:?}",
            families.keys().collect::<Vec<_>>()
        )
    })
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn the_bridge_and_the_demo_api_serve_openmetrics_that_the_reference_parser_reads() {
    let api: SocketAddr = format!("127.0.0.1:{}", watchlife_tests::free_port())
        .parse()
        .unwrap();
    let bridge = Bridge::start(&["--demo", "--demo-api", &api.to_string()]).await;
    let mut viewer = Viewer::connect(&bridge.ws_url()).await;
    // Events through the whole pipeline, so that the histograms and the
    // handler calls have samples: events of the watch, whose Reflector has a
    // stage before it to be timed from. A viewer that came before the first
    // list was over is also sent the listed objects as events, and those
    // begin at the Reflector.
    let mut events = 0;
    viewer
        .until(WAIT, |f| {
            if let FrameBody::Event(e) = &f.body
                && e.stages.contains_key(&Stage::Reflector)
                && e.stages.keys().next() != Some(&Stage::Reflector)
            {
                events += 1;
            }
            (events >= 5).then_some(())
        })
        .await;

    let bridge_families = viewer.read_while(scrape(bridge.addr, "/metrics")).await;
    let b = &bridge_families;

    // Every family the bridge has served, under the same names, as the same type.
    let expected = [
        ("watchlife_viewers", "gauge"),
        ("watchlife_viewers_compressed", "gauge"),
        ("watchlife_viewers_patched", "gauge"),
        ("watchlife_viewers_connected", "counter"),
        ("watchlife_viewers_refused", "counter"),
        ("watchlife_viewers_closed", "counter"),
        ("watchlife_frames_published", "counter"),
        ("watchlife_frames_sent", "counter"),
        ("watchlife_messages_sent", "counter"),
        ("watchlife_sent_bytes", "counter"),
        ("watchlife_resyncs", "counter"),
        ("watchlife_viewer_messages_rejected", "counter"),
        ("watchlife_upstream_watches", "gauge"),
        ("watchlife_upstream_watches_opened", "counter"),
        ("watchlife_relists", "counter"),
        ("watchlife_lists", "counter"),
        ("watchlife_handler_calls", "counter"),
        ("watchlife_resync_deliveries", "counter"),
        ("watchlife_deleted_final_state_unknown", "counter"),
        ("watchlife_stage_latency_seconds", "histogram"),
        ("watchlife_stage_clock_skew", "counter"),
        ("watchlife_taps", "gauge"),
        ("watchlife_tap_frames", "counter"),
    ];
    for (name, kind) in expected {
        assert_eq!(family(b, name).kind, kind, "{name}");
    }
    assert_eq!(
        b.keys().cloned().collect::<BTreeSet<_>>(),
        expected.iter().map(|(n, _)| n.to_string()).collect(),
        "the bridge serves exactly these families"
    );
    // Counters' samples keep the `_total` names dashboards query.
    let frames = family(b, "watchlife_frames_published");
    assert!(
        frames
            .value("watchlife_frames_published_total", &[])
            .unwrap()
            >= 5.0
    );
    assert_eq!(
        family(b, "watchlife_viewers").value("watchlife_viewers", &[]),
        Some(1.0)
    );
    let upstream = family(b, "watchlife_upstream_watches")
        .value("watchlife_upstream_watches", &[])
        .unwrap();
    assert!(upstream >= 1.0, "the demo's resources are watched");

    // Labels: every reason, cause and code, at zero or not.
    assert_eq!(
        family(b, "watchlife_viewers_refused").label_values("reason"),
        set(&["unauthorized", "origin", "host", "capacity"])
    );
    assert_eq!(
        family(b, "watchlife_viewers_closed").label_values("reason"),
        set(&[
            "flood",
            "too_large",
            "unresponsive",
            "send_stalled",
            "shutdown"
        ])
    );
    assert_eq!(
        family(b, "watchlife_resyncs").label_values("cause"),
        set(&["lagged", "cursor"])
    );
    assert_eq!(
        family(b, "watchlife_viewer_messages_rejected").label_values("code"),
        set(&["malformed", "too_large", "rate_limited"])
    );
    let handlers = family(b, "watchlife_handler_calls");
    assert_eq!(handlers.label_names(), set(&["listener", "callback"]));
    assert!(
        handlers.label_values("callback").contains("OnAdd"),
        "{handlers:?}"
    );

    // The histogram: one series per stage after the first, with every bucket.
    let latency = family(b, "watchlife_stage_latency_seconds");
    assert_eq!(latency.label_names(), set(&["stage", "le"]));
    let stages = latency.label_values("stage");
    assert_eq!(
        stages,
        set(&[
            "watch_cache",
            "watch_stream",
            "reflector",
            "fifo",
            "indexer",
            "handlers",
            "workqueue",
            "reconcile"
        ]),
        "every stage after etcd"
    );
    let bounds: BTreeSet<String> = latency
        .samples
        .iter()
        .filter(|(n, l, _)| n.ends_with("_bucket") && l["stage"] == "reflector")
        .map(|(_, l, _)| l["le"].clone())
        .collect();
    assert_eq!(bounds.len(), 14, "13 bounds and +Inf: {bounds:?}");
    assert!(bounds.contains("+Inf") && bounds.contains("10.0"));
    let count = latency
        .value(
            "watchlife_stage_latency_seconds_count",
            &[("stage", "reflector")],
        )
        .unwrap();
    assert!(count >= 5.0, "every event reached the Reflector: {count}");
    assert_eq!(
        latency.value(
            "watchlife_stage_latency_seconds_bucket",
            &[("stage", "reflector"), ("le", "+Inf")]
        ),
        Some(count)
    );

    // The demo API: the kube-apiserver's own names for the watch caches.
    let d = &scrape(api, "/metrics").await;
    assert_eq!(
        d.keys().cloned().collect::<BTreeSet<_>>(),
        set(&[
            "apiserver_registered_watchers",
            "watchlife_demo_watchers",
            "apiserver_terminated_watchers",
            "apiserver_watch_events"
        ])
    );
    let registered = family(d, "apiserver_registered_watchers");
    assert_eq!(registered.kind, "gauge");
    assert_eq!(registered.label_names(), set(&["group", "kind"]));
    assert!(
        registered
            .value(
                "apiserver_registered_watchers",
                &[("group", ""), ("kind", "Pod")]
            )
            .unwrap()
            >= 1.0
    );
    let named = family(d, "watchlife_demo_watchers");
    assert_eq!(named.kind, "gauge");
    assert_eq!(named.label_names(), set(&["group", "kind", "watcher"]));
    // The two gauges agree, cache by cache: the watchers counted by name
    // are the watchers registered.
    for (_, labels, registered) in &registered.samples {
        let by_name: f64 = named
            .samples
            .iter()
            .filter(|(_, l, _)| l["group"] == labels["group"] && l["kind"] == labels["kind"])
            .map(|(_, _, v)| v)
            .sum();
        assert_eq!(by_name, *registered, "{labels:?}");
    }
    // And the bridge's upstream watches are among them.
    let all: f64 = registered.samples.iter().map(|(_, _, v)| v).sum();
    assert!(
        upstream <= all,
        "{upstream} upstream watches, {all} registered"
    );
    let terminated = family(d, "apiserver_terminated_watchers");
    assert_eq!(terminated.kind, "counter");
    assert!(
        terminated
            .samples
            .iter()
            .all(|(n, l, _)| n == "apiserver_terminated_watchers_total"
                && l.contains_key("group")
                && l.contains_key("kind")),
        "{terminated:?}"
    );
    // Events sent to watchers: the story's writes reached the watches of the
    // bridge and of the demo's controllers.
    let sent = family(d, "apiserver_watch_events");
    assert_eq!(sent.kind, "counter");
    assert_eq!(sent.label_names(), set(&["group", "kind"]));
    let total: f64 = sent.samples.iter().map(|(_, _, v)| v).sum();
    assert!(total >= 1.0, "{sent:?}");
}
