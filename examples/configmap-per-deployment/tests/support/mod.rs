//! What the demo tests share: the demo's client, a WebSocket server that
//! keeps the tap's frames, and Deployments to make.

#![allow(dead_code)]

pub mod proof;
pub mod tapped;
pub mod through_bridge;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use tokio::net::TcpListener;
use watchlife_protocol::tap::TapFrame;
use watchlife_tests::bridge::Bridge;

/// How long a change may take to be reconciled before the test gives up
/// (a bound on waiting, never a measured result).
pub const PATIENCE: Duration = Duration::from_secs(60);

/// `watchlife --demo --demo-idle` and a client of its API (from the
/// kubeconfig it writes).
pub async fn demo() -> (Bridge, kube::Client) {
    demo_with(&[]).await
}

/// Like [`demo`], with more flags for the bridge.
pub async fn demo_with(flags: &[&str]) -> (Bridge, kube::Client) {
    let bridge = Bridge::start(&[&["--demo", "--demo-idle"], flags].concat()).await;
    let client = kube_client(&demo_kubeconfig(&bridge)).await;
    (bridge, client)
}

/// The kubeconfig the demo of `bridge` wrote (for kube and kubectl).
pub fn demo_kubeconfig(bridge: &Bridge) -> PathBuf {
    let folder = bridge.cache_dir().join("watchlife");
    std::fs::read_dir(&folder)
        .unwrap_or_else(|e| panic!("{}: {e}", folder.display()))
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with("demo.kubeconfig"))
        .expect("the demo wrote its kubeconfig")
}

/// A kube client from a kubeconfig file.
pub async fn kube_client(path: &std::path::Path) -> kube::Client {
    let kubeconfig = Kubeconfig::read_from(path).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

/// A WebSocket server keeping every frame it gets, in order.
pub async fn receiver() -> (String, Arc<Mutex<Vec<TapFrame>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let frames = Arc::new(Mutex::new(Vec::new()));
    let kept = frames.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let Ok(mut ws) = tokio_tungstenite::accept_async(socket).await else {
                continue;
            };
            while let Some(Ok(message)) = ws.next().await {
                if let Ok(text) = message.to_text()
                    && let Ok(frame) = serde_json::from_str::<TapFrame>(text)
                {
                    kept.lock().unwrap().push(frame);
                }
            }
        }
    });
    (url, frames)
}

/// A Deployment `name` of `replicas` in `default`.
pub async fn create(client: &kube::Client, name: &str, replicas: i32) {
    let deployment: Deployment = serde_json::from_value(serde_json::json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": { "name": name, "namespace": "default" },
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": { "app": name } },
            "template": {
                "metadata": { "labels": { "app": name } },
                "spec": { "containers": [{ "name": "web", "image": "nginx:1.27" }] }
            }
        }
    }))
    .unwrap();
    Api::<Deployment>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
}

/// Scales Deployment `name` to `replicas`.
pub async fn scale(client: &kube::Client, name: &str, replicas: i32) {
    let patch = serde_json::json!({ "spec": { "replicas": replicas } });
    Api::<Deployment>::namespaced(client.clone(), "default")
        .patch(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .unwrap();
}

/// Waits until the ConfigMap of Deployment `name` says `replicas`.
pub async fn await_configmap(client: &kube::Client, name: &str, replicas: i32) {
    let api = Api::<ConfigMap>::namespaced(client.clone(), "default");
    let cm_name = configmap_per_deployment::configmap_name(name);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Ok(Some(cm)) = api.get_opt(&cm_name).await
            && cm.data.as_ref().and_then(|d| d.get("replicas")) == Some(&replicas.to_string())
        {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{cm_name} never said {replicas}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
