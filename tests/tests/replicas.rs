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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use watchlife_protocol::{EventType, FrameBody, ObjectRef, ServerFrame};
use watchlife_testkit::client::Client;
use watchlife_tests::bridge::Bridge;
use watchlife_tests::real_cluster::RealCluster;
use watchlife_tests::ws::Viewer;

/// The resources both bridges watch, in every namespace.
const RESOURCES: [&str; 2] = ["configmaps", "pods"];
/// Where the writer writes.
const NAMESPACES: [&str; 3] = ["shop", "billing", "search"];
/// How long anything expected may take on a busy machine.
const WAIT: Duration = Duration::from_secs(30);
/// Changes a viewer sees on a bridge before the test moves on.
const CHANGES_PER_PHASE: u64 = 80;

/// What a viewer has made of one connection's frames.
#[derive(Debug, Default)]
struct Mirror {
    /// The stream named by the connection's `hello`.
    stream: Option<String>,
    /// The `seq` of the latest frame: the cursor to resume from.
    last_seq: u64,
    /// Key (`resource/namespace/name`) → resourceVersion.
    objects: BTreeMap<String, String>,
    /// The kinds of the connection's first frames, heartbeats and the like left out.
    opening: Vec<&'static str>,
    /// ADDED, MODIFIED and DELETED events applied.
    changes: u64,
    snapshots: u32,
    resyncs: u32,
    /// Events that came before any snapshot on this connection.
    events_before_snapshot: u64,
}

impl Mirror {
    /// A viewer's state as it connects, holding `objects` from before.
    fn holding(objects: BTreeMap<String, String>) -> Arc<Mutex<Mirror>> {
        Arc::new(Mutex::new(Mirror {
            objects,
            ..Mirror::default()
        }))
    }

    fn apply(&mut self, frame: ServerFrame) {
        self.last_seq = frame.seq;
        let kind = match &frame.body {
            FrameBody::Hello(_) => "hello",
            FrameBody::Resync(_) => "resync",
            FrameBody::Snapshot(_) => "snapshot",
            FrameBody::Event(_) => "event",
            _ => "other",
        };
        if kind != "other" && self.opening.len() < 4 {
            self.opening.push(kind);
        }
        match frame.body {
            FrameBody::Hello(hello) => self.stream = Some(hello.stream),
            FrameBody::Resync(_) => self.resyncs += 1,
            FrameBody::Snapshot(snapshot) => {
                self.snapshots += 1;
                self.objects = snapshot
                    .objects
                    .iter()
                    .map(|o| (key(&o.target), o.resource_version.clone()))
                    .collect();
            }
            FrameBody::Event(event) => {
                if self.snapshots == 0 {
                    self.events_before_snapshot += 1;
                }
                match event.event_type {
                    EventType::Added | EventType::Modified => {
                        self.objects
                            .insert(key(&event.target), event.resource_version);
                    }
                    EventType::Deleted => {
                        self.objects.remove(&key(&event.target));
                    }
                    EventType::Bookmark | EventType::Error => return,
                }
                self.changes += 1;
            }
            _ => {}
        }
    }
}

fn key(target: &ObjectRef) -> String {
    format!("{}/{}", target.resource, target.key())
}

/// A viewer connected to a bridge, its frames applied to `mirror` as they
/// come, until the connection ends.
struct Following {
    name: &'static str,
    mirror: Arc<Mutex<Mirror>>,
    task: JoinHandle<()>,
}

impl Following {
    async fn start(name: &'static str, url: &str, mirror: Arc<Mutex<Mirror>>) -> Following {
        let mut viewer = Viewer::connect(url).await;
        let shared = mirror.clone();
        let task = tokio::spawn(async move {
            while let Some(frame) = viewer.next_frame_or_end().await {
                shared.lock().unwrap().apply(frame);
            }
        });
        Following { name, mirror, task }
    }

    fn state<T>(&self, read: impl FnOnce(&Mirror) -> T) -> T {
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

/// What the apiserver lists now: key → resourceVersion, every namespace.
async fn listed(client: &Client) -> BTreeMap<String, String> {
    let mut objects = BTreeMap::new();
    for resource in RESOURCES {
        let reply = client.get(&format!("/api/v1/{resource}")).await;
        assert_eq!(reply.code, 200, "LIST {resource}: {}", reply.text);
        for item in reply.body["items"].as_array().expect("a list has items") {
            let meta = &item["metadata"];
            let text = |field: &str| {
                meta[field]
                    .as_str()
                    .unwrap_or_else(|| panic!("{field} of {item}"))
            };
            objects.insert(
                format!("{resource}/{}/{}", text("namespace"), text("name")),
                text("resourceVersion").to_string(),
            );
        }
    }
    objects
}

/// How `seen` differs from `truth`: empty when they agree.
fn differences(truth: &BTreeMap<String, String>, seen: &BTreeMap<String, String>) -> String {
    let lost: Vec<_> = truth.keys().filter(|k| !seen.contains_key(*k)).collect();
    let phantom: Vec<_> = seen.keys().filter(|k| !truth.contains_key(*k)).collect();
    let stale: Vec<_> = truth
        .iter()
        .filter_map(|(k, rv)| match seen.get(k) {
            Some(other) if other != rv => Some(format!("{k} at {other}, listed at {rv}")),
            _ => None,
        })
        .collect();
    if lost.is_empty() && phantom.is_empty() && stale.is_empty() {
        return String::new();
    }
    format!(
        "{} lost {:?}, {} phantom {:?}, {} at another resourceVersion {:?}",
        lost.len(),
        lost.iter().take(5).collect::<Vec<_>>(),
        phantom.len(),
        phantom.iter().take(5).collect::<Vec<_>>(),
        stale.len(),
        stale.iter().take(5).collect::<Vec<_>>(),
    )
}

/// Waits until every viewer holds exactly what the apiserver lists (nothing
/// writes any more), and returns that list.
async fn settled(client: &Client, viewers: &mut [&mut Following]) -> BTreeMap<String, String> {
    let deadline = Instant::now() + WAIT;
    loop {
        let truth = listed(client).await;
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

/// The writer's own account of the objects it made and has not deleted.
#[derive(Debug, Default)]
struct Written {
    /// `resource/namespace/name`.
    live: Vec<String>,
    made: u64,
    changed: u64,
    deleted: u64,
    rng: u64,
}

impl Written {
    /// xorshift64: the same run of choices every time.
    fn roll(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    /// One create, update or delete, through the apiserver.
    async fn step(&mut self, client: &Client) {
        let roll = self.roll();
        let choice = roll % 100;
        let create = self.live.len() < 12 || (self.live.len() < 60 && choice < 35);
        if create {
            let resource = RESOURCES[(roll >> 8) as usize % RESOURCES.len()];
            let namespace = NAMESPACES[(roll >> 16) as usize % NAMESPACES.len()];
            let name = format!("w{}", self.made);
            let body = match resource {
                "configmaps" => json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name}, "data": {"n": "0"},
                }),
                _ => json!({
                    "apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": name},
                    "spec": {"containers": [{"name": "app", "image": "registry.invalid/app:1"}]},
                }),
            };
            let reply = client
                .post(&format!("/api/v1/namespaces/{namespace}/{resource}"), &body)
                .await;
            assert_eq!(reply.code, 201, "create {resource} {name}: {}", reply.text);
            self.live.push(format!("{resource}/{namespace}/{name}"));
            self.made += 1;
            return;
        }
        let index = (roll >> 24) as usize % self.live.len();
        let (resource, rest) = self.live[index].split_once('/').unwrap();
        let (namespace, name) = rest.split_once('/').unwrap();
        let path = format!("/api/v1/namespaces/{namespace}/{resource}/{name}");
        if choice < 80 {
            let patch = json!({"metadata": {"annotations": {"step": self.changed.to_string()}}});
            let reply = client
                .patch(&path, "application/merge-patch+json", &patch)
                .await;
            assert_eq!(reply.code, 200, "patch {path}: {}", reply.text);
            self.changed += 1;
        } else {
            // Unscheduled Pods go at once, as ConfigMaps do.
            let reply = client.delete(&format!("{path}?gracePeriodSeconds=0")).await;
            assert_eq!(reply.code, 200, "delete {path}: {}", reply.text);
            self.live.swap_remove(index);
            self.deleted += 1;
        }
    }
}

/// The writer, running until [`Writing::stop`].
struct Writing {
    stop: Arc<AtomicBool>,
    task: JoinHandle<Written>,
}

impl Writing {
    fn start(client: Client, mut written: Written) -> Writing {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let task = tokio::spawn(async move {
            while !stopping.load(Ordering::Relaxed) {
                written.step(&client).await;
                // Room for the bridges on a small machine.
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            written
        });
        Writing { stop, task }
    }

    async fn stop(self) -> Written {
        self.stop.store(true, Ordering::Relaxed);
        self.task
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
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
    let mut written = Written {
        rng: 0x9e37_79b9_7f4a_7c15,
        ..Written::default()
    };
    for _ in 0..20 {
        written.step(&client).await;
    }

    // The apiserver's own informers watch too (its Pods, for service
    // account tokens): counted once they stand still, then the two replicas,
    // the same flags but their own ports, each one WATCH per resource more.
    let base = stable_watches(&client, before_setup).await;
    let kubeconfig = cluster.kubeconfig().to_str().unwrap().to_string();
    let args = [
        "--kubeconfig",
        kubeconfig.as_str(),
        "--resources",
        "configmaps,pods",
    ];
    let mut bridge_a = Bridge::start(&args).await;
    until_watches(&client, &base, 1).await;
    let bridge_b = Bridge::start(&args).await;
    until_watches(&client, &base, 2).await;

    // One viewer on A, and one on B from the start to the end.
    let writing = Writing::start(client.clone(), written);
    let mut on_a = Following::start(
        "the viewer on A",
        &bridge_a.ws_url(),
        Mirror::holding(BTreeMap::new()),
    )
    .await;
    let mut on_b = Following::start(
        "the viewer on B all along",
        &bridge_b.ws_url(),
        Mirror::holding(BTreeMap::new()),
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
    let writing = Writing::start(client.clone(), written);
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
        Mirror::holding(kept),
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
