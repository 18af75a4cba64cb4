//! The objects every measurement writes, lists and parses: a pod of a typical
//! size (about 700 bytes of JSON), and the watch-stream bytes of many of them.

use serde_json::{Value, json};
use watchlife_informer::Object;
use watchlife_protocol::{EventType, ObjectRef, Stage, StageMark, StageTimes, WatchEvent};

/// A running pod named `name`; `n` goes into an annotation, so that every
/// update changes the object as a controller's status update would.
pub fn pod(name: &str, n: u64) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"app": "web", "pod-template-hash": "7d4b9c8f6"},
            "annotations": {"bench.watchlife.dev/n": n.to_string()}
        },
        "spec": {
            "nodeName": "node-a",
            "schedulerName": "default-scheduler",
            "restartPolicy": "Always",
            "containers": [{
                "name": "web",
                "image": "nginx:1.25.3",
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}
            }]
        },
        "status": {
            "phase": "Running",
            "podIP": "10.0.0.12",
            "conditions": [{"type": "Ready", "status": "True"}]
        }
    })
}

/// A small configmap, for the scale figures (150k of them fit easily).
pub fn configmap(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "bench"}},
        "data": {"key": "value"}
    })
}

/// The configmap `name` in `default` with `n` as its only data, as JSON: the
/// object the bench writes again and again, one MODIFIED event a write.
pub fn numbered_configmap(name: &str, n: u64) -> String {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"n": n.to_string()}
    })
    .to_string()
}

/// A Deployment `name` in `namespace` of `replicas` pods of one container.
pub fn deployment(name: &str, namespace: &str, replicas: i32) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}
            }
        }
    })
}

/// The name of the `i`-th pod.
pub fn pod_name(i: usize) -> String {
    format!("web-7d4b9c8f6-{i:06}")
}

/// A Kubernetes watch stream as the apiserver sends it, one JSON event per
/// line: `count` events over `keys` pods, ADDED first for each key, then
/// MODIFIED with a rising resourceVersion, and a DELETED and re-ADDED now
/// and then.
pub fn watch_stream(count: usize, keys: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(count * 800);
    let mut exists = vec![false; keys];
    for i in 0..count {
        let k = i % keys;
        let rv = (1000 + i) as u64;
        let event_type = match (exists[k], i % 97 == 0) {
            (false, _) => "ADDED",
            (true, true) => "DELETED",
            (true, false) => "MODIFIED",
        };
        exists[k] = event_type != "DELETED";
        let mut object = pod(&pod_name(k), i as u64);
        object["metadata"]["resourceVersion"] = rv.to_string().into();
        object["metadata"]["uid"] = format!("00000000-0000-4000-8000-{k:012}").into();
        serde_json::to_writer(&mut out, &json!({"type": event_type, "object": object}))
            .expect("a JSON value writes");
        out.push(b'\n');
    }
    out
}

/// The event the Reflector makes of a pod, as the bridge's does, stamped at
/// `at`: `initial` when it is part of a LIST.
pub fn pod_event(
    event_type: EventType,
    object: Object,
    at: u64,
    initial: bool,
) -> (WatchEvent, Object) {
    let meta = object.meta();
    let event = WatchEvent {
        event_type,
        target: ObjectRef {
            resource: "pods".into(),
            kind: "Pod".into(),
            namespace: meta.namespace().map(String::from),
            name: meta.name().to_string(),
        },
        resource_version: meta.resource_version.to_string(),
        object: object.json().clone(),
        stages: StageTimes::from([(Stage::Reflector, StageMark::at(at))]),
        initial,
        coalesced: false,
        handled: Default::default(),
        patch: None,
        server: None,
    };
    (event, object)
}
