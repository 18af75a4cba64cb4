//! watchlife under RBAC on a real kube-apiserver: with `deploy/rbac.yaml`'s
//! read-only role it watches; with no role, the denial is said on the
//! Reflector's node in the server's own words, and nothing else breaks.

use std::path::Path;
use std::process::Command;
use std::time::Duration;
use watchlife_protocol::{FrameBody, ReflectorState};
use watchlife_tests::bridge::Bridge;
use watchlife_tests::real_cluster::RealCluster;
use watchlife_tests::ws::Viewer;

/// How long an expected frame may take on a busy machine.
const WAIT: Duration = Duration::from_secs(60);

/// The service account `deploy/rbac.yaml` creates, as the apiserver names it.
const SERVICE_ACCOUNT: &str = "system:serviceaccount:watchlife:watchlife";

fn kubectl(kubeconfig: &Path, args: &[&str]) -> std::process::Output {
    Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .expect("kubectl runs")
}

#[tokio::test]
async fn the_read_only_role_watches_and_no_role_is_a_denial_told_on_the_node() {
    let cluster = RealCluster::start().await;
    let admin = cluster.kubeconfig();
    let manifest = watchlife_tests::workspace().join("deploy/rbac.yaml");
    let applied = kubectl(admin, &["apply", "-f", manifest.to_str().unwrap()]);
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );

    // The role reads and never writes.
    for (verb, expected) in [
        ("list", "yes"),
        ("watch", "yes"),
        ("create", "no"),
        ("delete", "no"),
    ] {
        let out = kubectl(
            admin,
            &["auth", "can-i", verb, "pods", "--as", SERVICE_ACCOUNT],
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            expected,
            "{verb}"
        );
    }

    // As the service account: LIST and WATCH succeed.
    let reader = cluster.kubeconfig_acting_as(
        "reader.kubeconfig",
        SERVICE_ACCOUNT,
        &[
            "system:serviceaccounts",
            "system:serviceaccounts:watchlife",
            "system:authenticated",
        ],
    );
    let bridge = Bridge::on_cluster(&reader, "pods,secrets").await;
    let mut viewer = Viewer::connect(&bridge.ws_url()).await;
    let mut watching = std::collections::BTreeSet::new();
    viewer
        .until(WAIT, |f| {
            let updates = match &f.body {
                FrameBody::Reflector(u) => vec![u.clone()],
                FrameBody::Snapshot(s) => s.reflectors.clone(),
                _ => vec![],
            };
            for u in updates {
                if matches!(u.state, ReflectorState::WatchStarted { .. }) {
                    watching.insert(u.resource);
                }
            }
            (watching.len() == 2).then_some(())
        })
        .await;
    drop(bridge);

    // As a user with no role: the LIST is refused, the node says why in the
    // server's words, and the Reflector keeps trying (a role may be granted).
    let nobody = cluster.kubeconfig_acting_as("nobody.kubeconfig", "nobody", &[]);
    let bridge = Bridge::on_cluster(&nobody, "pods").await;
    let mut viewer = Viewer::connect(&bridge.ws_url()).await;
    let error = viewer
        .reflector(WAIT, "pods", |s| match s {
            ReflectorState::Backoff { error, .. } => Some(error.clone()),
            _ => None,
        })
        .await;
    assert!(
        error.contains("forbidden") && error.contains("\"nobody\"") && error.contains("pods"),
        "the server's denial is told: {error}"
    );
    // The bridge itself is fine: it still serves.
    let health = watchlife_tests::http::get(bridge.addr, "/healthz")
        .await
        .unwrap();
    assert_eq!(health.status, 200);

    // Granted the role, the same bridge starts watching without a restart.
    let bind = kubectl(
        admin,
        &[
            "create",
            "clusterrolebinding",
            "nobody-reads",
            "--clusterrole=watchlife-reader",
            "--user=nobody",
        ],
    );
    assert!(
        bind.status.success(),
        "{}",
        String::from_utf8_lossy(&bind.stderr)
    );
    viewer
        .reflector(WAIT, "pods", |s| {
            matches!(s, ReflectorState::WatchStarted { .. }).then_some(())
        })
        .await;
}
