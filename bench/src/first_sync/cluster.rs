//! The v0.36.4 apiserver (the tests' [`ModernCluster`]) holding many
//! widgets, written straight into its etcd, and restarted before each client
//! so that every client meets an apiserver in the same state.

pub use crate::etcd_fill::{PER_TXN, TXNS_AT_ONCE};
use crate::etcd_fill::{put_all, settings_text, uid};
use std::time::{Duration, Instant};
use watchlife_tests::modern_cluster::{GROUP, KIND, ModernCluster, RESOURCE, VERSION};

/// Namespaces the widgets spread over (`first-sync-0` …); the apiserver
/// runs without namespace admission, so none has to exist.
pub const NAMESPACES: usize = 4;
/// Bytes of `spec` in each widget, about: the configmaps of the big-cluster
/// section carry as much data.
pub const SPEC_BYTES: usize = 1000;
/// How long the restarted apiserver's watch cache may take to hold every
/// widget (it reads them all from etcd and decodes them).
const CACHE_TIMEOUT: Duration = Duration::from_secs(300);
/// How long the restarted apiserver is left alone before a client starts:
/// its start's garbage collected, its memory settled.
const SETTLE: Duration = Duration::from_secs(3);

/// Writes widgets `0..objects` into the cluster's etcd; returns their JSON
/// bytes.
pub async fn fill(cluster: &ModernCluster, objects: usize) -> Result<usize, String> {
    let etcd = etcd_client::Client::connect([cluster.etcd_endpoint()], None)
        .await
        .map_err(|e| format!("cannot reach etcd: {e}"))?;
    put_all(&etcd, 0..objects, stored_widget).await
}

/// The `i`-th widget as the apiserver would find it in etcd: its key, and
/// its JSON (custom resources are stored as JSON; no resourceVersion: the
/// key's revision is that).
pub fn stored_widget(i: usize) -> (String, String) {
    let ns = format!("first-sync-{}", i % NAMESPACES);
    let name = format!("widget-{i:07}");
    let settings = settings_text(i, "widget", SPEC_BYTES);
    let object = serde_json::json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": KIND,
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": uid(i),
            "generation": 1,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": "widgets", "shard": format!("s{}", i % 16)}
        },
        "spec": {"settings": settings, "mode": "production"}
    });
    (
        ModernCluster::widget_etcd_key(&ns, &name),
        object.to_string(),
    )
}

/// Kills the apiserver and starts it again over the same etcd, then waits
/// until its watch cache of widgets is ready (a WATCH from etcd's current
/// revision is answered 200 only then: 429 while it fills) and a little
/// more; returns how long the cache took from the restart.
pub async fn restart_and_wait(cluster: &mut ModernCluster) -> Result<Duration, String> {
    let started = Instant::now();
    cluster.crash_and_restart_apiserver().await;
    let revision = cluster.etcd_revision().await;
    let client = cluster.client();
    let path = format!(
        "/apis/{GROUP}/{VERSION}/{RESOURCE}?watch=1&resourceVersion={revision}&timeoutSeconds=1"
    );
    let deadline = started + CACHE_TIMEOUT;
    loop {
        if client.try_get(&path).await.is_ok_and(|r| r.code == 200) {
            let ready = started.elapsed();
            tokio::time::sleep(SETTLE).await;
            return Ok(ready);
        }
        if Instant::now() > deadline {
            return Err("the apiserver's watch cache of widgets did not become ready".into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_widget_is_about_a_kilobyte_of_spec_under_the_custom_resource_key() {
        let (key, json) = stored_widget(12345);
        assert_eq!(
            key,
            "/registry/apiextensions.kubernetes.io/watchlife.example/widgets/first-sync-1/widget-0012345"
        );
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let settings = v["spec"]["settings"].as_str().unwrap();
        assert!((SPEC_BYTES..SPEC_BYTES + 64).contains(&settings.len()));
        assert_eq!(v["apiVersion"], "watchlife.example/v1");
        assert_eq!(v["kind"], "Widget");
        assert_eq!(v["metadata"]["namespace"], "first-sync-1");
    }
}
