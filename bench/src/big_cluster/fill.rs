//! The cluster's objects: configmaps written straight into etcd, and
//! kube-apiserver's watch cache of them.

use super::{DATA_BYTES, NAMESPACES, TIMEOUT};
use crate::apiserver::Api;
use crate::etcd_fill::{put_all, settings_text, uid};
use std::time::{Duration, Instant};

/// Creates the namespaces the objects spread over; why the last one that
/// failed did, if one did (one that exists already is no failure).
pub async fn create_namespaces(api: &Api) -> Option<String> {
    let mut failure = None;
    for ns in 0..NAMESPACES {
        let body =
            format!(r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"big-{ns}"}}}}"#);
        match api.request("POST", "/api/v1/namespaces", Some(body)).await {
            Ok((201 | 409, _)) => {}
            Ok((code, _)) => failure = Some(format!("creating a namespace: {code}")),
            Err(e) => failure = Some(e),
        }
    }
    failure
}

/// Writes configmaps `from..to` into etcd; returns how many and their JSON bytes.
pub async fn fill(
    etcd: &etcd_client::Client,
    from: usize,
    to: usize,
) -> Result<(usize, usize), String> {
    let json = put_all(etcd, from..to, stored_configmap).await?;
    Ok((to - from, json))
}

/// The `i`-th configmap as kube-apiserver would find it in etcd: its key, and
/// its JSON (no resourceVersion: the key's revision is that).
fn stored_configmap(i: usize) -> (String, String) {
    let ns = format!("big-{}", i % NAMESPACES);
    let name = format!("settings-{i:07}");
    let properties = settings_text(i, "service", DATA_BYTES);
    let object = serde_json::json!({
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": uid(i),
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": "settings", "shard": format!("s{}", i % 16)},
            "annotations": {"owner": "platform-team"}
        },
        "data": {
            "application.properties": properties,
            "mode": "production"
        }
    });
    (
        format!("/registry/configmaps/{ns}/{name}"),
        object.to_string(),
    )
}

/// Waits until kube-apiserver's watch cache for configmaps is ready (a watch
/// from the current resourceVersion is served only then), and returns how
/// many configmaps the cluster holds.
pub async fn wait_watch_cache(api: &Api) -> Result<usize, String> {
    let (code, body) = api
        .request("GET", "/api/v1/configmaps?limit=1", None)
        .await?;
    if code != 200 {
        return Err(format!("listing one configmap was answered {code}"));
    }
    let list: serde_json::Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .ok_or("a LIST without resourceVersion")?
        .to_string();
    let total = list["items"].as_array().map_or(0, Vec::len)
        + list["metadata"]["remainingItemCount"].as_u64().unwrap_or(0) as usize;
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let path = format!("/api/v1/configmaps?watch=1&resourceVersion={rv}&timeoutSeconds=1");
        if let Ok(mut body) = api.watch(&path).await {
            // Read to its end: the watch closes after a second.
            while let Some(Ok(_)) = http_body_util::BodyExt::frame(&mut body).await {}
            return Ok(total);
        }
        if Instant::now() > deadline {
            return Err("kube-apiserver's watch cache did not become ready".into());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_configmap_is_about_a_kilobyte_of_data() {
        let (key, json) = stored_configmap(12345);
        assert_eq!(key, "/registry/configmaps/big-1/settings-0012345");
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let data = v["data"]["application.properties"].as_str().unwrap();
        assert!((DATA_BYTES..DATA_BYTES + 64).contains(&data.len()));
        assert_eq!(v["metadata"]["namespace"], "big-1");
        assert!(v["metadata"]["uid"].as_str().unwrap().len() == 36);
    }
}
