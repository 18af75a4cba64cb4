//! `/readyz`: ready once every watched resource has listed once; a cluster
//! that cannot be reached keeps the bridge out of the load balancer only
//! for `--ready-grace`, after which the page, which shows the error, is
//! reachable. `/healthz` answers throughout.

use std::time::{Duration, Instant};
use watchlife_tests::bridge::Bridge;
use watchlife_tests::http::{Response, get};

async fn readyz(bridge: &Bridge) -> Response {
    get(bridge.addr, "/readyz").await.expect("/readyz answers")
}

fn body(r: &Response) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

/// Polls `/readyz` until it answers `status`, for at most `within`.
async fn until_status(bridge: &Bridge, status: u16, within: Duration) -> Response {
    let deadline = Instant::now() + within;
    loop {
        let r = readyz(bridge).await;
        if r.status == status {
            return r;
        }
        assert!(
            Instant::now() < deadline,
            "/readyz still {} after {within:?}: {}",
            r.status,
            body(&r)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn the_demo_is_ready_once_each_resource_has_listed() {
    let bridge = Bridge::start(&["--demo", "--resources", "pods,configmaps"]).await;
    let ready = until_status(&bridge, 200, Duration::from_secs(20)).await;
    assert_eq!(body(&ready), "ready: 2 of 2 resources listed\n");
}

#[tokio::test]
async fn an_unreachable_cluster_is_not_ready_until_the_grace_has_passed() {
    let home = tempfile::tempdir().unwrap();
    let kubeconfig = watchlife_tests::unreachable_kubeconfig(home.path());
    let started = Instant::now();
    let bridge = Bridge::start(&[
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--resources",
        "pods",
        "--ready-grace",
        "3",
    ])
    .await;
    let waiting = readyz(&bridge).await;
    if started.elapsed() < Duration::from_secs(3) {
        assert_eq!(waiting.status, 503, "{}", body(&waiting));
        assert_eq!(body(&waiting), "not ready: 0 of 1 resources listed\n");
    }
    let healthy = get(bridge.addr, "/healthz").await.unwrap();
    assert_eq!(healthy.status, 200);
    let ready = until_status(&bridge, 200, Duration::from_secs(20)).await;
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "ready before its grace"
    );
    assert!(
        body(&ready).contains("0 of 1 resources listed after 3 s"),
        "{}",
        body(&ready)
    );
}
