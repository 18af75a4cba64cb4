//! The demo API's request handling, fuzzed in-process through its router:
//! whatever a client sends as a body (JSON, YAML, protobuf in its `k8s\0`
//! envelope, or any bytes at all), as a patch of any type, or in a query
//! string, the answer is never a 5xx and nothing panics; every refusal is a
//! 4xx whose body is a `Status` carrying that code. Valid bodies still
//! round-trip: what was written in JSON, protobuf or an apply is what a GET
//! reads back.
//!
//! Cases per property: `WATCHLIFE_FUZZ_CASES`, else `PROPTEST_CASES`, else
//! each property's own number (`make fuzz CASES=100000` sets the first).

mod support;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, header};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use std::sync::LazyLock;
use std::time::Duration;
use tower::ServiceExt;
use watchlife_controlplane::resource::{CONFIGMAPS, DEPLOYMENTS, PODS};
use watchlife_controlplane::{Clock, ControlPlane};
use watchlife_demo_apiserver::patch::{self, PatchType};
use watchlife_demo_apiserver::protobuf::{self, PROTOBUF};
use watchlife_demo_apiserver::response::Streamed;
use watchlife_demo_apiserver::{apply, objects};
use watchlife_fuzzkit::config;

/// One runtime for every case: the router's futures need one, and building
/// one per case would cost more than the request.
static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
});

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";
const POD_URL: &str = "/api/v1/namespaces/default/pods/p";

/// A fresh demo API with a config map `c`, a deployment `web` and a pod
/// `p` in `default`, each written through the API (so with managed fields).
fn world() -> (ControlPlane, Router) {
    let cp = ControlPlane::new(Clock::system());
    let router = watchlife_demo_apiserver::router(cp.clone());
    RUNTIME.block_on(async {
        for (url, obj) in [
            (
                CMS,
                configmap("c", &json!({"app": "web"}), &json!({"k": "v"})),
            ),
            (DEPLOYS, deployment("web", 2)),
            ("/api/v1/namespaces/default/pods", pod("p")),
        ] {
            let a = send(&router, json_request(Method::POST, url, &obj)).await;
            assert_eq!(a.code, 201, "seeding {url}: {}", a.text());
        }
    });
    (cp, router)
}

fn configmap(name: &str, labels: &Value, data: &Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels},
        "data": data,
    })
}

fn deployment(name: &str, replicas: u32) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27",
                    "ports": [{"containerPort": 80}], "env": [{"name": "A", "value": "1"}]}]},
            },
        },
    })
}

fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    })
}

struct Answer {
    code: u16,
    content_type: String,
    body: Vec<u8>,
    streamed: bool,
    head: bool,
    path: String,
}

impl Answer {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_default()
    }
}

/// Sends one request. A watch's body is not read (it lasts): only its head.
async fn send(router: &Router, request: Request<Body>) -> Answer {
    let head = request.method() == Method::HEAD;
    let path = request.uri().path().to_string();
    let response = router.clone().oneshot(request).await.unwrap();
    let code = response.status().as_u16();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let streamed = response.extensions().get::<Streamed>().is_some();
    let body = if streamed {
        Vec::new()
    } else {
        tokio::time::timeout(
            Duration::from_secs(30),
            axum::body::to_bytes(response.into_body(), usize::MAX),
        )
        .await
        .expect("a body that is not a watch ends")
        .expect("the body reads")
        .to_vec()
    };
    Answer {
        code,
        content_type,
        body,
        streamed,
        head,
        path,
    }
}

fn json_request(method: Method, uri: &str, body: &Value) -> Request<Body> {
    Request::builder()
        .method(method)
        .uri(uri)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

/// Builds a request from fuzzed parts; `None` when the parts make no HTTP
/// request at all (an URI or a header value the `http` crate refuses
/// before any server could see it).
fn request(
    method: Method,
    uri: &str,
    content_type: Option<&str>,
    accept: Option<&str>,
    body: Vec<u8>,
) -> Option<Request<Body>> {
    let mut builder = Request::builder().method(method).uri(uri);
    if let Some(ct) = content_type {
        builder = builder.header(header::CONTENT_TYPE, ct);
    }
    if let Some(accept) = accept {
        builder = builder.header(header::ACCEPT, accept);
    }
    builder.body(Body::from(body)).ok()
}

/// The contract: below 500, and a refusal is a `Status` with its code (in
/// JSON, or in protobuf when the client asked for it first). Two 5xx are
/// kube-apiserver's own answers, which clients act on, and so are kept:
/// 503 for the metrics API (no metrics server: `kubectl top` says so),
/// and 504 for a LIST at a resourceVersion the server has not reached
/// (`ResourceVersionTooLarge`: a Reflector waits a second and retries).
fn check(a: &Answer) -> Result<(), TestCaseError> {
    prop_assert!(
        (100..600).contains(&a.code),
        "not an HTTP status: {}",
        a.code
    );
    if a.head {
        // An answer to HEAD has no body, by HTTP's rules (so no reason
        // to tell the metrics API's 503 from another).
        let metrics = a.code == 503 && a.path.starts_with("/apis/metrics.k8s.io");
        prop_assert!(a.code < 500 || metrics, "a {} answer to HEAD", a.code);
        return Ok(());
    }
    if a.code < 400 {
        if !a.streamed && a.content_type.starts_with("application/json") {
            prop_assert!(
                serde_json::from_slice::<Value>(&a.body).is_ok(),
                "a {} that is not JSON: {}",
                a.code,
                a.text()
            );
        }
        return Ok(());
    }
    let status = if a.content_type == PROTOBUF {
        match protobuf::decode(&a.body) {
            Ok(v) => v,
            Err(e) => {
                return Err(TestCaseError::fail(format!(
                    "a {} in protobuf that does not decode: {}",
                    a.code, e.message
                )));
            }
        }
    } else {
        prop_assert!(
            a.content_type.starts_with("application/json"),
            "a {} answered as {:?}",
            a.code,
            a.content_type
        );
        a.json()
    };
    let faithful = match a.code {
        503 => {
            status["reason"] == "ServiceUnavailable"
                && status["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("no metrics server"))
        }
        504 => status["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge",
        _ => false,
    };
    prop_assert!(a.code < 500 || faithful, "a {} answer: {}", a.code, status);
    prop_assert_eq!(&status["kind"], "Status", "not a Status: {}", a.text());
    prop_assert_eq!(&status["status"], "Failure");
    prop_assert_eq!(status["code"].as_u64(), Some(u64::from(a.code)));
    prop_assert!(status["message"].as_str().is_some_and(|m| !m.is_empty()));
    Ok(())
}

// ---------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------

/// Keys the server reads, and any others.
fn key() -> BoxedStrategy<String> {
    prop_oneof![
        3 => proptest::sample::select(vec![
            "apiVersion", "kind", "metadata", "name", "namespace", "generateName",
            "labels", "annotations", "resourceVersion", "uid", "managedFields",
            "spec", "status", "replicas", "selector", "matchLabels", "template",
            "containers", "image", "env", "ports", "containerPort", "data",
            "binaryData", "nodeName", "phase", "deletionTimestamp", "finalizers",
            "gracePeriodSeconds", "preconditions", "$patch", "$retainKeys",
            "$setElementOrder/containers", "fieldsV1", "f:metadata", "",
        ])
        .prop_map(String::from),
        1 => "\\PC{0,12}",
    ]
    .boxed()
}

/// Any JSON value, nested a few levels, with the keys above.
fn json_value() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        "\\PC{0,20}".prop_map(Value::from),
        proptest::sample::select(vec![
            "web", "default", "delete", "replace", "merge", "1", "-1", "Running"
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((key(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
    .boxed()
}

/// A valid object of one of the served types.
fn valid_object() -> BoxedStrategy<Value> {
    let name = "[a-z][a-z0-9-]{0,8}[a-z0-9]";
    prop_oneof![
        (name, labels(), data()).prop_map(|(n, l, d)| configmap(&n, &l, &d)),
        (name, 0u32..5).prop_map(|(n, r)| deployment(&n, r)),
        name.prop_map(|n| pod(&n)),
        (name, data()).prop_map(|(n, d)| json!({
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": n}, "stringData": d,
        })),
        name.prop_map(|n| json!({
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": n},
            "spec": {"selector": {"app": n}, "ports": [{"port": 80}]},
        })),
        name.prop_map(
            |n| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}})
        ),
    ]
    .boxed()
}

fn labels() -> BoxedStrategy<Value> {
    proptest::collection::btree_map("[a-z]{1,8}", "[a-z0-9]{0,8}", 0..4)
        .prop_map(|m| json!(m))
        .boxed()
}

fn data() -> BoxedStrategy<Value> {
    proptest::collection::btree_map("[A-Za-z0-9_.-]{1,10}", "\\PC{0,20}", 0..4)
        .prop_map(|m| json!(m))
        .boxed()
}

/// Byte-level edits: flip, insert, delete, or cut at a position (taken
/// modulo the length).
#[derive(Debug, Clone)]
enum Edit {
    Flip(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Cut(usize),
}

fn edits() -> BoxedStrategy<Vec<Edit>> {
    proptest::collection::vec(
        prop_oneof![
            (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Flip(i, b)),
            (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Insert(i, b)),
            any::<usize>().prop_map(Edit::Delete),
            any::<usize>().prop_map(Edit::Cut),
        ],
        1..5,
    )
    .boxed()
}

fn mutate(mut bytes: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for edit in edits {
        let at = |i: usize, len: usize| if len == 0 { 0 } else { i % len };
        match *edit {
            Edit::Flip(i, b) if !bytes.is_empty() => {
                let i = at(i, bytes.len());
                bytes[i] ^= b.max(1);
            }
            Edit::Insert(i, b) => {
                let i = at(i, bytes.len() + 1);
                bytes.insert(i, b);
            }
            Edit::Delete(i) if !bytes.is_empty() => {
                let i = at(i, bytes.len());
                bytes.remove(i);
            }
            Edit::Cut(i) => bytes.truncate(at(i, bytes.len() + 1)),
            _ => {}
        }
    }
    bytes
}

/// A valid object with one value, somewhere inside, replaced by any JSON.
fn structurally_mutated() -> BoxedStrategy<Value> {
    (valid_object(), any::<usize>(), json_value())
        .prop_map(|(mut obj, pick, new)| {
            let mut pointers = Vec::new();
            pointers_of(&obj, String::new(), &mut pointers);
            let target = &pointers[pick % pointers.len()];
            if let Some(slot) = obj.pointer_mut(target) {
                *slot = new;
            }
            obj
        })
        .boxed()
}

fn pointers_of(v: &Value, here: String, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                pointers_of(
                    v,
                    format!("{here}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                pointers_of(v, format!("{here}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push(here);
}

/// A protobuf body: a valid object's, mutated, or an envelope around any
/// bytes, or any bytes after the magic.
fn protobuf_body() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        (valid_object(), edits()).prop_map(|(obj, e)| {
            let bytes = protobuf::encode(&obj).unwrap_or_default();
            mutate(bytes, &e)
        }),
        valid_object().prop_map(|obj| protobuf::encode(&obj).unwrap_or_default()),
        proptest::collection::vec(any::<u8>(), 0..200).prop_map(|b| {
            let mut out = protobuf::MAGIC.to_vec();
            out.extend(b);
            out
        }),
        (
            "[A-Za-z/.0-9]{0,16}",
            "[A-Za-z]{0,16}",
            proptest::collection::vec(any::<u8>(), 0..120)
        )
            .prop_map(|(api_version, kind, raw)| envelope(&api_version, &kind, &raw)),
    ]
    .boxed()
}

/// `k8s\0` + a runtime.Unknown with these fields, written by hand.
fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    fn field(out: &mut Vec<u8>, number: u8, bytes: &[u8]) {
        out.push(number << 3 | 2);
        let mut len = bytes.len();
        loop {
            let byte = (len & 0x7f) as u8;
            len >>= 7;
            if len == 0 {
                out.push(byte);
                break;
            }
            out.push(byte | 0x80);
        }
        out.extend_from_slice(bytes);
    }
    let mut type_meta = Vec::new();
    field(&mut type_meta, 1, api_version.as_bytes());
    field(&mut type_meta, 2, kind.as_bytes());
    let mut out = protobuf::MAGIC.to_vec();
    field(&mut out, 1, &type_meta);
    field(&mut out, 2, raw);
    out
}

/// A YAML rendering of a valid object, or YAML-looking text.
fn yaml_body() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        (valid_object(), edits()).prop_map(|(obj, e)| {
            mutate(serde_yaml::to_string(&obj).unwrap().into_bytes(), &e)
        }),
        structurally_mutated().prop_map(|obj| serde_yaml::to_string(&obj).unwrap().into_bytes()),
        "[a-z:\\- \n{}\\[\\]&*!|>'\"#%@`,?0-9]{0,200}".prop_map(String::into_bytes),
        Just(b"a: &a [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n".to_vec()),
        Just(b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: !!binary aGVsbG8=\n".to_vec()),
        Just(b"--- \n...\n---\nkind: ConfigMap\n".to_vec()),
    ]
    .boxed()
}

/// A body of any kind: any bytes, any JSON, a valid object mutated byte by
/// byte or value by value, protobuf, YAML.
fn body() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..300),
        json_value().prop_map(|v| v.to_string().into_bytes()),
        valid_object().prop_map(|v| v.to_string().into_bytes()),
        (valid_object(), edits()).prop_map(|(v, e)| mutate(v.to_string().into_bytes(), &e)),
        structurally_mutated().prop_map(|v| v.to_string().into_bytes()),
        protobuf_body(),
        yaml_body(),
        Just(b"{\"metadata\":".repeat(200)),
        Just(b"[".repeat(1_000)),
    ]
    .boxed()
}

fn content_type() -> BoxedStrategy<Option<String>> {
    prop_oneof![
        Just(None),
        proptest::sample::select(vec![
            "application/json",
            "application/json; charset=utf-8",
            "APPLICATION/JSON",
            PROTOBUF,
            "application/yaml",
            "application/apply-patch+yaml",
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "text/plain",
            "",
            ";",
            "application/vnd.kubernetes.protobuf;stream=watch",
        ])
        .prop_map(|s| Some(s.to_string())),
        "[ -~]{0,30}".prop_map(Some),
    ]
    .boxed()
}

fn accept() -> BoxedStrategy<Option<String>> {
    prop_oneof![
        3 => Just(None),
        1 => proptest::sample::select(vec![
            "application/json",
            "application/vnd.kubernetes.protobuf, */*",
            "application/vnd.kubernetes.protobuf",
            "application/json;as=Table;v=v1;g=meta.k8s.io, application/json",
            "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
            "application/yaml",
            "*/*",
            ",,;;",
        ])
        .prop_map(|s| Some(s.to_string())),
        1 => "[ -~]{0,30}".prop_map(Some),
    ]
    .boxed()
}

/// Paths that name the served resources in every shape, and some that
/// name nothing.
fn path() -> BoxedStrategy<String> {
    prop_oneof![
        8 => proptest::sample::select(vec![
            CMS,
            "/api/v1/namespaces/default/configmaps/c",
            "/api/v1/namespaces/default/configmaps/missing",
            "/api/v1/namespaces/nowhere/configmaps",
            "/api/v1/namespaces/nowhere/configmaps/c",
            "/api/v1/configmaps",
            DEPLOYS,
            "/apis/apps/v1/namespaces/default/deployments/web",
            "/apis/apps/v1/namespaces/default/deployments/web/scale",
            "/apis/apps/v1/namespaces/default/deployments/web/status",
            "/apis/apps/v1/namespaces/default/replicasets",
            "/api/v1/namespaces/default/pods",
            POD_URL,
            "/api/v1/namespaces/default/pods/p/status",
            "/api/v1/namespaces/default/pods/p/log",
            "/api/v1/namespaces/default/pods/p/exec",
            "/api/v1/namespaces/default/secrets",
            "/api/v1/namespaces/default/services",
            "/api/v1/namespaces/default/events",
            "/api/v1/namespaces",
            "/api/v1/namespaces/default",
            "/api/v1/namespaces/kube-system",
            "/api/v1/nodes",
            "/api/v1/nodes/n1",
            "/api/v1/watch/pods",
            "/api/v1/watch/namespaces/default/configmaps/c",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
            "/apis/metrics.k8s.io/v1beta1/pods",
            "/api",
            "/apis",
            "/apis/apps",
            "/apis/apps/v1",
            "/version",
            "/openapi/v2",
            "/openapi/v3",
            "/openapi/v3/apis/apps/v1",
            "/",
            "//",
            "/api/v1/namespaces/default/configmaps/c/",
        ])
        .prop_map(String::from),
        1 => "(/[a-z0-9.%~-]{0,12}){0,6}",
        1 => "/api/v1/namespaces/[a-zA-Z0-9.%-]{0,70}/configmaps/[a-zA-Z0-9.%-]{0,300}",
    ]
    .boxed()
}

fn method() -> impl Strategy<Value = Method> {
    proptest::sample::select(vec![
        Method::GET,
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
        Method::HEAD,
        Method::OPTIONS,
    ])
}

/// Query parameters the API reads, and others, with values at every edge.
fn query() -> BoxedStrategy<String> {
    let names = proptest::sample::select(support::QUERY_NAMES.to_vec());
    let values = prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        proptest::sample::select(vec![
            "",
            "0",
            "1",
            "true",
            "false",
            "18446744073709551616",
            "1e99",
            "-0",
            "NotOlderThan",
            "Exact",
            "app=web",
            "app in (web,db)",
            "!app",
            "metadata.name=c",
            "spec.nodeName=",
            "status.phase!=Running",
            "metadata.name\\=x",
            "eyJydiI6MSwic3RhcnQiOiJjIn0",
            "kubectl",
        ])
        .prop_map(String::from),
        "[a-z=!,()\\\\. ]{0,40}",
        "\\PC{0,24}",
    ];
    proptest::collection::vec((names, values), 0..6)
        .prop_map(|pairs| {
            let mut q = form_urlencoded::Serializer::new(String::new());
            for (name, value) in pairs {
                // No watches from "now" on a lasting stream here: their heads
                // are checked, their bodies would never end.
                q.append_pair(name, &value);
            }
            q.finish()
        })
        .boxed()
}

/// One JSON patch operation, well formed or not.
fn json_patch_op() -> BoxedStrategy<Value> {
    let op = prop_oneof![
        4 => proptest::sample::select(vec!["add", "remove", "replace", "move", "copy", "test"])
            .prop_map(Value::from),
        1 => json_value(),
    ];
    let pointer = prop_oneof![
        proptest::sample::select(vec![
            "",
            "/",
            "/metadata",
            "/metadata/labels",
            "/metadata/labels/app",
            "/metadata/name",
            "/metadata/resourceVersion",
            "/data",
            "/data/k",
            "/spec/replicas",
            "/spec/template/spec/containers/0",
            "/spec/template/spec/containers/-",
            "/spec/template/spec/containers/9",
            "/spec/template/spec/containers/-1",
            "/spec/template/spec/containers/01",
            "/metadata/managedFields/0/fieldsV1",
            "/status",
            "/a~1b",
            "/a~2",
            "~",
            "x/y",
        ])
        .prop_map(Value::from),
        "(/[a-z0-9~-]{0,6}){0,5}".prop_map(Value::from),
        json_value(),
    ];
    (
        op,
        pointer.clone(),
        pointer,
        proptest::option::of(json_value()),
        any::<u8>(),
    )
        .prop_map(|(op, path, from, value, drop)| {
            let mut o = Map::new();
            if drop & 1 == 0 {
                o.insert("op".into(), op);
            }
            if drop & 2 == 0 {
                o.insert("path".into(), path);
            }
            if drop & 4 == 0 {
                o.insert("from".into(), from);
            }
            if let Some(v) = value {
                o.insert("value".into(), v);
            }
            Value::Object(o)
        })
        .boxed()
}

/// A patch body of the given type, or of another.
fn patch_body() -> BoxedStrategy<(String, Vec<u8>)> {
    let json_patch = prop_oneof![
        proptest::collection::vec(json_patch_op(), 0..8)
            .prop_map(|ops| Value::Array(ops).to_string().into_bytes()),
        body(),
    ];
    let merge = prop_oneof![
        json_value().prop_map(|v| v.to_string().into_bytes()),
        structurally_mutated().prop_map(|v| v.to_string().into_bytes()),
        body(),
    ];
    let apply = prop_oneof![yaml_body(), body()];
    prop_oneof![
        json_patch.prop_map(|b| ("application/json-patch+json".to_string(), b)),
        merge
            .clone()
            .prop_map(|b| ("application/merge-patch+json".to_string(), b)),
        merge.prop_map(|b| ("application/strategic-merge-patch+json".to_string(), b)),
        apply.prop_map(|b| ("application/apply-patch+yaml".to_string(), b)),
        (content_type(), body()).prop_map(|(ct, b)| (ct.unwrap_or_default(), b)),
    ]
    .boxed()
}

// ---------------------------------------------------------------------------
// Properties: through the router
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(2000))]

    /// Any body, in any declared type, to any path with any method.
    #[test]
    fn any_body_is_answered_below_500_with_a_status_when_refused(
        method in method(),
        path in path(),
        query in query(),
        content_type in content_type(),
        accept in accept(),
        body in body(),
    ) {
        let (_cp, router) = world();
        let uri = if query.is_empty() { path } else { format!("{path}?{query}") };
        if let Some(request) = request(method, &uri, content_type.as_deref(), accept.as_deref(), body) {
            let a = RUNTIME.block_on(send(&router, request));
            check(&a)?;
        }
    }

    /// Any patch, of every type, to existing and missing objects and
    /// their subresources, with any field manager.
    #[test]
    fn any_patch_is_answered_below_500_with_a_status_when_refused(
        path in prop_oneof![
            Just("/api/v1/namespaces/default/configmaps/c".to_string()),
            Just("/apis/apps/v1/namespaces/default/deployments/web".to_string()),
            Just("/apis/apps/v1/namespaces/default/deployments/web/scale".to_string()),
            Just("/apis/apps/v1/namespaces/default/deployments/web/status".to_string()),
            Just(POD_URL.to_string()),
            Just("/api/v1/namespaces/default/pods/p/status".to_string()),
            Just("/api/v1/namespaces/default/configmaps/new".to_string()),
            Just("/api/v1/namespaces/default".to_string()),
            path(),
        ],
        (content_type, body) in patch_body(),
        manager in proptest::option::of(prop_oneof!["[a-z-]{0,10}", "\\PC{0,140}"]),
        force in proptest::option::of(prop_oneof![Just("true".to_string()), "\\PC{0,5}"]),
    ) {
        let (_cp, router) = world();
        let mut q = form_urlencoded::Serializer::new(String::new());
        if let Some(m) = &manager {
            q.append_pair("fieldManager", m);
        }
        if let Some(f) = &force {
            q.append_pair("force", f);
        }
        let q = q.finish();
        let uri = if q.is_empty() { path } else { format!("{path}?{q}") };
        if let Some(request) = request(Method::PATCH, &uri, Some(&content_type), None, body) {
            let a = RUNTIME.block_on(send(&router, request));
            check(&a)?;
        }
    }

    /// Any query string on reads, lists, watches and deletes.
    #[test]
    fn any_query_is_answered_below_500_with_a_status_when_refused(
        method in proptest::sample::select(vec![Method::GET, Method::DELETE, Method::POST]),
        path in prop_oneof![
            Just(CMS.to_string()),
            Just("/api/v1/pods".to_string()),
            Just("/api/v1/events".to_string()),
            Just("/api/v1/namespaces/default/configmaps/c".to_string()),
            Just(POD_URL.to_string()),
            Just("/apis/apps/v1/namespaces/default/deployments/web/scale".to_string()),
            Just("/api/v1/watch/namespaces/default/pods".to_string()),
            path(),
        ],
        query in query(),
        accept in accept(),
        body in prop_oneof![
            3 => Just(Vec::new()),
            1 => json_value().prop_map(|v| json!({"kind": "DeleteOptions", "apiVersion": "v1",
                "gracePeriodSeconds": v.clone(), "preconditions": v}).to_string().into_bytes()),
            1 => body(),
        ],
    ) {
        let (_cp, router) = world();
        let uri = format!("{path}?{query}");
        if let Some(request) = request(method, &uri, Some("application/json"), accept.as_deref(), body) {
            let a = RUNTIME.block_on(send(&router, request));
            check(&a)?;
        }
    }
}

/// Times as clients write them in the fields the server reads times from
/// (an event's, a pod's conditions'): RFC 3339, almost, and anything.
fn timestamp() -> BoxedStrategy<String> {
    prop_oneof![
        Just("2026-11-22T10:15:04Z".to_string()),
        "[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{0,12})?(Z|z|[+-][0-9]{2}:[0-9]{2})",
        "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9+-]{2}:[0-9+-]{2}:[0-9+-]{2}\\PC{0,8}",
        "2026-11-22T10:15:04[.+-]\\PC{0,7}",
        "\\PC{0,30}",
    ]
    .boxed()
}

proptest! {
    #![proptest_config(config(1500))]

    /// Times a client wrote are served back in JSON, in protobuf and as
    /// `kubectl get`'s table, whatever they say.
    #[test]
    fn client_written_times_are_served_in_every_form(
        first in timestamp(),
        last in timestamp(),
        event_time in timestamp(),
        accept in proptest::sample::select(vec![
            "application/json",
            "application/vnd.kubernetes.protobuf, */*",
            "application/json;as=Table;v=v1;g=meta.k8s.io, application/json",
        ]),
    ) {
        let (_cp, router) = world();
        let event = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "e"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
            "reason": "Scheduled", "type": "Normal", "message": "m",
            "firstTimestamp": first, "lastTimestamp": last, "eventTime": event_time,
        });
        RUNTIME.block_on(async {
            let created = send(&router, json_request(Method::POST, "/api/v1/namespaces/default/events", &event)).await;
            check(&created)?;
            for url in ["/api/v1/namespaces/default/events/e", "/api/v1/namespaces/default/events"] {
                let got = send(&router, request(Method::GET, url, None, Some(accept), Vec::new()).unwrap()).await;
                check(&got)?;
            }
            Ok::<_, TestCaseError>(())
        })?;
    }
}

/// The collection a valid object of [`valid_object`] is created in.
fn collection_of(obj: &Value) -> &'static str {
    match obj["kind"].as_str() {
        Some("Deployment") => DEPLOYS,
        Some("Pod") => "/api/v1/namespaces/default/pods",
        Some("Secret") => "/api/v1/namespaces/default/secrets",
        Some("Service") => "/api/v1/namespaces/default/services",
        Some("Namespace") => "/api/v1/namespaces",
        _ => CMS,
    }
}

proptest! {
    #![proptest_config(config(1000))]

    /// Whatever odd object the server took (a valid one with any value
    /// anywhere inside) is served back in JSON, in protobuf and as a table,
    /// alone and in its list.
    #[test]
    fn whatever_is_stored_is_served_in_every_form(obj in structurally_mutated()) {
        let (_cp, router) = world();
        let collection = collection_of(&obj);
        RUNTIME.block_on(async {
            let created = send(&router, json_request(Method::POST, collection, &obj)).await;
            check(&created)?;
            let name = created.json()["metadata"]["name"].as_str().map(String::from);
            for accept in [
                "application/json",
                "application/vnd.kubernetes.protobuf, */*",
                "application/vnd.kubernetes.protobuf",
                "application/json;as=Table;v=v1;g=meta.k8s.io, application/json",
            ] {
                let mut urls = vec![collection.to_string()];
                if let Some(name) = &name {
                    urls.push(format!("{collection}/{name}"));
                }
                for url in urls {
                    if let Some(request) = request(Method::GET, &url, None, Some(accept), Vec::new()) {
                        check(&send(&router, request).await)?;
                    }
                }
            }
            Ok::<_, TestCaseError>(())
        })?;
    }
}

// ---------------------------------------------------------------------------
// Properties: the parsers alone, many more cases for the time
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(5000))]

    #[test]
    fn protobuf_bodies_decode_or_are_a_400(body in protobuf_body()) {
        if let Err(status) = protobuf::decode(&body) {
            prop_assert!((400..500).contains(&status.code), "{}", status.message);
        }
    }

    #[test]
    fn apply_bodies_parse_or_are_a_400(body in prop_oneof![yaml_body(), body()]) {
        match apply::parse(&body) {
            Ok(v) => prop_assert!(v.is_object()),
            Err(status) => prop_assert_eq!(status.code, 400),
        }
    }

    #[test]
    fn object_bodies_decode_or_are_a_400(body in body()) {
        for rt in [CONFIGMAPS, DEPLOYMENTS, PODS] {
            if let Err(status) = objects::decode(rt, &body) {
                prop_assert_eq!(status.code, 400);
            }
        }
    }

    #[test]
    fn patches_apply_or_are_a_4xx(
        (content_type, body) in patch_body(),
        target in prop_oneof![valid_object(), structurally_mutated(), json_value()],
    ) {
        if let Ok(kind) = PatchType::from_content_type(Some(&content_type))
            && let Err(status) = patch::apply(kind, &target, &body)
        {
            prop_assert!((400..500).contains(&status.code), "{}", status.message);
        }
    }
}

// ---------------------------------------------------------------------------
// Round trips: valid bodies still mean what they say
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(500))]

    /// A config map written in JSON, in protobuf or by an apply reads back
    /// with its labels and data; a merge patch and a JSON patch of a label
    /// read back too.
    #[test]
    fn valid_writes_read_back_as_written(
        name in "[a-z][a-z0-9-]{0,8}[a-z0-9]",
        labels in labels(),
        data in data(),
        label in ("[a-z]{1,8}", "[a-z0-9]{1,8}"),
    ) {
        let (_cp, router) = world();
        let obj = configmap(&name, &labels, &data);
        let url = format!("{CMS}/{name}");
        let read = |a: &Answer| -> Value { a.json() };
        // An empty map and no map are the same to a reader.
        let map_at = |v: &Value, at: &str| -> Map<String, Value> {
            v.pointer(at).and_then(Value::as_object).cloned().unwrap_or_default()
        };
        RUNTIME.block_on(async {
            let mut forms: Vec<(&str, Method, String, String, Vec<u8>)> = vec![
                ("json", Method::POST, CMS.to_string(), "application/json".into(), obj.to_string().into_bytes()),
                ("apply", Method::PATCH, format!("{url}?fieldManager=fuzz"), apply::APPLY_YAML.into(), serde_yaml::to_string(&obj).unwrap().into_bytes()),
            ];
            if let Some(pb) = protobuf::encode(&obj) {
                forms.push(("protobuf", Method::POST, CMS.to_string(), PROTOBUF.into(), pb));
            }
            for (form, method, uri, ct, body) in forms {
                let written = send(&router, request(method, &uri, Some(&ct), None, body).unwrap()).await;
                prop_assert!(written.code == 201 || written.code == 200, "{form}: {} {}", written.code, written.text());
                let got = send(&router, request(Method::GET, &url, None, None, Vec::new()).unwrap()).await;
                prop_assert_eq!(got.code, 200);
                let got = read(&got);
                prop_assert_eq!(map_at(&got, "/data"), map_at(&obj, "/data"), "{}", form);
                prop_assert_eq!(map_at(&got, "/metadata/labels"), map_at(&obj, "/metadata/labels"), "{}", form);
                let deleted = send(&router, request(Method::DELETE, &url, None, None, Vec::new()).unwrap()).await;
                prop_assert_eq!(deleted.code, 200);
            }
            let created = send(&router, json_request(Method::POST, CMS, &obj)).await;
            prop_assert_eq!(created.code, 201);
            let (k, v) = &label;
            for (ct, patch) in [
                ("application/merge-patch+json", json!({"metadata": {"labels": {k.clone(): v}}})),
                ("application/json-patch+json", json!([
                    {"op": "add", "path": "/metadata/labels", "value": {}},
                    {"op": "add", "path": format!("/metadata/labels/{k}"), "value": v},
                ])),
            ] {
                let patched = send(&router, request(Method::PATCH, &url, Some(ct), None, patch.to_string().into_bytes()).unwrap()).await;
                prop_assert_eq!(patched.code, 200, "{}: {}", ct, patched.text());
                prop_assert_eq!(&patched.json()["metadata"]["labels"][k], v);
                prop_assert_eq!(&patched.json()["data"], obj.get("data").unwrap());
            }
            Ok(())
        })?;
    }
}

// ---------------------------------------------------------------------------
// What the fuzzing found
// ---------------------------------------------------------------------------

/// A JSON patch that copies the document into itself doubles it with each
/// operation: forty operations would ask for terabytes. As the apiserver
/// does, the copies a patch makes are bounded (3 MiB in all: a 422), and so
/// are its operations (10,000: a 413).
#[test]
fn a_json_patch_cannot_copy_the_document_into_itself_without_bound() {
    let (_cp, router) = world();
    let ops: Vec<Value> = (0..64)
        .map(|i| json!({"op": "copy", "from": "/data", "path": format!("/data/k{i}")}))
        .collect();
    let target = configmap("c", &json!({}), &json!({"k": "v".repeat(1000)}));
    let bomb = Value::Array(ops).to_string();
    let status = patch::apply(PatchType::Json, &target, bomb.as_bytes()).unwrap_err();
    assert_eq!(status.code, 422, "{}", status.message);
    json_patch_is_refused(&router, bomb);

    let many: Vec<Value> = (0..10_001)
        .map(|_| json!({"op": "test", "path": "/data/k", "value": "v"}))
        .collect();
    let many = Value::Array(many).to_string();
    let status = patch::apply(PatchType::Json, &target, many.as_bytes()).unwrap_err();
    assert_eq!(status.code, 413, "{}", status.message);
}

/// `bomb`, a JSON patch of configmap `c`, answered 422 through the API.
fn json_patch_is_refused(router: &Router, bomb: String) {
    let a = RUNTIME.block_on(send(
        router,
        request(
            Method::PATCH,
            "/api/v1/namespaces/default/configmaps/c",
            Some("application/json-patch+json"),
            None,
            bomb.into_bytes(),
        )
        .unwrap(),
    ));
    assert_eq!(a.code, 422, "{}", a.text());
    check(&a).unwrap();
}

/// A JSON patch whose operations each add a deeply nested value at the
/// deepest point of the last one nests the object without bound (a body
/// is nested at most 128 levels, but 150 operations make 15,000), deeper
/// than the server's own recursive walks of an object can go. Such a
/// patch is a 422; the object stays as it was and the server lives on.
#[test]
fn a_json_patch_cannot_nest_the_object_without_bound() {
    let (_cp, router) = world();
    let level = 100;
    let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let mut ops = vec![format!(
        r#"{{"op":"add","path":"/x","value":{}}}"#,
        nested(level)
    )];
    for k in 1..150 {
        let path = format!("/x{}/-", "/0".repeat(k * level - 1));
        ops.push(format!(
            r#"{{"op":"add","path":"{path}","value":{}}}"#,
            nested(level)
        ));
    }
    let bomb = format!("[{}]", ops.join(","));
    assert!(bomb.len() < objects::MAX_BODY_BYTES);
    let target = configmap("c", &json!({}), &json!({}));
    let status = patch::apply(PatchType::Json, &target, bomb.as_bytes()).unwrap_err();
    assert_eq!(status.code, 422, "{}", status.message);
    json_patch_is_refused(&router, bomb);
}
