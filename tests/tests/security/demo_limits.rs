//! The demo's bounds against the real binary: a billion replicas is refused
//! with the limit named, by a viewer's demo action and through the demo API,
//! and whatever a client asks for at most, the process stays within its
//! memory budget.

use super::fanout_support::{Client, Process, Read, WAIT, free_addr};
use futures_util::StreamExt;
use serde_json::json;
use std::time::Instant;
use tokio::io::AsyncWriteExt;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use watchlife_controlplane::limits::{MAX_REPLICAS, MEMORY_BUDGET_BYTES};
use watchlife_protocol::{ClientMessage, DemoAction, FrameBody, ServerFrame, Source};
use watchlife_testkit::client::Client as Api;

const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";
const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// Size of each configmap the test fills the store with: large, but each
/// still fits in an event frame whole.
const CONFIGMAP_BYTES: usize = 48 * 1024;

/// Watches of the demo API opened and never read: nearly every connection
/// it serves (1,024), with room for the bridge's own and the test's.
const UNREAD_WATCHES: usize = 1_000;

/// Connections to the bridge that send most of a request head and stop: as
/// many as it keeps waiting (2,048), each with as much as it buffers.
const HALF_REQUESTS: usize = 2_000;

/// The part of a request head each of them sends: just under the limit.
const HALF_REQUEST_BYTES: usize = 30 * 1024;

/// The demo API's URL, from a viewer's `hello`.
pub async fn demo_api(addr: std::net::SocketAddr) -> String {
    let mut viewer = Client::connect(&format!("ws://{addr}/ws")).await;
    let (hello, _) = viewer.frame().await;
    match hello.body {
        FrameBody::Hello(h) => match h.source {
            Source::Demo { api } => api,
            other => panic!("a demo bridge, got {other:?}"),
        },
        other => panic!("hello first, got {other:?}"),
    }
}

/// The process's peak resident memory (`VmHWM`), in bytes.
fn peak_rss(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("Linux /proc");
    let kib: usize = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status");
    kib * 1024
}

/// Waits until the bridge has relayed the configmap `name` as the demo API
/// holds it now: a new viewer's snapshot has it at its resourceVersion. The
/// snapshot of a full store is tens of MiB, one message.
async fn relayed(bridge: std::net::SocketAddr, api: &Api, name: &str) {
    let written = api.get(&format!("{CMS}/{name}")).await.body["metadata"]["resourceVersion"]
        .as_str()
        .expect("a resourceVersion")
        .to_string();
    let config = WebSocketConfig::default()
        .max_message_size(None)
        .max_frame_size(None);
    let started = Instant::now();
    loop {
        let url = format!("ws://{bridge}/ws");
        let (mut ws, _) = tokio_tungstenite::connect_async_with_config(url, Some(config), false)
            .await
            .expect("a viewer connects");
        let mut seen = false;
        for _ in 0..2 {
            let Some(Ok(Message::Text(text))) = ws.next().await else {
                panic!("hello and a snapshot")
            };
            let frame: ServerFrame = serde_json::from_str(&text).expect("a frame");
            if let FrameBody::Snapshot(snapshot) = frame.body {
                seen = snapshot
                    .objects
                    .iter()
                    .any(|o| o.target.name == name && o.resource_version == written);
            }
        }
        if seen {
            return;
        }
        assert!(started.elapsed() < WAIT, "the bridge never relayed {name}");
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}

fn deployment(replicas: u64) -> serde_json::Value {
    json!({
        "metadata": {"name": "web"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "web", "image": "nginx"}]}}
        }
    })
}

#[tokio::test]
async fn a_billion_replicas_is_refused_naming_the_limit_and_memory_stays_within_the_budget() {
    // The test holds thousands of sockets.
    watchlife_serve::fds::raise_open_files_limit();
    let bridge = Process::start(free_addr(), &["--demo", "--demo-idle"]).await;
    let api = demo_api(bridge.addr).await;
    let c = Api::new(&api, None);
    assert_eq!(c.post(DEPLOYS, &deployment(2)).await.code, 201);
    let limit = format!("less than or equal to {MAX_REPLICAS}");

    // A viewer's demo action.
    let mut viewer = Client::connect(&format!("ws://{}/ws", bridge.addr)).await;
    viewer.greeting().await;
    let scale = ClientMessage::Action {
        action: DemoAction::Scale {
            namespace: "default".into(),
            name: "web".into(),
            replicas: 1_000_000_000,
        },
    };
    viewer
        .send_text(&serde_json::to_string(&scale).unwrap())
        .await;
    let refused = loop {
        match viewer.read(WAIT).await {
            Read::Frame(frame, _) => match frame.body {
                FrameBody::Error(e) => break e.message,
                FrameBody::ActionResult(r) => panic!("a billion replicas was carried out: {r:?}"),
                _ => {}
            },
            Read::Closed(c) => panic!("the bridge closed the viewer: {c:?}"),
        }
    };
    assert!(refused.contains(&limit), "{refused}");

    // kubectl scale, through the demo API.
    let patched = c
        .patch(
            &format!("{DEPLOYS}/web/scale"),
            "application/merge-patch+json",
            &json!({"spec": {"replicas": 1_000_000_000}}),
        )
        .await;
    assert_eq!(patched.code, 422, "{}", patched.text);
    assert!(patched.text.contains(&limit), "{}", patched.text);

    // Now everything a client may ask for at most: the most replicas, the
    // store filled to its quota, every object rewritten, and watches that
    // never read.
    let most = c
        .patch(
            &format!("{DEPLOYS}/web/scale"),
            "application/merge-patch+json",
            &json!({"spec": {"replicas": MAX_REPLICAS}}),
        )
        .await;
    assert_eq!(most.code, 200, "{}", most.text);
    // Every pod made and running (a full store would refuse the pods'
    // own writes, as an etcd over its quota refuses every write).
    let started = Instant::now();
    loop {
        let pods = c.get("/api/v1/namespaces/default/pods").await;
        let running = pods.body["items"].as_array().map_or(0, |items| {
            items
                .iter()
                .filter(|p| p["status"]["phase"] == "Running")
                .count()
        });
        if running as u64 == MAX_REPLICAS {
            break;
        }
        assert!(started.elapsed() < WAIT, "{running} pods running");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let data = "x".repeat(CONFIGMAP_BYTES);
    let mut stored = 0;
    let full = loop {
        let reply = c
            .post(
                CMS,
                &json!({"metadata": {"name": format!("big-{stored}")}, "data": {"d": data}}),
            )
            .await;
        match reply.code {
            201 => stored += 1,
            _ => break reply,
        }
        assert!(stored < 10_000, "the store never filled up");
    };
    assert_eq!(full.code, 403, "{}", full.text);
    assert!(full.text.contains("exceeded quota"), "{}", full.text);
    // Deletes always go through; then every object is rewritten at the
    // same size (its resourceVersion may gain a digit) a few times over.
    for i in [0, 1] {
        assert_eq!(c.delete(&format!("{CMS}/big-{i}")).await.code, 200);
    }
    for round in ["y", "z", "x"] {
        let data = round.repeat(CONFIGMAP_BYTES);
        for i in 2..stored {
            let rewritten = c
                .put(
                    &format!("{CMS}/big-{i}"),
                    &json!({"metadata": {"name": format!("big-{i}")}, "data": {"d": data}}),
                )
                .await;
            assert_eq!(rewritten.code, 200, "{}", rewritten.text);
        }
    }
    let addr = api.trim_start_matches("http://").to_string();
    let mut unread = Vec::new();
    for _ in 0..UNREAD_WATCHES {
        let mut tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let request = format!("GET {CMS}?watch=1 HTTP/1.1\r\nHost: {addr}\r\n\r\n");
        tcp.write_all(request.as_bytes()).await.unwrap();
        unread.push(tcp);
    }
    // Until the bridge has relayed the last write.
    relayed(bridge.addr, &c, &format!("big-{}", stored - 1)).await;
    let mut half = Vec::new();
    let padding = format!("X-Pad: {}\r\n", "p".repeat(1000));
    let head = format!(
        "GET / HTTP/1.1\r\nHost: {}\r\n{}",
        bridge.addr,
        padding.repeat(HALF_REQUEST_BYTES / padding.len())
    );
    for _ in 0..HALF_REQUESTS {
        let mut tcp = tokio::net::TcpStream::connect(bridge.addr).await.unwrap();
        tcp.write_all(head.as_bytes()).await.unwrap();
        half.push(tcp);
    }
    // Until the bridge has read them.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let peak = peak_rss(bridge.child.id());
    eprintln!(
        "peak resident memory: {} MiB with {stored} configmaps of {} KiB, {MAX_REPLICAS} pods, {UNREAD_WATCHES} unread watches, {HALF_REQUESTS} half requests",
        peak / (1024 * 1024),
        CONFIGMAP_BYTES / 1024
    );
    assert!(
        peak < MEMORY_BUDGET_BYTES,
        "peak {peak} bytes, over the budget of {MEMORY_BUDGET_BYTES}"
    );
    drop((unread, half));
}

/// Entries of each heavy object: small maps, a few bytes of JSON each and
/// far more in memory.
const HEAVY_ENTRIES: usize = 2_000;

#[tokio::test]
async fn objects_heavier_in_memory_than_their_json_are_weighed_and_memory_stays_within_the_budget()
{
    let bridge = Process::start(free_addr(), &["--demo", "--demo-idle"]).await;
    let api = demo_api(bridge.addr).await;
    let c = Api::new(&api, None);
    let heavy = |tag: &str| {
        let spec: serde_json::Map<String, serde_json::Value> = (0..HEAVY_ENTRIES)
            .map(|i| (format!("{tag}{i}"), json!({"a": {}})))
            .collect();
        spec
    };
    let mut stored = 0;
    let full = loop {
        let reply = c
            .post(
                CMS,
                &json!({"metadata": {"name": format!("heavy-{stored}")}, "spec": heavy("k")}),
            )
            .await;
        match reply.code {
            201 => stored += 1,
            _ => break reply,
        }
        assert!(stored < 10_000, "the store never filled up");
    };
    assert_eq!(full.code, 403, "{}", full.text);
    assert!(full.text.contains("in memory"), "{}", full.text);
    // A single object far heavier than its JSON is refused. (Its JSON,
    // managedFields included, stays under the 1 MiB limit on JSON, so that it
    // is the weight that refuses it.)
    let monster: serde_json::Map<String, serde_json::Value> = (0..10 * HEAVY_ENTRIES)
        .map(|i| (format!("m{i}"), json!({"a": {}})))
        .collect();
    let refused = c
        .post(
            CMS,
            &json!({"metadata": {"name": "monster"}, "spec": monster}),
        )
        .await;
    assert_eq!(refused.code, 422, "{}", refused.text);
    assert!(refused.text.contains("in memory"), "{}", refused.text);
    for i in [0, 1] {
        assert_eq!(c.delete(&format!("{CMS}/heavy-{i}")).await.code, 200);
    }
    for round in ["x", "y", "z"] {
        for i in 2..stored {
            let rewritten = c
                .put(
                    &format!("{CMS}/heavy-{i}"),
                    &json!({"metadata": {"name": format!("heavy-{i}")}, "spec": heavy(round)}),
                )
                .await;
            assert_eq!(rewritten.code, 200, "{}", rewritten.text);
        }
    }
    relayed(bridge.addr, &c, &format!("heavy-{}", stored - 1)).await;
    let peak = peak_rss(bridge.child.id());
    eprintln!(
        "peak resident memory: {} MiB with {stored} objects of {HEAVY_ENTRIES} small maps",
        peak / (1024 * 1024)
    );
    assert!(
        peak < MEMORY_BUDGET_BYTES,
        "peak {peak} bytes, over the budget of {MEMORY_BUDGET_BYTES}"
    );
}
