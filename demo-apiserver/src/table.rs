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

/// One column: name, type, and priority (1: only with `-o wide`).
type Column = (&'static str, &'static str, u8);

fn columns(rt: ResourceType) -> &'static [Column] {
    match rt.plural {
        "pods" => &[
            ("Name", "string", 0),
            ("Ready", "string", 0),
            ("Status", "string", 0),
            ("Restarts", "string", 0),
            ("Age", "string", 0),
            ("IP", "string", 1),
            ("Node", "string", 1),
            ("Nominated Node", "string", 1),
            ("Readiness Gates", "string", 1),
        ],
        "deployments" => &[
            ("Name", "string", 0),
            ("Ready", "string", 0),
            ("Up-to-date", "integer", 0),
            ("Available", "integer", 0),
            ("Age", "string", 0),
            ("Containers", "string", 1),
            ("Images", "string", 1),
            ("Selector", "string", 1),
        ],
        "replicasets" => &[
            ("Name", "string", 0),
            ("Desired", "integer", 0),
            ("Current", "integer", 0),
            ("Ready", "integer", 0),
            ("Age", "string", 0),
            ("Containers", "string", 1),
            ("Images", "string", 1),
            ("Selector", "string", 1),
        ],
        "events" => &[
            ("Last Seen", "string", 0),
            ("Type", "string", 0),
            ("Reason", "string", 0),
            ("Object", "string", 0),
            ("Message", "string", 0),
        ],
        "nodes" => &[
            ("Name", "string", 0),
            ("Status", "string", 0),
            ("Roles", "string", 0),
            ("Age", "string", 0),
            ("Version", "string", 0),
            ("Internal-IP", "string", 1),
        ],
        "namespaces" => &[
            ("Name", "string", 0),
            ("Status", "string", 0),
            ("Age", "string", 0),
        ],
        "services" => &[
            ("Name", "string", 0),
            ("Type", "string", 0),
            ("Cluster-IP", "string", 0),
            ("External-IP", "string", 0),
            ("Port(s)", "string", 0),
            ("Age", "string", 0),
            ("Selector", "string", 1),
        ],
        "configmaps" => &[
            ("Name", "string", 0),
            ("Data", "integer", 0),
            ("Age", "string", 0),
        ],
        "secrets" => &[
            ("Name", "string", 0),
            ("Type", "string", 0),
            ("Data", "integer", 0),
            ("Age", "string", 0),
        ],
        _ => &[("Name", "string", 0), ("Age", "string", 0)],
    }
}

fn column_definitions(rt: ResourceType) -> Value {
    Value::Array(
        columns(rt)
            .iter()
            .map(|(name, kind, priority)| {
                json!({
                    "name": name,
                    "type": kind,
                    "format": if *name == "Name" { "name" } else { "" },
                    "description": "",
                    "priority": priority,
                })
            })
            .collect(),
    )
}

/// A list (`{Kind}List`) or one object as a Table; `now` is the server's
/// clock in seconds since the epoch, for the ages.
pub fn of(rt: ResourceType, value: &Value, now: i64) -> Value {
    let (items, rv) = match value.get("items").and_then(Value::as_array) {
        Some(items) => (
            items.clone(),
            value.pointer("/metadata/resourceVersion").cloned(),
        ),
        None => (
            vec![value.clone()],
            value.pointer("/metadata/resourceVersion").cloned(),
        ),
    };
    let mut metadata = json!({});
    if let Some(rv) = rv {
        metadata["resourceVersion"] = rv;
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
    json!({
        "cells": cells(rt, obj, now),
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

fn containers(obj: &Value, pointer: &str, field: &str) -> String {
    obj.pointer(pointer)
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

fn cells(rt: ResourceType, obj: &Value, now: i64) -> Vec<Value> {
    let name = text(obj, "/metadata/name");
    let age = age(text(obj, "/metadata/creationTimestamp"), now);
    match rt.plural {
        "pods" => pod_cells(obj, name, age),
        "deployments" => deployment_cells(obj, name, age),
        "replicasets" => replicaset_cells(obj, name, age),
        "events" => event_cells(obj, now),
        "nodes" => node_cells(obj, name, age),
        "namespaces" => vec![
            json!(name),
            json!(if obj.pointer("/metadata/deletionTimestamp").is_some() {
                "Terminating"
            } else {
                "Active"
            }),
            json!(age),
        ],
        "services" => service_cells(obj, name, age),
        "configmaps" => {
            let count = ["data", "binaryData"]
                .iter()
                .filter_map(|f| obj.get(*f).and_then(Value::as_object))
                .map(|m| m.len())
                .sum::<usize>();
            vec![json!(name), json!(count), json!(age)]
        }
        "secrets" => vec![
            json!(name),
            json!(match text(obj, "/type") {
                "" => "Opaque",
                t => t,
            }),
            json!(
                obj.get("data")
                    .and_then(Value::as_object)
                    .map_or(0, |m| m.len())
            ),
            json!(age),
        ],
        _ => vec![json!(name), json!(age)],
    }
}

/// A pod's row: its containers ready and restarted, and its status as
/// kubectl words it.
fn pod_cells(obj: &Value, name: &str, age: String) -> Vec<Value> {
    let statuses = obj
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array);
    let total = obj
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let ready = statuses
        .into_iter()
        .flatten()
        .filter(|c| c["ready"] == true)
        .count();
    let restarts: i64 = statuses
        .into_iter()
        .flatten()
        .map(|c| c["restartCount"].as_i64().unwrap_or(0))
        .sum();
    let status = if obj.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating".to_string()
    } else {
        match text(obj, "/status/phase") {
            "Pending" if !text(obj, "/spec/nodeName").is_empty() => "ContainerCreating".to_string(),
            "" => "Pending".to_string(),
            phase => phase.to_string(),
        }
    };
    vec![
        json!(name),
        json!(format!("{ready}/{total}")),
        json!(status),
        json!(restarts.to_string()),
        json!(age),
        json!(or_none(text(obj, "/status/podIP"))),
        json!(or_none(text(obj, "/spec/nodeName"))),
        json!("<none>"),
        json!("<none>"),
    ]
}

/// A Deployment's row: its replicas ready, up to date and available.
fn deployment_cells(obj: &Value, name: &str, age: String) -> Vec<Value> {
    vec![
        json!(name),
        json!(format!(
            "{}/{}",
            number(obj, "/status/readyReplicas"),
            obj.pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(1)
        )),
        json!(number(obj, "/status/updatedReplicas")),
        json!(number(obj, "/status/availableReplicas")),
        json!(age),
        json!(containers(obj, "/spec/template/spec/containers", "name")),
        json!(containers(obj, "/spec/template/spec/containers", "image")),
        json!(selector(obj)),
    ]
}

/// A ReplicaSet's row: its replicas desired, current and ready.
fn replicaset_cells(obj: &Value, name: &str, age: String) -> Vec<Value> {
    vec![
        json!(name),
        json!(
            obj.pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(1)
        ),
        json!(number(obj, "/status/replicas")),
        json!(number(obj, "/status/readyReplicas")),
        json!(age),
        json!(containers(obj, "/spec/template/spec/containers", "name")),
        json!(containers(obj, "/spec/template/spec/containers", "image")),
        json!(selector(obj)),
    ]
}

/// An event's row: when it was last seen, and about what.
fn event_cells(obj: &Value, now: i64) -> Vec<Value> {
    let last = [
        "/lastTimestamp",
        "/eventTime",
        "/firstTimestamp",
        "/metadata/creationTimestamp",
    ]
    .iter()
    .map(|p| text(obj, p))
    .find(|t| !t.is_empty())
    .unwrap_or("");
    vec![
        json!(self::age(last, now)),
        json!(text(obj, "/type")),
        json!(text(obj, "/reason")),
        json!(format!(
            "{}/{}",
            text(obj, "/involvedObject/kind").to_ascii_lowercase(),
            text(obj, "/involvedObject/name")
        )),
        json!(text(obj, "/message")),
    ]
}

/// A node's row: its readiness and its internal IP.
fn node_cells(obj: &Value, name: &str, age: String) -> Vec<Value> {
    let ready = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    let ip = obj
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|a| a["type"] == "InternalIP")
        .and_then(|a| a["address"].as_str())
        .unwrap_or("");
    let mut status = if ready { "Ready" } else { "NotReady" }.to_string();
    if obj.pointer("/spec/unschedulable") == Some(&json!(true)) {
        status.push_str(",SchedulingDisabled");
    }
    vec![
        json!(name),
        json!(status),
        json!("<none>"),
        json!(age),
        json!(text(obj, "/status/nodeInfo/kubeletVersion")),
        json!(or_none(ip)),
    ]
}

/// A Service's row: its type, cluster IP and ports.
fn service_cells(obj: &Value, name: &str, age: String) -> Vec<Value> {
    let ports = obj
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
        .join(",");
    vec![
        json!(name),
        json!(match text(obj, "/spec/type") {
            "" => "ClusterIP",
            t => t,
        }),
        json!(or_none(text(obj, "/spec/clusterIP"))),
        json!("<none>"),
        json!(or_none(&ports)),
        json!(age),
        json!(selector(obj)),
    ]
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
        match seconds % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        }
    } else if minutes < 180 {
        format!("{minutes}m")
    } else if hours < 8 {
        match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        }
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        match hours % 24 {
            0 => format!("{}d", hours / 24),
            h => format!("{}d{h}h", hours / 24),
        }
    } else if hours < 24 * 365 * 2 {
        format!("{}d", hours / 24)
    } else {
        format!("{}y", hours / 24 / 365)
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
