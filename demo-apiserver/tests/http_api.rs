//! The demo API over plain HTTP: every failure is the right Status, the
//! server keeps serving after bad input, and the verbs and subresources do
//! what the apiserver's do.

mod support;

use serde_json::{Value, json};
use watchlife_demo_apiserver::objects::MAX_BODY_BYTES;
use watchlife_testkit::client::{Client, Reply, summary};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const PODS: &str = "/api/v1/namespaces/default/pods";
const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";

fn assert_status(reply: &Reply, code: u16, reason: &str) {
    assert_eq!(reply.code, code, "{}", reply.text);
    assert_eq!(reply.content_type, "application/json");
    assert_eq!(reply.body["kind"], "Status", "{}", reply.text);
    assert_eq!(reply.body["apiVersion"], "v1");
    assert_eq!(reply.body["status"], "Failure");
    assert_eq!(reply.body["code"], code);
    assert_eq!(reply.body["reason"], reason, "{}", reply.text);
    assert!(
        reply.body["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty())
    );
}

#[tokio::test]
async fn bad_input_gets_the_right_status_and_the_server_keeps_serving() {
    let server = support::start().await;
    let c = Client::new(&server.base, None);
    let raw = |method: &'static str, path: &'static str, body: &'static str| {
        let c = c.clone();
        async move {
            c.call(
                method,
                path,
                Some("application/json"),
                body.as_bytes().to_vec(),
            )
            .await
        }
    };
    assert_status(&raw("POST", CMS, "{not json").await, 400, "BadRequest");
    assert_status(&raw("POST", CMS, "[1,2]").await, 400, "BadRequest");
    let wrong_kind = raw(
        "POST",
        CMS,
        r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"x"}}"#,
    )
    .await;
    assert_status(&wrong_kind, 400, "BadRequest");
    let wrong_version = raw(
        "POST",
        CMS,
        r#"{"kind":"ConfigMap","apiVersion":"apps/v1","metadata":{"name":"x"}}"#,
    )
    .await;
    assert_status(&wrong_version, 400, "BadRequest");
    assert_status(
        &raw("POST", CMS, r#"{"metadata":{"labels":{"a":1}}}"#).await,
        400,
        "BadRequest",
    );
    let nameless = raw(
        "POST",
        CMS,
        r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{}}"#,
    )
    .await;
    assert_status(&nameless, 422, "Invalid");
    assert_eq!(
        nameless.body["details"]["causes"][0]["field"],
        "metadata.name"
    );
    assert_status(
        &raw("POST", CMS, r#"{"metadata":{"name":"Not_Valid"}}"#).await,
        422,
        "Invalid",
    );

    let huge = format!(
        r#"{{"metadata":{{"name":"big"}},"data":{{"k":"{}"}}}}"#,
        "x".repeat(MAX_BODY_BYTES)
    );
    let too_large = c
        .call("POST", CMS, Some("application/json"), huge.into_bytes())
        .await;
    assert_status(&too_large, 413, "RequestEntityTooLarge");

    assert_status(&c.get("/api/v1/widgets").await, 404, "NotFound");
    assert_status(
        &c.get("/apis/batch/v1/namespaces/default/jobs").await,
        404,
        "NotFound",
    );
    // OpenAPI documents are served when the build has Kubernetes' spec
    // (src/openapi.rs); a group version the demo does not serve is not.
    assert_status(&c.get("/openapi/v3/apis/batch/v1").await, 404, "NotFound");
    assert_status(&c.get("/openapi/v4").await, 404, "NotFound");
    let missing = c.get(&format!("{CMS}/nope")).await;
    assert_status(&missing, 404, "NotFound");
    assert_eq!(
        missing.body["details"],
        json!({"name": "nope", "kind": "configmaps"})
    );
    assert_status(
        &c.post(
            "/api/v1/namespaces/nowhere/configmaps",
            &json!({"metadata": {"name": "a"}}),
        )
        .await,
        404,
        "NotFound",
    );

    assert_eq!(
        c.post(CMS, &json!({"metadata": {"name": "a"}})).await.code,
        201
    );
    assert_status(
        &c.post(CMS, &json!({"metadata": {"name": "a"}})).await,
        409,
        "AlreadyExists",
    );
    assert_status(
        &c.get(&format!("{CMS}?labelSelector=a%20b")).await,
        400,
        "BadRequest",
    );
    let field = c
        .get(&format!("{CMS}?fieldSelector=spec.nodeName%3Dn1"))
        .await;
    assert_status(&field, 400, "BadRequest");
    assert_eq!(
        field.body["message"],
        "field label not supported: spec.nodeName"
    );
    assert_status(
        &c.get(&format!("{CMS}?resourceVersion=abc")).await,
        400,
        "BadRequest",
    );
    assert_status(
        &c.get(&format!("{CMS}?resourceVersionMatch=Exact")).await,
        422,
        "Invalid",
    );
    assert_status(
        &c.get(&format!("{CMS}?continue=garbage")).await,
        400,
        "BadRequest",
    );
    let future = c
        .get(&format!(
            "{CMS}?resourceVersion=999999&resourceVersionMatch=NotOlderThan"
        ))
        .await;
    assert_status(&future, 504, "Timeout");

    assert_status(&c.put(CMS, &json!({})).await, 405, "MethodNotAllowed");
    assert_status(&c.delete(CMS).await, 405, "MethodNotAllowed");
    assert_status(
        &c.post("/api/v1/pods", &json!({"metadata": {"name": "p"}}))
            .await,
        405,
        "MethodNotAllowed",
    );
    let ssa = c
        .call(
            "PATCH",
            &format!("{CMS}/a"),
            Some("application/apply-patch+yaml"),
            b"data: {}".to_vec(),
        )
        .await;
    // Server-side apply needs a field manager (tests/kubectl.rs applies).
    assert_status(&ssa, 422, "Invalid");
    let protobuf = c
        .call(
            "POST",
            CMS,
            Some("application/vnd.kubernetes.protobuf"),
            b"k8s\0".to_vec(),
        )
        .await;
    // An envelope that names no kind (protobuf bodies: tests/protobuf.rs).
    assert_status(&protobuf, 400, "BadRequest");
    assert_status(
        &c.delete("/api/v1/namespaces/default").await,
        403,
        "Forbidden",
    );

    // Still serving.
    let version = c.get("/version").await;
    assert_eq!(version.code, 200);
    assert_eq!(version.body["gitVersion"], "v1.32.0-watchlife");
    assert_eq!(c.get(&format!("{CMS}/a")).await.code, 200);
}

#[tokio::test]
async fn discovery_answers_aggregated_requests_with_the_plain_documents() {
    let server = support::start().await;
    let c = Client::new(&server.base, None);
    let aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
    let apis = c
        .call_accepting("GET", "/apis", None, Vec::new(), Some(aggregated))
        .await;
    assert_eq!(apis.code, 200);
    assert_eq!(apis.content_type, "application/json");
    assert_eq!(apis.body["kind"], "APIGroupList");
    let core = c.get("/api/v1").await;
    let pods = core.body["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "pods")
        .unwrap()
        .clone();
    assert_eq!(pods["shortNames"], json!(["po"]));
    assert_eq!(pods["namespaced"], true);
    let apps = c.get("/apis/apps/v1").await;
    assert_eq!(apps.body["groupVersion"], "apps/v1");
    assert_eq!(c.get("/api").await.body["versions"], json!(["v1"]));
}

#[tokio::test]
async fn patches_updates_and_the_status_subresource() {
    let server = support::start().await;
    let c = Client::new(&server.base, None);
    c.post(
        CMS,
        &json!({"metadata": {"name": "p"}, "data": {"a": "1", "b": "2"}}),
    )
    .await;
    let merged = c
        .patch(
            &format!("{CMS}/p"),
            "application/merge-patch+json",
            &json!({"data": {"a": null, "c": "3"}}),
        )
        .await;
    assert_eq!(merged.body["data"], json!({"b": "2", "c": "3"}));
    let jp = c
        .patch(
            &format!("{CMS}/p"),
            "application/json-patch+json",
            &json!([{"op": "replace", "path": "/data/b", "value": "9"}]),
        )
        .await;
    assert_eq!(jp.body["data"]["b"], "9");
    let stale = c
        .patch(
            &format!("{CMS}/p"),
            "application/merge-patch+json",
            &json!({"metadata": {"resourceVersion": "1"}, "data": {"x": "y"}}),
        )
        .await;
    assert_status(&stale, 409, "Conflict");
    let renamed = c
        .patch(
            &format!("{CMS}/p"),
            "application/merge-patch+json",
            &json!({"metadata": {"name": "q"}}),
        )
        .await;
    assert_status(&renamed, 422, "Invalid");
    let put_other_name = c
        .put(&format!("{CMS}/p"), &json!({"metadata": {"name": "q"}}))
        .await;
    assert_status(&put_other_name, 400, "BadRequest");

    let pod = c
        .post(PODS, &json!({"metadata": {"name": "w"}, "spec": {"containers": [{"name": "c", "image": "app:0.5.0"}]}}))
        .await;
    assert_eq!(
        pod.body["status"]["phase"], "Pending",
        "the create strategy"
    );
    let mut running = pod.body.clone();
    running["status"]["phase"] = "Running".into();
    running["spec"]["containers"][0]["image"] = "ignored".into();
    let status = c.put(&format!("{PODS}/w/status"), &running).await;
    assert_eq!(status.code, 200, "{}", status.text);
    assert_eq!(status.body["status"]["phase"], "Running");
    assert_eq!(status.body["spec"]["containers"][0]["image"], "app:0.5.0");
    let smp = c
        .patch(
            &format!("{PODS}/w"),
            "application/strategic-merge-patch+json",
            &json!({"spec": {"containers": [{"name": "c", "image": "app:1.5.3"}]}, "status": {"phase": "Failed"}}),
        )
        .await;
    assert_eq!(smp.body["spec"]["containers"][0]["image"], "app:1.5.3");
    assert_eq!(
        smp.body["status"]["phase"], "Running",
        "status is not written through the main resource"
    );
}

#[tokio::test]
async fn scale_subresource() {
    let server = support::start().await;
    let c = Client::new(&server.base, None);
    let created = c
        .post(
            DEPLOYS,
            &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}}}),
        )
        .await;
    assert_eq!(created.code, 201, "{}", created.text);
    let scale = c.get(&format!("{DEPLOYS}/web/scale")).await;
    assert_eq!(scale.body["kind"], "Scale");
    assert_eq!(scale.body["apiVersion"], "autoscaling/v1");
    assert_eq!(scale.body["status"]["selector"], "app=web");
    let mut put = scale.body.clone();
    put["spec"]["replicas"] = 3.into();
    let after_put = c.put(&format!("{DEPLOYS}/web/scale"), &put).await;
    assert_eq!(after_put.body["spec"]["replicas"], 3, "{}", after_put.text);
    // The same Scale again carries a stale resourceVersion.
    assert_status(
        &c.put(&format!("{DEPLOYS}/web/scale"), &put).await,
        409,
        "Conflict",
    );
    let patched = c
        .patch(
            &format!("{DEPLOYS}/web/scale"),
            "application/merge-patch+json",
            &json!({"spec": {"replicas": 5}}),
        )
        .await;
    assert_eq!(patched.body["spec"]["replicas"], 5);
    let deployment = c.get(&format!("{DEPLOYS}/web")).await;
    assert_eq!(deployment.body["spec"]["replicas"], 5);
    assert_eq!(
        deployment.body["metadata"]["generation"], 3,
        "two spec changes"
    );
    let negative = c
        .patch(
            &format!("{DEPLOYS}/web/scale"),
            "application/merge-patch+json",
            &json!({"spec": {"replicas": -1}}),
        )
        .await;
    assert_status(&negative, 422, "Invalid");
}

#[tokio::test]
async fn deleting_a_scheduled_pod_marks_it_and_an_unscheduled_one_goes_at_once() {
    let server = support::start().await;
    let c = Client::new(&server.base, None);
    c.post(
        PODS,
        &json!({"metadata": {"name": "bound"}, "spec": {"nodeName": "node-a"}}),
    )
    .await;
    c.post(PODS, &json!({"metadata": {"name": "loose"}})).await;
    let rv = server.cp.revision();
    let mut w = c
        .stream(&format!(
            "{PODS}?watch=1&resourceVersion={rv}&timeoutSeconds=30"
        ))
        .await;
    let marked = c.delete(&format!("{PODS}/bound")).await;
    assert_eq!(marked.code, 200);
    assert_eq!(marked.body["kind"], "Pod");
    assert!(marked.body["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(marked.body["metadata"]["deletionGracePeriodSeconds"], 30);
    assert_eq!(
        c.get(&format!("{PODS}/bound")).await.code,
        200,
        "it stays for its kubelet"
    );
    let gone = c.delete(&format!("{PODS}/loose")).await;
    assert_eq!(gone.code, 200);
    assert_status(&c.get(&format!("{PODS}/loose")).await, 404, "NotFound");
    // The kubelet's final delete, with a grace period of zero.
    let body = json!({"gracePeriodSeconds": 0}).to_string().into_bytes();
    let finished = c
        .call(
            "DELETE",
            &format!("{PODS}/bound"),
            Some("application/json"),
            body,
        )
        .await;
    assert_eq!(finished.code, 200);
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(summary(&w.next_change().await.expect("an event")));
    }
    let pairs = |l: &[(&str, &str)]| {
        l.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        seen,
        pairs(&[
            ("MODIFIED", "bound"),
            ("DELETED", "loose"),
            ("DELETED", "bound")
        ])
    );
    // Other types answer a Status of success.
    c.post(CMS, &json!({"metadata": {"name": "c"}})).await;
    let cm = c.delete(&format!("{CMS}/c")).await;
    assert_eq!(cm.body["kind"], "Status");
    assert_eq!(cm.body["status"], "Success");
    assert_eq!(cm.body["details"]["name"], "c");
}

#[tokio::test]
async fn a_dropped_watch_simply_ends_and_a_watch_of_one_object_sees_only_it() {
    let server = support::start().await;
    let c = Client::new(&server.base, None);
    let mut all = c
        .stream(&format!("{CMS}?watch=true&timeoutSeconds=30"))
        .await;
    let mut one = c
        .stream("/api/v1/watch/namespaces/default/configmaps/b?timeoutSeconds=30")
        .await;
    c.post(CMS, &json!({"metadata": {"name": "a"}})).await;
    c.post(CMS, &json!({"metadata": {"name": "b"}})).await;
    assert_eq!(
        summary(&all.next().await.unwrap()),
        ("ADDED".into(), "a".into())
    );
    assert_eq!(
        summary(&one.next().await.unwrap()),
        ("ADDED".into(), "b".into())
    );
    server.cp.drop_watchers();
    // What was already dispatched is delivered, then the stream ends
    // without an ERROR event: the client re-watches from its last version.
    let rest: Vec<Value> = {
        let mut v = Vec::new();
        while let Some(e) = all.next().await {
            v.push(e);
        }
        v
    };
    assert_eq!(
        rest.iter().map(summary).collect::<Vec<_>>(),
        vec![("ADDED".into(), "b".into())]
    );
    assert!(one.next().await.is_none());
}

#[tokio::test]
async fn a_watch_ends_at_its_timeout_after_a_last_bookmark() {
    let server = support::start().await;
    let c = Client::new(&server.base, None);
    c.post(CMS, &json!({"metadata": {"name": "a"}})).await;
    let rv = server.cp.revision();
    let mut w = c
        .stream(&format!(
            "{CMS}?watch=1&allowWatchBookmarks=true&timeoutSeconds=4&resourceVersion={rv}"
        ))
        .await;
    // The store moves on with another type: a bookmark can carry that.
    c.post(
        "/api/v1/namespaces/default/pods",
        &json!({"metadata": {"name": "elsewhere"}}),
    )
    .await;
    let moved = server.cp.revision();
    let mut events = Vec::new();
    while let Some(e) = w.next().await {
        events.push(e);
    }
    // With a timeout shorter than the bookmark period, the only event is the
    // bookmark due 2 s before the timeout, as the apiserver sends it (a watch
    // of 2 s or less gets none). It is past the watch's own resourceVersion:
    // a watch that has seen nothing move gets none (see the Cacher's tests).
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "BOOKMARK");
    assert_eq!(
        events[0]["object"]["metadata"]["resourceVersion"],
        moved.to_string()
    );
}
