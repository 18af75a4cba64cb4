//! A rolling update of two bridge replicas behind a Service that routes by
//! `/readyz`, as a Deployment's readinessProbe does: the new replica, whose
//! first list is held up, is not ready and gets no viewer; a viewer that
//! reaches it anyway is told its objects are not the whole set (its
//! Reflector has not finished a list); once it has listed, the old replica
//! goes, and the viewer that moves to the new one gets the whole set, never
//! a part presented as complete.

use std::net::SocketAddr;
use std::time::Duration;
use watchlife_protocol::{FrameBody, ServerFrame, Snapshot};
use watchlife_tests::bridge::Bridge;
use watchlife_tests::chaos::proxy::{Mode, Proxy};
use watchlife_tests::service::Service;
use watchlife_tests::ws::Viewer;
use watchlife_tests::{kubectl, plain_kubeconfig};

/// ConfigMaps the replicas list.
const CONFIGMAPS: usize = 200;
/// How long the new replica's first list is held up.
const HELD_UP: Duration = Duration::from_secs(20);
/// How long anything expected may take on a busy machine.
const WAIT: Duration = Duration::from_secs(60);

/// `CONFIGMAPS` configmaps in `default`, in one `kubectl apply`.
fn fill(kubeconfig: &std::path::Path, dir: &std::path::Path) {
    let items: Vec<String> = (0..CONFIGMAPS)
        .map(|i| format!("- {{apiVersion: v1, kind: ConfigMap, metadata: {{name: cm-{i}, namespace: default}}}}"))
        .collect();
    let file = dir.join("configmaps.yaml");
    std::fs::write(
        &file,
        format!("apiVersion: v1\nkind: List\nitems:\n{}\n", items.join("\n")),
    )
    .unwrap();
    kubectl(kubeconfig, &["apply", "-f", file.to_str().unwrap()]);
}

/// The configmaps of a snapshot, and whether their Reflector had finished
/// a list.
fn configmaps(snapshot: &Snapshot) -> (usize, bool) {
    let count = snapshot
        .objects
        .iter()
        .filter(|o| o.target.resource == "configmaps" && o.target.name.starts_with("cm-"))
        .count();
    // What the page goes by to say "not the whole set yet".
    let listed = snapshot.listed.iter().any(|r| r == "configmaps");
    (count, listed)
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Hello's stream, then the first snapshot, of a new connection.
async fn greeting(viewer: &mut Viewer) -> (String, Snapshot) {
    let stream = match viewer.next_frame(WAIT).await.body {
        FrameBody::Hello(h) => h.stream,
        other => panic!("hello first, got {other:?}"),
    };
    let snapshot = viewer
        .until(WAIT, |f: &ServerFrame| match &f.body {
            FrameBody::Snapshot(s) => Some(s.clone()),
            _ => None,
        })
        .await;
    (stream, snapshot)
}

async fn stream_of(bridge_or_service: &str) -> String {
    greeting(&mut Viewer::connect(bridge_or_service).await)
        .await
        .0
}

async fn until_ready(service: &Service, endpoint: SocketAddr) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !service.ready(endpoint) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{endpoint} never ready"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_viewer_moved_to_the_new_replica_never_gets_a_part_presented_as_whole() {
    let dir = tempfile::tempdir().unwrap();
    let demo = Bridge::start(&["--demo", "--demo-idle"]).await;
    let api = demo.demo_api().await;
    let proxy = Proxy::start(api.trim_start_matches("http://").parse().unwrap()).await;
    let direct = plain_kubeconfig(&dir.path().join("direct"), &api);
    let through_proxy = plain_kubeconfig(
        &dir.path().join("proxied"),
        &format!("http://{}", proxy.addr),
    );
    fill(&direct, dir.path());
    let replica = |kubeconfig: &std::path::Path| {
        vec![
            "--kubeconfig".to_string(),
            kubeconfig.to_str().unwrap().to_string(),
            "--resources".to_string(),
            "configmaps".to_string(),
            // The cluster answers: readiness waits for the lists alone.
            "--ready-grace".to_string(),
            "600".to_string(),
        ]
    };

    // The old replica, ready, behind the Service; a viewer on it.
    let service = Service::start().await;
    let old_args = replica(&direct);
    let mut old = Bridge::start(&strs(&old_args)).await;
    service.add(old.addr);
    until_ready(&service, old.addr).await;
    let old_stream = stream_of(&old.ws_url()).await;
    let mut viewer = Viewer::connect(&service.ws_url()).await;
    let (stream, snapshot) = greeting(&mut viewer).await;
    assert_eq!(
        stream, old_stream,
        "the Service sends viewers to the ready replica"
    );
    assert_eq!(configmaps(&snapshot), (CONFIGMAPS, true));

    // The new replica, its first list held up: not ready, and no viewer.
    let holding = tokio::spawn(async move {
        proxy.misbehave(Mode::Stall, HELD_UP).await;
        proxy
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let new_args = replica(&through_proxy);
    let new = Bridge::start(&strs(&new_args)).await;
    let new_stream = stream_of(&new.ws_url()).await;
    service.add(new.addr);
    tokio::time::sleep(watchlife_tests::service::PROBE_EVERY * 3).await;
    assert!(
        !service.ready(new.addr),
        "not ready while its first list is held up"
    );
    assert_eq!(
        stream_of(&service.ws_url()).await,
        old_stream,
        "no viewer for it yet"
    );
    // Reached directly, it says its objects are not the whole set.
    let (_, partial) = greeting(&mut Viewer::connect(&new.ws_url()).await).await;
    let (count, listed) = configmaps(&partial);
    assert!(
        !listed,
        "a partial snapshot says its list is under way ({count} objects): {:?}",
        partial.reflectors
    );

    // Listed: ready; the old replica goes, as a rolling update ends it.
    let _proxy = holding.await.unwrap();
    until_ready(&service, new.addr).await;
    assert!(old.terminate().success());
    while viewer.next_frame_or_end().await.is_some() {}
    let resumed = format!("{}?stream={stream}&since={}", service.ws_url(), 1);
    let mut moved = Viewer::connect(&resumed).await;
    let (stream, snapshot) = greeting(&mut moved).await;
    assert_eq!(stream, new_stream, "the viewer moved to the new replica");
    assert_eq!(
        configmaps(&snapshot),
        (CONFIGMAPS, true),
        "the whole set, listed"
    );
}
