//! The harness's own contracts: the kubeconfig works for kubectl and the
//! kube crate, compaction and restart do what they say, and nothing outlives
//! a cluster, even a panicking test.

use super::RealCluster;
use serde_json::json;
use std::path::Path;

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// The kubectl on this machine.
const KUBECTL: &str = "/usr/bin/kubectl";

#[tokio::test]
async fn kubectl_and_the_kube_crate_use_the_kubeconfig() {
    let cluster = RealCluster::start().await;
    let out = tokio::process::Command::new(KUBECTL)
        .args(["version", "-o", "json"])
        .env("KUBECONFIG", cluster.kubeconfig())
        // kubectl keeps a discovery cache under $HOME.
        .env("HOME", cluster.dir())
        .output()
        .await
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let version: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(version["serverVersion"]["gitVersion"], "v1.20.2");

    let kubeconfig = kube::config::Kubeconfig::read_from(cluster.kubeconfig()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let info = client.apiserver_version().await.unwrap();
    assert_eq!(info.git_version, "v1.20.2");
}

#[tokio::test]
async fn compaction_expires_revisions_and_a_restart_keeps_port_and_data() {
    let mut cluster = RealCluster::start().await;
    let client = cluster.client();
    let created = client
        .post(
            CONFIGMAPS,
            &json!({"metadata": {"name": "kept"}, "data": {"v": "1"}}),
        )
        .await;
    assert_eq!(created.code, 201, "{}", created.text);
    let old: u64 = created.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let patched = client
        .patch(
            &format!("{CONFIGMAPS}/kept"),
            "application/merge-patch+json",
            &json!({"data": {"v": "2"}}),
        )
        .await;
    assert_eq!(patched.code, 200, "{}", patched.text);

    let compacted = cluster.compact_etcd().await;
    assert!(compacted > old);
    let exact = format!("{CONFIGMAPS}?resourceVersion={old}&resourceVersionMatch=Exact");
    let gone = client.get(&exact).await;
    assert_eq!(gone.code, 410, "{}", gone.text);

    let (base, pid) = (cluster.base_url().to_string(), cluster.pids()[0]);
    cluster.restart_apiserver().await;
    assert_eq!(cluster.base_url(), base);
    assert_ne!(cluster.pids()[0], pid);
    let kept = client.get(&format!("{CONFIGMAPS}/kept")).await;
    assert_eq!(kept.code, 200, "{}", kept.text);
    assert_eq!(kept.body["data"]["v"], "2");
}

#[test]
fn dropping_kills_both_processes_and_removes_the_directory_even_in_a_panic() {
    let (tx, rx) = std::sync::mpsc::channel();
    let test = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let cluster = RealCluster::start().await;
            tx.send((cluster.pids(), cluster.dir().to_path_buf()))
                .unwrap();
            panic!("a failing test");
        })
    });
    assert!(test.join().is_err(), "the thread panicked");
    let (pids, dir) = rx.recv().expect("the cluster started");
    for pid in pids {
        // Reaped as well as killed, so its /proc entry is gone.
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "process {pid} still exists"
        );
    }
    assert!(!dir.exists(), "{} still exists", dir.display());
}
