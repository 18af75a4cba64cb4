//! Server-side printing: the `Table` (`meta.k8s.io/v1`) kubectl asks for
//! (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io, ...`) so that
//! `kubectl get` prints the columns a cluster prints (a pod's READY, STATUS,
//! RESTARTS; a deployment's UP-TO-DATE and AVAILABLE; an event's REASON and
//! MESSAGE...) rather than NAME and AGE alone.
//!
//! The columns are kube-apiserver's own printers' for the served types
//! (`pkg/printers/internalversion`), the common ones and those `-o wide`
//! adds (priority 1). Lists, single objects and watch events are turned into
//! tables; each row carries the object's metadata as `PartialObjectMetadata`.

use serde_json::{Value, json};
use watchlife_controlplane::ResourceType;

/// Whether an `Accept` header asks for a `meta.k8s.io` Table first.
pub fn wanted(accept: Option<&str>) -> bool {
    accept
        .and_then(|a| a.split(',').next())
        .is_some_and(|first| {
            let params: Vec<String> = first
                .split(';')
                .skip(1)
                .map(|p| p.trim().replace(' ', "").to_ascii_lowercase())
                .collect();
            params.iter().any(|p| p == "as=table") && params.iter().any(|p| p == "g=meta.k8s.io")
        })
}

/// How a column's cell is read from an object, given the server's clock in
/// seconds since the epoch (for ages).
type Cell = fn(&Value, i64) -> Value;

/// One column of a type's Table: name, type, priority (1: only with
/// `-o wide`), and its cell.
struct Column {
    name: &'static str,
    kind: &'static str,
    priority: u8,
    cell: Cell,
}

/// A column of text that `kubectl get` always prints.
const fn string(name: &'static str, cell: Cell) -> Column {
    Column {
        name,
        kind: "string",
        priority: 0,
        cell,
    }
}

/// A column of numbers that `kubectl get` always prints.
const fn integer(name: &'static str, cell: Cell) -> Column {
    Column {
        kind: "integer",
        ..string(name, cell)
    }
}

/// A column of text that only `kubectl get -o wide` prints.
const fn wide(name: &'static str, cell: Cell) -> Column {
    Column {
        priority: 1,
        ..string(name, cell)
    }
}

/// The cell of a column the demo has nothing to put in.
const NOTHING: Cell = |_, _| json!("<none>");

const NAME: Column = string("Name", |o, _| json!(text(o, "/metadata/name")));
const AGE: Column = string("Age", |o, now| {
    json!(age(text(o, "/metadata/creationTimestamp"), now))
});
const CONTAINERS: Column = wide("Containers", |o, _| json!(template_containers(o, "name")));
const IMAGES: Column = wide("Images", |o, _| json!(template_containers(o, "image")));
const SELECTOR: Column = wide("Selector", |o, _| json!(selector(o)));

const POD_COLUMNS: &[Column] = &[
    NAME,
    string("Ready", |o, _| json!(pod_ready(o))),
    string("Status", |o, _| json!(pod_status(o))),
    string("Restarts", |o, _| json!(pod_restarts(o).to_string())),
    AGE,
    wide("IP", |o, _| json!(or_none(text(o, "/status/podIP")))),
    wide("Node", |o, _| json!(or_none(text(o, "/spec/nodeName")))),
    wide("Nominated Node", NOTHING),
    wide("Readiness Gates", NOTHING),
];

const DEPLOYMENT_COLUMNS: &[Column] = &[
    NAME,
    string("Ready", |o, _| {
        json!(format!(
            "{}/{}",
            number(o, "/status/readyReplicas"),
            desired_replicas(o)
        ))
    }),
    integer("Up-to-date", |o, _| {
        json!(number(o, "/status/updatedReplicas"))
    }),
    integer("Available", |o, _| {
        json!(number(o, "/status/availableReplicas"))
    }),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

const REPLICASET_COLUMNS: &[Column] = &[
    NAME,
    integer("Desired", |o, _| json!(desired_replicas(o))),
    integer("Current", |o, _| json!(number(o, "/status/replicas"))),
    integer("Ready", |o, _| json!(number(o, "/status/readyReplicas"))),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

const EVENT_COLUMNS: &[Column] = &[
    string("Last Seen", |o, now| json!(age(last_seen(o), now))),
    string("Type", |o, _| json!(text(o, "/type"))),
    string("Reason", |o, _| json!(text(o, "/reason"))),
    string("Object", |o, _| {
        json!(format!(
            "{}/{}",
            text(o, "/involvedObject/kind").to_ascii_lowercase(),
            text(o, "/involvedObject/name")
        ))
    }),
    string("Message", |o, _| json!(text(o, "/message"))),
];

const NODE_COLUMNS: &[Column] = &[
    NAME,
    string("Status", |o, _| json!(node_status(o))),
    string("Roles", NOTHING),
    AGE,
    string("Version", |o, _| {
        json!(text(o, "/status/nodeInfo/kubeletVersion"))
    }),
    wide("Internal-IP", |o, _| json!(or_none(internal_ip(o)))),
];

const NAMESPACE_COLUMNS: &[Column] = &[
    NAME,
    string("Status", |o, _| {
        json!(if is_deleting(o) {
            "Terminating"
        } else {
            "Active"
        })
    }),
    AGE,
];

const SERVICE_COLUMNS: &[Column] = &[
    NAME,
    string("Type", |o, _| json!(text_or(o, "/spec/type", "ClusterIP"))),
    string("Cluster-IP", |o, _| {
        json!(or_none(text(o, "/spec/clusterIP")))
    }),
    string("External-IP", NOTHING),
    string("Port(s)", |o, _| json!(or_none(&service_ports(o)))),
    AGE,
    SELECTOR,
];

const CONFIGMAP_COLUMNS: &[Column] = &[
    NAME,
    integer("Data", |o, _| {
        json!(
            ["data", "binaryData"]
                .iter()
                .filter_map(|f| o.get(*f).and_then(Value::as_object))
                .map(|m| m.len())
                .sum::<usize>()
        )
    }),
    AGE,
];

const SECRET_COLUMNS: &[Column] = &[
    NAME,
    string("Type", |o, _| json!(text_or(o, "/type", "Opaque"))),
    integer("Data", |o, _| {
        json!(
            o.get("data")
                .and_then(Value::as_object)
                .map_or(0, |m| m.len())
        )
    }),
    AGE,
];

/// Any other type's columns.
const DEFAULT_COLUMNS: &[Column] = &[NAME, AGE];

fn columns(rt: ResourceType) -> &'static [Column] {
    match rt.plural {
        "pods" => POD_COLUMNS,
        "deployments" => DEPLOYMENT_COLUMNS,
        "replicasets" => REPLICASET_COLUMNS,
        "events" => EVENT_COLUMNS,
        "nodes" => NODE_COLUMNS,
        "namespaces" => NAMESPACE_COLUMNS,
        "services" => SERVICE_COLUMNS,
        "configmaps" => CONFIGMAP_COLUMNS,
        "secrets" => SECRET_COLUMNS,
        _ => DEFAULT_COLUMNS,
    }
}

fn column_definitions(rt: ResourceType) -> Value {
    Value::Array(
        columns(rt)
            .iter()
            .map(|column| {
                json!({
                    "name": column.name,
                    "type": column.kind,
                    "format": if column.name == "Name" { "name" } else { "" },
                    "description": "",
                    "priority": column.priority,
                })
            })
            .collect(),
    )
}

/// A list (`{Kind}List`) or one object as a Table; `now` is the server's
/// clock in seconds since the epoch, for the ages.
pub fn of(rt: ResourceType, value: &Value, now: i64) -> Value {
    let items = match value.get("items").and_then(Value::as_array) {
        Some(items) => items.clone(),
        None => vec![value.clone()],
    };
    let mut metadata = json!({});
    if let Some(rv) = value.pointer("/metadata/resourceVersion") {
        metadata["resourceVersion"] = rv.clone();
    }
    if let Some(token) = value.pointer("/metadata/continue") {
        metadata["continue"] = token.clone();
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": column_definitions(rt),
        "rows": items.iter().map(|o| row(rt, o, now)).collect::<Vec<_>>(),
    })
}

/// A watch event's line with its object as a one-row Table (ERROR and
/// BOOKMARK events are left as they are).
pub fn event_line(rt: ResourceType, line: &[u8], now: i64) -> Option<Vec<u8>> {
    let mut event: Value = serde_json::from_slice(line).ok()?;
    if !matches!(
        event["type"].as_str(),
        Some("ADDED" | "MODIFIED" | "DELETED")
    ) {
        return None;
    }
    event["object"] = of(rt, &event["object"], now);
    let mut out = serde_json::to_vec(&event).ok()?;
    out.push(b'\n');
    Some(out)
}

fn row(rt: ResourceType, obj: &Value, now: i64) -> Value {
    let mut metadata = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
    if let Some(m) = metadata.as_object_mut() {
        m.remove("managedFields");
    }
    let cells: Vec<Value> = columns(rt)
        .iter()
        .map(|column| (column.cell)(obj, now))
        .collect();
    json!({
        "cells": cells,
        "object": {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": metadata,
        },
    })
}

fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The text at `pointer`, or `default` when there is none.
fn text_or<'a>(obj: &'a Value, pointer: &str, default: &'a str) -> &'a str {
    match text(obj, pointer) {
        "" => default,
        t => t,
    }
}

fn number(obj: &Value, pointer: &str) -> i64 {
    obj.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn or_none(s: &str) -> String {
    if s.is_empty() {
        "<none>".into()
    } else {
        s.into()
    }
}

fn is_deleting(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp").is_some()
}

/// A Deployment's or ReplicaSet's `spec.replicas`, 1 when unset.
fn desired_replicas(obj: &Value) -> i64 {
    obj.pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

/// One `field` of each container of the pod template, comma-separated.
fn template_containers(obj: &Value, field: &str) -> String {
    obj.pointer("/spec/template/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c[field].as_str())
        .collect::<Vec<_>>()
        .join(",")
}

fn selector(obj: &Value) -> String {
    let labels = obj
        .pointer("/spec/selector/matchLabels")
        .or_else(|| obj.pointer("/spec/selector"))
        .and_then(Value::as_object);
    or_none(
        &labels
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some(format!("{k}={}", v.as_str()?)))
            .collect::<Vec<_>>()
            .join(","),
    )
}

fn container_statuses(pod: &Value) -> impl Iterator<Item = &Value> {
    pod.pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// A pod's containers ready of all its containers (`1/2`).
fn pod_ready(pod: &Value) -> String {
    let total = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let ready = container_statuses(pod)
        .filter(|c| c["ready"] == true)
        .count();
    format!("{ready}/{total}")
}

/// A pod's status as kubectl words it.
fn pod_status(pod: &Value) -> String {
    if is_deleting(pod) {
        "Terminating".to_string()
    } else {
        match text(pod, "/status/phase") {
            "Pending" if !text(pod, "/spec/nodeName").is_empty() => "ContainerCreating".to_string(),
            "" => "Pending".to_string(),
            phase => phase.to_string(),
        }
    }
}

fn pod_restarts(pod: &Value) -> i64 {
    container_statuses(pod)
        .map(|c| c["restartCount"].as_i64().unwrap_or(0))
        .sum()
}

/// When an event was last seen: the first of its times that is set.
fn last_seen(event: &Value) -> &str {
    [
        "/lastTimestamp",
        "/eventTime",
        "/firstTimestamp",
        "/metadata/creationTimestamp",
    ]
    .iter()
    .map(|p| text(event, p))
    .find(|t| !t.is_empty())
    .unwrap_or("")
}

/// A node's readiness, and whether pods may be scheduled on it.
fn node_status(node: &Value) -> String {
    let ready = node
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    let mut status = if ready { "Ready" } else { "NotReady" }.to_string();
    if node.pointer("/spec/unschedulable") == Some(&json!(true)) {
        status.push_str(",SchedulingDisabled");
    }
    status
}

fn internal_ip(node: &Value) -> &str {
    node.pointer("/status/addresses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|a| a["type"] == "InternalIP")
        .and_then(|a| a["address"].as_str())
        .unwrap_or("")
}

/// A Service's ports (`80/TCP,53/UDP`).
fn service_ports(service: &Value) -> String {
    service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| {
            format!(
                "{}/{}",
                p["port"].as_i64().unwrap_or(0),
                p["protocol"].as_str().unwrap_or("TCP")
            )
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// An RFC 3339 time's age as kubectl prints it (`42s`, `3m20s`, `5h`,
/// `2d3h`...), `<unknown>` when unreadable.
pub fn age(timestamp: &str, now: i64) -> String {
    match crate::protobuf::parse_time(timestamp) {
        Some((at, _)) => human_duration((now - at).max(0)),
        None => "<unknown>".into(),
    }
}

/// Kubernetes' `duration.HumanDuration`.
fn human_duration(seconds: i64) -> String {
    let (minutes, hours) = (seconds / 60, seconds / 3600);
    if seconds < 120 {
        format!("{seconds}s")
    } else if minutes < 10 {
        two_units(minutes, "m", seconds % 60, "s")
    } else if minutes < 180 {
        format!("{minutes}m")
    } else if hours < 8 {
        two_units(hours, "h", minutes % 60, "m")
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        two_units(hours / 24, "d", hours % 24, "h")
    } else if hours < 24 * 365 * 2 {
        format!("{}d", hours / 24)
    } else {
        format!("{}y", hours / 24 / 365)
    }
}

/// A duration in a unit and the next smaller one (`3m20s`), the smaller
/// left out when it is zero (`3m`).
fn two_units(large: i64, large_unit: &str, small: i64, small_unit: &str) -> String {
    match small {
        0 => format!("{large}{large_unit}"),
        small => format!("{large}{large_unit}{small}{small_unit}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use watchlife_controlplane::resource::{EVENTS, PODS};

    #[test]
    fn kubectls_accept_header_asks_for_a_table() {
        assert!(wanted(Some(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
        )));
        assert!(!wanted(Some("application/json")));
        assert!(!wanted(None));
    }

    #[test]
    fn ages_read_as_kubectl_prints_them() {
        assert_eq!(human_duration(42), "42s");
        assert_eq!(human_duration(200), "3m20s");
        assert_eq!(human_duration(3600 * 5), "5h");
        assert_eq!(human_duration(3600 * 51), "2d3h");
        assert_eq!(age("2026-11-22T09:15:04Z", 1_795_338_904 + 42), "42s");
    }

    #[test]
    fn rows_carry_the_familiar_columns() {
        let pod = json!({
            "metadata": {"name": "web-1", "creationTimestamp": "2026-11-22T09:15:04Z", "managedFields": []},
            "spec": {"nodeName": "node-a", "containers": [{"name": "web"}]},
            "status": {"phase": "Running", "podIP": "10.244.0.2",
                       "containerStatuses": [{"ready": true, "restartCount": 0}]}
        });
        let table = of(
            PODS,
            &json!({"metadata": {"resourceVersion": "9"}, "items": [pod]}),
            1_795_338_904 + 60,
        );
        assert_eq!(
            table["rows"][0]["cells"],
            json!([
                "web-1",
                "1/1",
                "Running",
                "0",
                "60s",
                "10.244.0.2",
                "node-a",
                "<none>",
                "<none>"
            ])
        );
        assert_eq!(table["metadata"]["resourceVersion"], "9");
        assert!(
            table["rows"][0]["object"]["metadata"]
                .get("managedFields")
                .is_none()
        );
        let line = br#"{"type":"ADDED","object":{"reason":"Scheduled","type":"Normal","message":"m","involvedObject":{"kind":"Pod","name":"web-1"},"lastTimestamp":"2026-11-22T09:15:04Z","metadata":{"name":"e"}}}"#;
        let event: Value =
            serde_json::from_slice(&event_line(EVENTS, line, 1_795_338_904).unwrap()).unwrap();
        assert_eq!(event["object"]["rows"][0]["cells"][3], "pod/web-1");
        assert!(event_line(EVENTS, br#"{"type":"BOOKMARK","object":{}}"#, 0).is_none());
    }
}
