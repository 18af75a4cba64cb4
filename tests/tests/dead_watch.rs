//! A watch whose connection a load balancer forgot: it stays open and says
//! nothing. A bridge takes it for dead once it has been silent past its
//! bound (`--dead-watch-after`, here 10 s against the demo's bookmarks every
//! 5 s), says so, lists again on a new connection, and the viewers get what
//! was written meanwhile; a bridge that trusts a silent watch
//! (`WATCHLIFE_TEST_BREAK=trust-silent-watch`) never does. A LIST is held to
//! the same bound: one whose connection goes silent is given up, so the
//! bridge never waits for ever on a plain LIST (Kubernetes 1.20's relist).

use std::path::PathBuf;
use std::time::Duration;
use watchlife_protocol::{EventType, FrameBody, ReflectorState};
use watchlife_tests::bridge::Bridge;
use watchlife_tests::chaos::proxy::{Mode, Proxy};
use watchlife_tests::ws::Viewer;
use watchlife_tests::{kubectl, plain_kubeconfig};

/// The bound the bridges under test are given.
const DEAD_AFTER: &str = "10";
/// How long a configmap written during the silence may take to reach the
/// viewer: the bound, a backoff and a relist, on a busy machine.
const NOTICED_WITHIN: Duration = Duration::from_secs(60);
/// How long the broken bridge is watched for not noticing: twice its bound.
const NOT_NOTICED_FOR: Duration = Duration::from_secs(20);

/// The demo's API, and a bridge watching its configmaps through a proxy.
struct Rig {
    _demo: Bridge,
    /// A kubeconfig of the demo's API, not through the proxy.
    direct: PathBuf,
    proxy: Proxy,
    bridge: Bridge,
    viewer: Viewer,
    _dir: tempfile::TempDir,
}

async fn rig(env: &[(&str, &str)]) -> Rig {
    rig_with(env, &[]).await
}

/// [`rig`], the bridge given `more` arguments.
async fn rig_with(env: &[(&str, &str)], more: &[&str]) -> Rig {
    let demo = Bridge::start(&["--demo", "--demo-idle"]).await;
    let api = demo.demo_api().await;
    let upstream = api.trim_start_matches("http://").parse().unwrap();
    let proxy = Proxy::start(upstream).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = plain_kubeconfig(
        &dir.path().join("through-proxy"),
        &format!("http://{}", proxy.addr),
    );
    let direct = plain_kubeconfig(&dir.path().join("direct"), &api);
    let mut args = vec![
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--resources",
        "configmaps",
        "--dead-watch-after",
        DEAD_AFTER,
    ];
    args.extend_from_slice(more);
    let bridge = Bridge::start_with_env(&args, env).await;
    let mut viewer = Viewer::connect(&bridge.ws_url()).await;
    viewer
        .reflector(Duration::from_secs(60), "configmaps", |s| {
            matches!(
                s,
                ReflectorState::InitialEventsEnd { .. } | ReflectorState::WatchStarted { .. }
            )
            .then_some(())
        })
        .await;
    Rig {
        _demo: demo,
        direct,
        proxy,
        bridge,
        viewer,
        _dir: dir,
    }
}

/// Whether the viewer gets `name`'s ADDED event within `within`, and the
/// reasons of the watch endings it saw meanwhile.
async fn seen(viewer: &mut Viewer, name: &str, within: Duration) -> (bool, Vec<String>) {
    let deadline = tokio::time::Instant::now() + within;
    let mut ended = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let Ok(frame) = tokio::time::timeout(left, viewer.next_frame_or_end()).await else {
            return (false, ended);
        };
        match frame.expect("the bridge keeps the viewer").body {
            FrameBody::Event(e) if e.target.name == name && e.event_type == EventType::Added => {
                return (true, ended);
            }
            FrameBody::Reflector(u) => {
                if let ReflectorState::WatchEnded { reason, .. } = u.state {
                    ended.push(reason);
                }
            }
            _ => {}
        }
    }
}

#[tokio::test]
async fn a_silent_watch_is_taken_for_dead_and_the_bridge_lists_again() {
    let mut rig = rig(&[]).await;
    rig.proxy.silence();
    kubectl(
        &rig.direct,
        &["create", "configmap", "written-while-silent"],
    );
    let (got, ended) = seen(&mut rig.viewer, "written-while-silent", NOTICED_WITHIN).await;
    assert!(
        got,
        "the configmap reached the viewer; watches ended: {ended:?}"
    );
    assert!(
        ended.iter().any(|r| r.contains("taken for dead")),
        "the page is told why the watch ended: {ended:?}"
    );
    drop(rig.bridge);
}

#[tokio::test]
async fn a_bridge_that_trusts_a_silent_watch_never_sees_what_was_written() {
    let mut rig = rig(&[(watchlife_tests::bridge::TEST_BREAK, "trust-silent-watch")]).await;
    rig.proxy.silence();
    kubectl(
        &rig.direct,
        &["create", "configmap", "written-while-silent"],
    );
    let (got, ended) = seen(&mut rig.viewer, "written-while-silent", NOT_NOTICED_FOR).await;
    assert!(
        !got,
        "a trusted silent watch stays silent; watches ended: {ended:?}"
    );
}

/// How long the proxy stalls every connection, old and new, in the LIST
/// test: past the bound twice over (the watch's 10 s, then the LIST's), and
/// short of nothing a bridge that waited for ever would live through.
const STALL: Duration = Duration::from_secs(45);

#[tokio::test]
async fn a_list_on_a_stalled_connection_is_given_up_within_the_bound() {
    // 1.20 relists with a plain LIST; a LIST sent while every connection is
    // stalled gets no answer until the stall ends.
    let mut rig = rig_with(&[], &["--kubernetes", "1.20"]).await;
    let stall = rig.proxy.misbehave(Mode::Stall, STALL);
    let told = async {
        let deadline = tokio::time::Instant::now() + STALL;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let Ok(frame) = tokio::time::timeout(left, rig.viewer.next_frame_or_end()).await else {
                return (false, seen);
            };
            let body = frame.expect("the bridge keeps the viewer").body;
            if let FrameBody::Reflector(u) = body
                && let ReflectorState::Backoff { error, .. } = u.state
            {
                if error.contains("LIST: nothing arrived") {
                    return (true, seen);
                }
                seen.push(error);
            }
        }
    };
    let ((given_up, seen), ()) = tokio::join!(told, stall);
    assert!(
        given_up,
        "within the stall, the LIST was given up and the page told why; failures told: {seen:?}"
    );
}
