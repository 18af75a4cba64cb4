//! The demo's bounds through its API: what no client may ask for is refused
//! with the apiserver's codes (422 for a value, 403 for a quota) and a
//! message that names the limit, and nothing is written.

mod support;

use serde_json::json;
use watchlife_controlplane::limits::{MAX_OBJECT_BYTES, MAX_OBJECTS_PER_NAMESPACE, MAX_REPLICAS};
use watchlife_testkit::client::Client;

const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";
const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn deployment(replicas: u64) -> serde_json::Value {
    json!({
        "metadata": {"name": "web"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "web", "image": "nginx"}]}}
        }
    })
}

#[tokio::test]
async fn a_billion_replicas_is_a_422_naming_the_limit_by_every_path() {
    let server = support::start().await;
    let c = Client::new(&server.base, None);
    let created = c.post(DEPLOYS, &deployment(1_000_000_000)).await;
    assert_eq!(created.code, 422, "{}", created.text);
    assert_eq!(created.body["reason"], "Invalid");
    assert_eq!(c.post(DEPLOYS, &deployment(2)).await.code, 201);
    let limit = format!("less than or equal to {MAX_REPLICAS}");
    let scale = c
        .patch(
            &format!("{DEPLOYS}/web/scale"),
            "application/merge-patch+json",
            &json!({"spec": {"replicas": 1_000_000_000}}),
        )
        .await;
    assert_eq!(scale.code, 422, "{}", scale.text);
    assert!(
        scale.body["message"].as_str().unwrap().contains(&limit),
        "{}",
        scale.text
    );
    let put = c
        .put(
            &format!("{DEPLOYS}/web/scale"),
            &json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
                    "metadata": {"name": "web"}, "spec": {"replicas": u32::MAX}}),
        )
        .await;
    assert_eq!(put.code, 422, "{}", put.text);
    let patched = c
        .patch(
            &format!("{DEPLOYS}/web"),
            "application/merge-patch+json",
            &json!({"spec": {"replicas": MAX_REPLICAS + 1}}),
        )
        .await;
    assert_eq!(patched.code, 422, "{}", patched.text);
    let stored = c.get(&format!("{DEPLOYS}/web")).await;
    assert_eq!(stored.body["spec"]["replicas"], 2);
    let at_most = c
        .patch(
            &format!("{DEPLOYS}/web/scale"),
            "application/merge-patch+json",
            &json!({"spec": {"replicas": MAX_REPLICAS}}),
        )
        .await;
    assert_eq!(at_most.code, 200, "{}", at_most.text);
}

#[tokio::test]
async fn labels_objects_and_namespaces_are_bounded() {
    let server = support::start().await;
    let c = Client::new(&server.base, None);
    let bad_label = c
        .post(
            CMS,
            &json!({"metadata": {"name": "a", "labels": {"no spaces": "v"}}}),
        )
        .await;
    assert_eq!(bad_label.code, 422, "{}", bad_label.text);
    let long_value = c
        .post(
            CMS,
            &json!({"metadata": {"name": "a", "labels": {"k": "v".repeat(64)}}}),
        )
        .await;
    assert_eq!(long_value.code, 422, "{}", long_value.text);

    let big = c
        .post(
            CMS,
            &json!({"metadata": {"name": "big"}, "data": {"k": "x".repeat(MAX_OBJECT_BYTES)}}),
        )
        .await;
    assert_eq!(big.code, 422, "{}", &big.text[..200.min(big.text.len())]);
    assert!(
        big.body["message"].as_str().unwrap().contains("1 MiB"),
        "{}",
        big.body["message"]
    );

    for i in 0..MAX_OBJECTS_PER_NAMESPACE {
        let reply = c
            .post(CMS, &json!({"metadata": {"name": format!("c{i}")}}))
            .await;
        assert_eq!(reply.code, 201, "{i}: {}", reply.text);
    }
    // The namespace is full now.
    let full = c
        .post(CMS, &json!({"metadata": {"name": "one-more"}}))
        .await;
    assert_eq!(full.code, 403, "{}", full.text);
    assert_eq!(full.body["reason"], "Forbidden");
    let message = full.body["message"].as_str().unwrap();
    assert!(message.contains("exceeded quota"), "{message}");
    assert!(
        message.contains(&MAX_OBJECTS_PER_NAMESPACE.to_string()),
        "{message}"
    );
    // Deleting makes room again.
    assert_eq!(c.delete(&format!("{CMS}/c1")).await.code, 200);
    assert_eq!(
        c.post(CMS, &json!({"metadata": {"name": "one-more"}}))
            .await
            .code,
        201
    );
}
