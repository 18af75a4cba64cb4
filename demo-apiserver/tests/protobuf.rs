//! Protobuf bodies, read and written as kube-apiserver does, checked with an
//! independent reading: kube-rs's prost bindings (`k8s-pb`), generated from
//! a newer Kubernetes' .proto files than the ones the server is built from.

use axum::body::Body;
use axum::http::{Request, header};
use k8s_pb::api::apps::v1 as apps;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use prost::Message;
use serde_json::{Value, json};
use tower::ServiceExt;
use watchlife_controlplane::{Clock, ControlPlane};
use watchlife_demo_apiserver::protobuf::{self, PROTOBUF};

fn built_with_schemas() -> bool {
    let built = protobuf::pool().is_some();
    if !built {
        eprintln!("skipped: this build has no protobuf schemas (no Kubernetes source tree)");
    }
    built
}

/// `k8s\0` + runtime.Unknown around `message`.
fn envelope(api_version: &str, kind: &str, message: &impl Message) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(message.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = b"k8s\0".to_vec();
    out.extend(unknown.encode_to_vec());
    out
}

/// The envelope's kind and inner bytes.
fn open(body: &[u8]) -> (String, Vec<u8>) {
    let inner = body.strip_prefix(b"k8s\0").expect("the k8s\\0 envelope");
    let unknown = Unknown::decode(inner).expect("a runtime.Unknown");
    (
        unknown.type_meta.unwrap().kind.unwrap(),
        unknown.raw.unwrap_or_default(),
    )
}

struct Answer {
    code: u16,
    content_type: String,
    body: Vec<u8>,
}

async fn send(cp: &ControlPlane, request: Request<Body>) -> Answer {
    let response = watchlife_demo_apiserver::router(cp.clone())
        .oneshot(request)
        .await
        .unwrap();
    let code = response.status().as_u16();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap()
        .to_vec();
    Answer {
        code,
        content_type,
        body,
    }
}

fn get(uri: &str, accept: &str) -> Request<Body> {
    Request::get(uri)
        .header(header::ACCEPT, accept)
        .body(Body::empty())
        .unwrap()
}

fn post_pb(uri: &str, body: Vec<u8>) -> Request<Body> {
    Request::post(uri)
        .header(header::CONTENT_TYPE, PROTOBUF)
        .header(header::ACCEPT, format!("{PROTOBUF}, */*"))
        .body(Body::from(body))
        .unwrap()
}

fn web_deployment() -> apps::Deployment {
    apps::Deployment {
        metadata: Some(meta::ObjectMeta {
            name: Some("web".into()),
            labels: [("app".to_string(), "web".to_string())]
                .into_iter()
                .collect(),
            ..Default::default()
        }),
        spec: Some(apps::DeploymentSpec {
            replicas: Some(3),
            selector: Some(meta::LabelSelector {
                match_labels: [("app".to_string(), "web".to_string())]
                    .into_iter()
                    .collect(),
                ..Default::default()
            }),
            template: Some(core::PodTemplateSpec {
                metadata: Some(meta::ObjectMeta {
                    labels: [("app".to_string(), "web".to_string())]
                        .into_iter()
                        .collect(),
                    ..Default::default()
                }),
                spec: Some(core::PodSpec {
                    containers: vec![core::Container {
                        name: Some("nginx".into()),
                        image: Some("nginx:1.27".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            }),
            ..Default::default()
        }),
        status: None,
    }
}

#[tokio::test]
async fn a_protobuf_create_is_stored_as_the_json_object_it_stands_for() {
    if !built_with_schemas() {
        return;
    }
    let cp = ControlPlane::new(Clock::system());
    let config = core::ConfigMap {
        metadata: Some(meta::ObjectMeta {
            name: Some("settings".into()),
            ..Default::default()
        }),
        data: [("greeting".to_string(), "hello".to_string())]
            .into_iter()
            .collect(),
        binary_data: [("blob".to_string(), vec![0u8, 1, 2, 255])]
            .into_iter()
            .collect(),
        ..Default::default()
    };
    let created = send(
        &cp,
        post_pb(
            "/api/v1/namespaces/default/configmaps",
            envelope("v1", "ConfigMap", &config),
        ),
    )
    .await;
    assert_eq!(
        created.code,
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    // Asked in protobuf first, answered in protobuf.
    assert_eq!(created.content_type, PROTOBUF);
    let (kind, raw) = open(&created.body);
    assert_eq!(kind, "ConfigMap");
    let back = core::ConfigMap::decode(raw.as_slice()).unwrap();
    assert_eq!(back.data["greeting"], "hello");
    let meta = back.metadata.unwrap();
    assert_eq!(meta.namespace.as_deref(), Some("default"));
    assert!(meta.creation_timestamp.unwrap().seconds.unwrap() > 1_700_000_000);

    // Read back in JSON, the default.
    let json = send(
        &cp,
        get(
            "/api/v1/namespaces/default/configmaps/settings",
            "application/json",
        ),
    )
    .await;
    assert_eq!(json.content_type, "application/json");
    let obj: Value = serde_json::from_slice(&json.body).unwrap();
    assert_eq!(obj["data"], json!({"greeting": "hello"}));
    assert_eq!(obj["binaryData"], json!({"blob": "AAEC/w=="}));
    assert_eq!(obj["kind"], "ConfigMap");
}

#[tokio::test]
async fn objects_lists_and_failures_are_answered_in_protobuf_when_asked() {
    if !built_with_schemas() {
        return;
    }
    let cp = ControlPlane::new(Clock::system());
    let created = send(
        &cp,
        post_pb(
            "/apis/apps/v1/namespaces/default/deployments",
            envelope("apps/v1", "Deployment", &web_deployment()),
        ),
    )
    .await;
    assert_eq!(
        created.code,
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );

    let one = send(
        &cp,
        get("/apis/apps/v1/namespaces/default/deployments/web", PROTOBUF),
    )
    .await;
    assert_eq!((one.code, one.content_type.as_str()), (200, PROTOBUF));
    let (kind, raw) = open(&one.body);
    assert_eq!(kind, "Deployment");
    let d = apps::Deployment::decode(raw.as_slice()).unwrap();
    let spec = d.spec.unwrap();
    assert_eq!(spec.replicas, Some(3));
    let container = &spec.template.unwrap().spec.unwrap().containers[0];
    assert_eq!(container.image.as_deref(), Some("nginx:1.27"));
    assert_eq!(d.metadata.unwrap().generation, Some(1));

    let list = send(
        &cp,
        get("/apis/apps/v1/namespaces/default/deployments", PROTOBUF),
    )
    .await;
    assert_eq!(list.code, 200);
    let (kind, raw) = open(&list.body);
    assert_eq!(kind, "DeploymentList");
    let list = apps::DeploymentList::decode(raw.as_slice()).unwrap();
    assert_eq!(list.items.len(), 1);
    assert!(
        list.metadata
            .unwrap()
            .resource_version
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > 0
    );

    let missing = send(
        &cp,
        get(
            "/apis/apps/v1/namespaces/default/deployments/nope",
            PROTOBUF,
        ),
    )
    .await;
    assert_eq!(
        (missing.code, missing.content_type.as_str()),
        (404, PROTOBUF)
    );
    let (kind, raw) = open(&missing.body);
    assert_eq!(kind, "Status");
    let status = meta::Status::decode(raw.as_slice()).unwrap();
    assert_eq!(
        (status.code, status.reason.as_deref()),
        (Some(404), Some("NotFound"))
    );

    // JSON first in Accept: JSON.
    let json = send(
        &cp,
        get(
            "/apis/apps/v1/namespaces/default/deployments/web",
            "application/json, application/vnd.kubernetes.protobuf",
        ),
    )
    .await;
    assert_eq!(json.content_type, "application/json");
}

#[tokio::test]
async fn a_malformed_protobuf_body_is_a_400_and_yaml_a_415() {
    if !built_with_schemas() {
        return;
    }
    let cp = ControlPlane::new(Clock::system());
    for (body, code) in [
        (b"not protobuf".to_vec(), 400),
        (b"k8s\0\xff\xff\xff".to_vec(), 400),
        (
            envelope("v1", "NoSuchKind", &core::ConfigMap::default()),
            400,
        ),
    ] {
        let answer = send(&cp, post_pb("/api/v1/namespaces/default/configmaps", body)).await;
        assert_eq!(
            answer.code,
            code,
            "{}",
            String::from_utf8_lossy(&answer.body)
        );
    }
    let yaml = Request::post("/api/v1/namespaces/default/configmaps")
        .header(header::CONTENT_TYPE, "application/yaml")
        .body(Body::from("kind: ConfigMap"))
        .unwrap();
    let answer = send(&cp, yaml).await;
    assert_eq!(answer.code, 415);
    let status: Value = serde_json::from_slice(&answer.body).unwrap();
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("application/vnd.kubernetes.protobuf")
    );
}
