//! The tap through watchlife on the real kube-apiserver, stopped and
//! started again midway: every reconcile the example controller ran reaches
//! a viewer of watchlife with its reason and result, in order, matched to
//! the bridge's own event of the same resourceVersion, and the watcher's
//! failures while the apiserver was away are told.

mod support;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use support::tapped::Tapped;
use support::through_bridge::Watching;
use watchlife_protocol::tap::TapFrame;
use watchlife_tap::TapConfig;
use watchlife_tests::bridge::Bridge;
use watchlife_tests::real_cluster::RealCluster;

const NAME: &str = "configmap-per-deployment";

/// Long enough that the watcher's watch breaks and its retries are refused
/// before the apiserver is started again.
const OUTAGE: Duration = Duration::from_secs(3);

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

// One thread: the tap's layer is this thread's subscriber.
#[tokio::test(flavor = "current_thread")]
async fn through_an_apiserver_restart_every_reconcile_is_told_and_matched() {
    let mut cluster = RealCluster::start().await;
    let kubeconfig = cluster.kubeconfig().to_str().unwrap().to_string();
    let bridge = Bridge::start(&[
        "--kubernetes",
        "1.20",
        "--kubeconfig",
        &kubeconfig,
        "--resources",
        "deployments.apps,configmaps",
        "--accept-taps",
    ])
    .await;
    let client = support::kube_client(cluster.kubeconfig()).await;
    let watching = Watching::start(&bridge).await;
    let mut tapped = Tapped::start(&client, TapConfig::new(bridge.url(), NAME));

    support::create(&client, "web", 1).await;
    support::await_configmap(&client, "web", 1).await;

    let outage_from = now_us();
    cluster.stop_apiserver();
    tokio::time::sleep(OUTAGE).await;
    cluster.start_apiserver().await;
    let outage_to = now_us();

    support::scale(&client, "web", 3).await;
    support::await_configmap(&client, "web", 3).await;
    support::create(&client, "api", 2).await;
    support::await_configmap(&client, "api", 2).await;

    let (told, objects) = watching.prove(&mut tapped, NAME).await;
    assert_eq!(objects, 2, "web and api");

    // What the watcher did while the apiserver was away, as the tap told it:
    // its requests failed (no answer) or its stream yielded errors.
    let failures: Vec<_> = told
        .iter()
        .filter(|f| match f {
            TapFrame::WatcherError(e) => (outage_from..=outage_to).contains(&e.at_us),
            TapFrame::Request(r) => {
                (outage_from..=outage_to).contains(&r.at_us) && r.status.is_none_or(|s| s >= 500)
            }
            _ => false,
        })
        .collect();
    assert!(
        !failures.is_empty(),
        "the outage is told: {:?}",
        told.iter()
            .filter(|f| matches!(f, TapFrame::WatcherError(_) | TapFrame::Request(_)))
            .collect::<Vec<_>>()
    );
}
