//! watchlife under RBAC on a real kube-apiserver: with `deploy/rbac.yaml`'s
//! read-only role it watches; with no role, the denial is said on the
//! Reflector's node in the server's own words, and nothing else breaks.

use std::path::{Path, PathBuf};
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

/// A copy of the admin kubeconfig that acts as `user` (in `groups`), the way
/// `kubectl --as` does: the apiserver authorizes every request as that user.
fn acting_as(cluster: &RealCluster, file: &str, user: &str, groups: &[&str]) -> PathBuf {
    let text = std::fs::read_to_string(cluster.kubeconfig()).expect("the kubeconfig");
    let mut config: serde_json::Value = serde_json::from_str(&text).expect("it is JSON");
    let auth = &mut config["users"][0]["user"];
    auth["as"] = user.into();
    if !groups.is_empty() {
        auth["as-groups"] = serde_json::json!(groups);
    }
    let path = cluster.dir().join(file);
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

/// The first Reflector frame for `resource` that `pick` accepts.
async fn reflector_until<T>(
    viewer: &mut Viewer,
    resource: &str,
    pick: impl Fn(&ReflectorState) -> Option<T>,
) -> T {
    viewer
        .until(WAIT, |f| match &f.body {
            FrameBody::Reflector(u) if u.resource == resource => pick(&u.state),
            FrameBody::Snapshot(s) => s
                .reflectors
                .iter()
                .find(|u| u.resource == resource)
                .and_then(|u| pick(&u.state)),
            _ => None,
        })
        .await
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
    let reader = acting_as(
        &cluster,
        "reader.kubeconfig",
        SERVICE_ACCOUNT,
        &[
            "system:serviceaccounts",
            "system:serviceaccounts:watchlife",
            "system:authenticated",
        ],
    );
    let bridge = Bridge::start(&[
        "--kubernetes",
        "1.20",
        "--kubeconfig",
        reader.to_str().unwrap(),
        "--resources",
        "pods,secrets",
    ])
    .await;
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
    let nobody = acting_as(&cluster, "nobody.kubeconfig", "nobody", &[]);
    let bridge = Bridge::start(&[
        "--kubernetes",
        "1.20",
        "--kubeconfig",
        nobody.to_str().unwrap(),
        "--resources",
        "pods",
    ])
    .await;
    let mut viewer = Viewer::connect(&bridge.ws_url()).await;
    let error = reflector_until(&mut viewer, "pods", |s| match s {
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
    reflector_until(&mut viewer, "pods", |s| {
        matches!(s, ReflectorState::WatchStarted { .. }).then_some(())
    })
    .await;
}
