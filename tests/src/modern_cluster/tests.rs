//! The harness's own contracts: the kubeconfig works for the kube crate,
//! widgets can be written, etcd can be edited and compacted behind the
//! apiserver's back, restarts keep port and data, and nothing outlives a
//! cluster.

use super::{ModernCluster, NAMESPACE, Options};
use serde_json::json;
use std::path::Path;
use std::time::Duration;

/// Longer than a SIGTERMed apiserver needs to end its watches (2 s) and exit.
const GRACE: Duration = Duration::from_secs(20);

#[tokio::test]
async fn the_kube_crate_uses_the_kubeconfig_and_widgets_round_trip() {
    let cluster = ModernCluster::start(Options::default()).await;
    let kubeconfig = kube::config::Kubeconfig::read_from(cluster.kubeconfig()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let info = client.apiserver_version().await.unwrap();
    let expected = super::package_versions()["golang-k8s-apiextensions-apiserver-dev"].clone();
    // The package 0.36.4-1 builds the apiserver v1.36.4.
    let minor = expected.split('.').nth(1).unwrap();
    assert_eq!(info.major, "1");
    assert_eq!(info.minor, minor);
    assert!(
        info.git_version.starts_with(&format!("v1.{minor}.")),
        "{info:?}"
    );

    let created = cluster.create_widget(NAMESPACE, "a", json!({"n": 1})).await;
    let updated = cluster.update_widget(NAMESPACE, "a", json!({"n": 2})).await;
    assert!(updated.parse::<u64>().unwrap() > created.parse::<u64>().unwrap());
    cluster.create_widget(NAMESPACE, "b", json!({})).await;
    let widgets = cluster.widgets(NAMESPACE).await;
    assert_eq!(widgets.keys().collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(widgets["a"], updated);
    cluster.delete_widget(NAMESPACE, "b").await;
    assert_eq!(cluster.widgets(NAMESPACE).await.len(), 1);

    // The kube crate reads widgets through the same certificate.
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
        client,
        NAMESPACE,
        &kube::api::ApiResource {
            group: super::GROUP.into(),
            version: super::VERSION.into(),
            api_version: format!("{}/{}", super::GROUP, super::VERSION),
            kind: super::KIND.into(),
            plural: super::RESOURCE.into(),
        },
    );
    let a = api.get("a").await.unwrap();
    assert_eq!(
        a.metadata.resource_version.as_deref(),
        Some(updated.as_str())
    );
}

#[tokio::test]
async fn etcd_edits_compaction_and_restarts() {
    let mut cluster = ModernCluster::start(Options::default()).await;
    let kept = cluster.create_widget(NAMESPACE, "kept", json!({})).await;
    cluster.create_widget(NAMESPACE, "gone", json!({})).await;
    // etcd's revision is the newest object's resourceVersion.
    assert_eq!(
        cluster.etcd_revision().await.to_string(),
        cluster.widgets(NAMESPACE).await["gone"]
    );

    let (base, pid) = (cluster.base_url().to_string(), cluster.pids()[0]);
    assert!(
        cluster.restart_apiserver_gracefully(GRACE).await,
        "exits on SIGTERM"
    );
    assert_eq!(cluster.base_url(), base);
    assert_ne!(cluster.pids()[0], pid);

    cluster.crash_apiserver();
    assert!(cluster.delete_widget_in_etcd(NAMESPACE, "gone").await);
    assert!(!cluster.delete_widget_in_etcd(NAMESPACE, "never").await);
    let compacted = cluster.compact_etcd().await;
    assert_eq!(compacted, cluster.etcd_revision().await);
    cluster.start_apiserver().await;

    let client = cluster.client();
    let widgets = ModernCluster::widgets_path(NAMESPACE);
    // The widgets' watch cache may still be starting; a LIST answers
    // from etcd or the cache, either way without the deleted key.
    let mut listed = None;
    for _ in 0..100 {
        let reply = client.get(&widgets).await;
        if reply.code == 200 {
            listed = Some(reply);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let listed = listed.expect("the widgets are served after the restart");
    let names: Vec<_> = listed.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["kept"]);
    assert_eq!(cluster.widgets(NAMESPACE).await["kept"], kept);
    let old = client
        .get(&format!(
            "{widgets}?resourceVersion={kept}&resourceVersionMatch=Exact"
        ))
        .await;
    assert_eq!(old.code, 410, "{}", old.text);
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
            let cluster = ModernCluster::start(Options::default()).await;
            tx.send((cluster.pids(), cluster.dir().to_path_buf()))
                .unwrap();
            panic!("a failing test");
        })
    });
    assert!(test.join().is_err(), "the thread panicked");
    let (pids, dir) = rx.recv().expect("the cluster started");
    for pid in pids {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "process {pid} still exists"
        );
    }
    assert!(!dir.exists(), "{} still exists", dir.display());
}
