//! The few columns a light snapshot shows of an object without its body.
//!
//! Read from the object's JSON text by a reader that names only these
//! fields: the rest of the object is skipped, never built.

use crate::object::ObjectJson;
use serde::Deserialize;
use std::collections::BTreeMap;

/// The fields the columns come from; everything else is skipped.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Fields {
    metadata: Metadata,
    spec: Spec,
    status: Status,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Metadata {
    deletion_timestamp: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Spec {
    node_name: Option<String>,
    replicas: Option<i64>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Status {
    phase: Option<String>,
    ready_replicas: Option<i64>,
}

/// What the columns are made of, however it was read: from the object's
/// text ([`summarize`]), or from fields a cache parsed already.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Known<'a> {
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// `status.phase`.
    pub phase: Option<&'a str>,
    /// `spec.nodeName`.
    pub node: Option<&'a str>,
    /// `spec.replicas`, and `status.readyReplicas` (0 when absent).
    pub replicas: Option<(i64, i64)>,
}

/// Whether the columns of a `kind` need more than a cache's parsed fields
/// hold (deletion, phase, node): a workload's replica counts.
pub fn needs_text(kind: &str) -> bool {
    matches!(kind, "Deployment" | "ReplicaSet" | "StatefulSet")
}

/// The columns of an object of `kind`: a pod's `phase` and `node`, a
/// workload's `ready` (ready/desired), a namespace's `phase`, and
/// `deleting` for any object with a deletionTimestamp.
pub fn columns(kind: &str, known: Known<'_>) -> BTreeMap<String, String> {
    let mut columns = BTreeMap::new();
    if known.deleting {
        columns.insert("deleting".into(), "true".into());
    }
    match kind {
        "Pod" => {
            if let Some(phase) = known.phase {
                columns.insert("phase".into(), phase.into());
            }
            if let Some(node) = known.node.filter(|n| !n.is_empty()) {
                columns.insert("node".into(), node.into());
            }
        }
        "Namespace" | "PersistentVolumeClaim" => {
            if let Some(phase) = known.phase {
                columns.insert("phase".into(), phase.into());
            }
        }
        _ if needs_text(kind) => {
            if let Some((desired, ready)) = known.replicas {
                columns.insert("ready".into(), format!("{ready}/{desired}"));
            }
        }
        _ => {}
    }
    columns
}

/// The [`columns`] of `object`, read from its text. Empty when the text has
/// none of them (or is not an object).
pub fn summarize(kind: &str, object: &ObjectJson) -> BTreeMap<String, String> {
    let Ok(fields) = object.read::<Fields>() else {
        return BTreeMap::new();
    };
    let known = Known {
        deleting: fields.metadata.deletion_timestamp.is_some(),
        phase: fields.status.phase.as_deref(),
        node: fields.spec.node_name.as_deref(),
        replicas: fields
            .spec
            .replicas
            .map(|desired| (desired, fields.status.ready_replicas.unwrap_or(0))),
    };
    columns(kind, known)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pod_shows_its_phase_and_node() {
        let pod = ObjectJson::from_value(&json!({
            "metadata": {"name": "p", "labels": {"a": "b"}},
            "spec": {"nodeName": "node-1", "containers": [{"name": "c"}]},
            "status": {"phase": "Running"}
        }));
        let c = summarize("Pod", &pod);
        assert_eq!(c["phase"], "Running");
        assert_eq!(c["node"], "node-1");
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn a_deployment_shows_ready_of_desired_and_a_deletion() {
        let d = ObjectJson::from_value(&json!({
            "metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"replicas": 3},
            "status": {"readyReplicas": 2}
        }));
        let c = summarize("Deployment", &d);
        assert_eq!(c["ready"], "2/3");
        assert_eq!(c["deleting"], "true");
    }

    #[test]
    fn columns_from_parsed_fields_are_the_columns_from_the_text() {
        let pod = ObjectJson::from_value(&json!({
            "metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"nodeName": ""},
            "status": {"phase": "Pending"}
        }));
        let known = Known {
            deleting: true,
            phase: Some("Pending"),
            node: Some(""),
            replicas: None,
        };
        assert_eq!(columns("Pod", known), summarize("Pod", &pod));
        assert!(
            !columns("Pod", known).contains_key("node"),
            "an empty node is none"
        );
        assert!(needs_text("Deployment") && !needs_text("Pod"));
    }

    #[test]
    fn what_has_no_columns_gives_none() {
        assert!(summarize("ConfigMap", &ObjectJson::from_value(&json!({"data": {}}))).is_empty());
        assert!(summarize("Pod", &ObjectJson::null()).is_empty());
        assert!(summarize("Pod", &ObjectJson::from_value(&json!([1, 2]))).is_empty());
    }
}
