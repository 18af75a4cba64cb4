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

/// The columns of `object`, a `kind`: a pod's `phase` and `node`, a
/// workload's `ready` (ready/desired), a namespace's `phase`, and
/// `deleting` for any object with a deletionTimestamp. Empty when the text
/// has none of them (or is not an object).
pub fn summarize(kind: &str, object: &ObjectJson) -> BTreeMap<String, String> {
    let mut columns = BTreeMap::new();
    let Ok(fields) = object.read::<Fields>() else {
        return columns;
    };
    if fields.metadata.deletion_timestamp.is_some() {
        columns.insert("deleting".into(), "true".into());
    }
    match kind {
        "Pod" => {
            if let Some(phase) = fields.status.phase {
                columns.insert("phase".into(), phase);
            }
            if let Some(node) = fields.spec.node_name {
                columns.insert("node".into(), node);
            }
        }
        "Namespace" | "PersistentVolumeClaim" => {
            if let Some(phase) = fields.status.phase {
                columns.insert("phase".into(), phase);
            }
        }
        "Deployment" | "ReplicaSet" | "StatefulSet" => {
            if let Some(desired) = fields.spec.replicas {
                let ready = fields.status.ready_replicas.unwrap_or(0);
                columns.insert("ready".into(), format!("{ready}/{desired}"));
            }
        }
        _ => {}
    }
    columns
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
    fn what_has_no_columns_gives_none() {
        assert!(summarize("ConfigMap", &ObjectJson::from_value(&json!({"data": {}}))).is_empty());
        assert!(summarize("Pod", &ObjectJson::null()).is_empty());
        assert!(summarize("Pod", &ObjectJson::from_value(&json!([1, 2]))).is_empty());
    }
}
