//! More replicas, not a bigger box: two watchlife bridges list-watch the
//! same real apiserver while a writer keeps creating, changing and deleting
//! ConfigMaps and Pods in three namespaces. A viewer follows bridge A; A is
//! killed, and the viewer comes back on bridge B with A's stream and cursor,
//! as a viewer behind a Service does when its pod goes away. B must not take
//! that cursor for one of its own: it announces a resync (or just sends its
//! snapshot), and the viewer rebuilds its objects from what B sends.
//!
//! Checked: what each viewer holds (key → resourceVersion) equals what the
//! apiserver lists once the writer stops, nothing lost and nothing extra;
//! A and B agree; and the apiserver serves each bridge exactly one WATCH per
//! resource.

use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use watchlife_testkit::client::Client;
use watchlife_tests::bridge::Bridge;
use watchlife_tests::chaos::cluster::{CONFIGMAPS, Kind, PODS};
use watchlife_tests::chaos::model::{Model, differences};
use watchlife_tests::chaos::writer::{Writing, Written, listed};
use watchlife_tests::real_cluster::RealCluster;
use watchlife_tests::ws::Viewer;

/// The resources both bridges watch, in every namespace.
const RESOURCES: [&str; 2] = ["configmaps", "pods"];
/// The same, as the writer writes them.
const KINDS: [Kind; 2] = [CONFIGMAPS, PODS];
/// Where the writer writes.
const NAMESPACES: [&str; 3] = ["shop", "billing", "search"];
/// How long anything expected may take on a busy machine.
const WAIT: Duration = Duration::from_secs(30);
/// Changes a viewer sees on a bridge before the test moves on.
const CHANGES_PER_PHASE: u64 = 80;
/// Between two writes: room for the bridges on a small machine.
const WRITE_PAUSE: Duration = Duration::from_millis(5);

/// A viewer connected to a bridge, its frames applied to `mirror` as they
/// come, until the connection ends.
struct Following {
    name: &'static str,
    mirror: Arc<Mutex<Model>>,
    task: JoinHandle<()>,
}

impl Following {
    async fn start(name: &'static str, url: &str, mirror: Arc<Mutex<Model>>) -> Following {
        let mut viewer = Viewer::connect(url).await;
        let shared = mirror.clone();
        let task = tokio::spawn(async move {
            while let Some(frame) = viewer.next_frame_or_end().await {
                shared.lock().unwrap().apply(frame);
            }
        });
        Following { name, mirror, task }
    }

    fn state<T>(&self, read: impl FnOnce(&Model) -> T) -> T {
        read(&self.mirror.lock().unwrap())
    }

    /// Panics when the connection ended (or its reader failed) though the
    /// test still counts on it.
    async fn still_connected(&mut self) {
        if self.task.is_finished() {
            let ended = (&mut self.task).await;
            ended.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
            panic!("{}: the bridge ended the connection", self.name);
        }
    }

    /// Waits until this viewer has applied `changes` events in all.
    async fn until_changes(&mut self, changes: u64) {
        let deadline = Instant::now() + WAIT;
        while self.state(|m| m.changes) < changes {
            self.still_connected().await;
            assert!(
                Instant::now() < deadline,
                "{}: {} of {changes} changes within {WAIT:?}",
                self.name,
                self.state(|m| m.changes)
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Waits until every viewer holds exactly what the apiserver lists (nothing
/// writes any more), and returns that list.
async fn settled(client: &Client, viewers: &mut [&mut Following]) -> BTreeMap<String, String> {
    let deadline = Instant::now() + WAIT;
    loop {
        let truth = listed(client, &KINDS).await;
        let mut report = String::new();
        for viewer in viewers.iter_mut() {
            viewer.still_connected().await;
            let diff = viewer.state(|m| differences(&truth, &m.objects));
            if !diff.is_empty() {
                report.push_str(&format!("\n  {}: {diff}", viewer.name));
            }
        }
        if report.is_empty() {
            return truth;
        }
        assert!(
            Instant::now() < deadline,
            "the viewers do not hold what the apiserver lists ({} objects) within {WAIT:?}:{report}",
            truth.len()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The WATCH requests the apiserver is serving across all namespaces, by
/// resource, as its `apiserver_longrunning_gauge` counts them.
async fn watches(client: &Client) -> BTreeMap<&'static str, u64> {
    let reply = client.get("/metrics").await;
    assert_eq!(reply.code, 200, "GET /metrics: {}", reply.text);
    let mut counts: BTreeMap<_, _> = RESOURCES.iter().map(|r| (*r, 0)).collect();
    for line in reply.text.lines() {
        let Some(labels) = line.strip_prefix("apiserver_longrunning_gauge{") else {
            continue;
        };
        if !labels.contains(r#"verb="WATCH""#) || !labels.contains(r#"scope="cluster""#) {
            continue;
        }
        for resource in RESOURCES {
            if labels.contains(&format!(r#"resource="{resource}""#)) {
                let value = line.rsplit(' ').next().unwrap();
                *counts.get_mut(resource).unwrap() += value
                    .parse::<f64>()
                    .unwrap_or_else(|e| panic!("{line}: {e}"))
                    as u64;
            }
        }
    }
    counts
}

/// The WATCHes the apiserver serves once two readings in a row agree, the
/// first being `earlier`.
async fn stable_watches(
    client: &Client,
    mut earlier: BTreeMap<&'static str, u64>,
) -> BTreeMap<&'static str, u64> {
    let deadline = Instant::now() + WAIT;
    loop {
        let now = watches(client).await;
        if now == earlier {
            return now;
        }
        assert!(
            Instant::now() < deadline,
            "the apiserver's own WATCHes do not settle within {WAIT:?}: {earlier:?}, then {now:?}"
        );
        earlier = now;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until the apiserver serves `base` plus `bridges` WATCHes of every
/// resource; panics at once when it serves more.
async fn until_watches(client: &Client, base: &BTreeMap<&str, u64>, bridges: u64) {
    let want: BTreeMap<_, _> = base.iter().map(|(r, n)| (*r, n + bridges)).collect();
    let deadline = Instant::now() + WAIT;
    loop {
        let now = watches(client).await;
        if now == want {
            return;
        }
        assert!(
            now.iter().all(|(r, n)| *n <= want[r]),
            "more than one WATCH per resource per bridge: {now:?}, expected {want:?} ({bridges} bridges)"
        );
        assert!(
            Instant::now() < deadline,
            "the apiserver serves {now:?} WATCHes, not {want:?} ({bridges} bridges), within {WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Checks that the writer's own account matches the apiserver's list.
fn assert_writer_agrees(truth: &BTreeMap<String, String>, written: &Written) {
    let ours: BTreeSet<&String> = truth
        .keys()
        .filter(|k| NAMESPACES.iter().any(|ns| k.contains(&format!("/{ns}/"))))
        .collect();
    let live: BTreeSet<&String> = written.live.iter().collect();
    assert_eq!(ours, live, "the apiserver lists what the writer left");
    for resource in RESOURCES {
        let namespaces: BTreeSet<_> = live
            .iter()
            .filter_map(|k| k.strip_prefix(&format!("{resource}/")))
            .filter_map(|k| k.split_once('/').map(|(ns, _)| ns))
            .collect();
        assert!(
            namespaces.len() >= 2,
            "the writer left {resource} in {namespaces:?} only"
        );
    }
}

#[tokio::test]
async fn a_viewer_moved_to_another_replica_is_resynced_and_misses_nothing() {
    let started = std::time::Instant::now();
    let cluster = RealCluster::start().await;
    let client = cluster.client();
    let before_setup = watches(&client).await;
    for namespace in NAMESPACES {
        let reply = client
            .post(
                "/api/v1/namespaces",
                &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
            )
            .await;
        assert_eq!(reply.code, 201, "namespace {namespace}: {}", reply.text);
    }
    let mut written = Written::new(&KINDS, &NAMESPACES, 0x9e37_79b9_7f4a_7c15);
    for _ in 0..20 {
        written.step(&client).await.unwrap();
    }

    // The apiserver's own informers watch too (its Pods, for service
    // account tokens): counted once they stand still, then the two replicas,
    // the same flags but their own ports, each one WATCH per resource more.
    let base = stable_watches(&client, before_setup).await;
    let mut bridge_a = Bridge::on_cluster(cluster.kubeconfig(), "configmaps,pods").await;
    until_watches(&client, &base, 1).await;
    let bridge_b = Bridge::on_cluster(cluster.kubeconfig(), "configmaps,pods").await;
    until_watches(&client, &base, 2).await;

    // One viewer on A, and one on B from the start to the end.
    let writing = Writing::start(client.clone(), written, WRITE_PAUSE, true);
    let mut on_a = Following::start(
        "the viewer on A",
        &bridge_a.ws_url(),
        Arc::new(Mutex::new(Model::holding(BTreeMap::new()))),
    )
    .await;
    let mut on_b = Following::start(
        "the viewer on B all along",
        &bridge_b.ws_url(),
        Arc::new(Mutex::new(Model::holding(BTreeMap::new()))),
    )
    .await;
    on_a.until_changes(CHANGES_PER_PHASE).await;
    let written = writing.stop().await;

    // A quiet moment: A and B hold what the apiserver lists, so they agree.
    let truth = settled(&client, &mut [&mut on_a, &mut on_b]).await;
    assert_writer_agrees(&truth, &written);
    assert_eq!(
        on_a.state(|m| m.objects.clone()),
        on_b.state(|m| m.objects.clone()),
        "A and B agree"
    );
    let stream_a = on_a.state(|m| m.stream.clone()).expect("A said hello");
    let stream_b = on_b.state(|m| m.stream.clone()).expect("B said hello");
    assert_ne!(
        stream_a, stream_b,
        "two replicas name their streams alike: a cursor from one would resume on the other"
    );
    until_watches(&client, &base, 2).await;

    // Writing again, A goes away under its viewer.
    let writing = Writing::start(client.clone(), written, WRITE_PAUSE, true);
    let moved_at = on_a.state(|m| m.changes) + CHANGES_PER_PHASE;
    on_a.until_changes(moved_at).await;
    bridge_a.kill();
    tokio::time::timeout(WAIT, &mut on_a.task)
        .await
        .unwrap_or_else(|_| panic!("the viewer on A still reads {WAIT:?} after A was killed"))
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
    let (cursor, kept) = on_a.state(|m| (m.last_seq, m.objects.clone()));
    assert!(cursor > 0, "the viewer saw A's stream frames");

    // The viewer comes back through the Service and lands on B, asking to
    // resume A's stream after the last frame it saw, and holding A's objects.
    let mut moved = Following::start(
        "the viewer moved to B",
        &format!("{}?stream={stream_a}&since={cursor}", bridge_b.ws_url()),
        Arc::new(Mutex::new(Model::holding(kept))),
    )
    .await;
    moved.until_changes(CHANGES_PER_PHASE / 2).await;
    let written = writing.stop().await;
    until_watches(&client, &base, 1).await;

    let truth = settled(&client, &mut [&mut moved, &mut on_b]).await;
    assert_writer_agrees(&truth, &written);
    moved.state(|m| {
        assert_eq!(
            m.stream.as_deref(),
            Some(stream_b.as_str()),
            "B says hello with its own stream"
        );
        assert!(
            matches!(
                m.opening.as_slice(),
                ["hello", "resync", "snapshot", ..] | ["hello", "snapshot", ..]
            ),
            "B must not resume A's stream from seq {cursor}: it resyncs the viewer; its frames began {:?}",
            m.opening
        );
        assert_eq!(
            m.events_before_snapshot, 0,
            "events of B's stream came before its snapshot, as if resuming A's"
        );
    });
    assert_eq!(
        moved.state(|m| m.objects.clone()),
        on_b.state(|m| m.objects.clone()),
        "the moved viewer and B's own agree"
    );

    let report = |f: &Following| {
        f.state(|m| {
            format!(
                "{}: {} changes, {} snapshots, {} resyncs, {} objects",
                f.name,
                m.changes,
                m.snapshots,
                m.resyncs,
                m.objects.len()
            )
        })
    };
    eprintln!(
        "replicas: writer made {}, changed {}, deleted {}; {}; {}; {}; {} objects listed; \
         the apiserver's own WATCHes {base:?}; {:?}",
        written.made,
        written.changed,
        written.deleted,
        report(&on_a),
        report(&on_b),
        report(&moved),
        truth.len(),
        started.elapsed()
    );
    drop(bridge_b);
}
