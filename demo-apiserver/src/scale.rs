//! The `scale` subresource of deployments and replicasets: an
//! `autoscaling/v1` `Scale` view of the object's replica count.

use serde_json::{Value, json};
use watchlife_controlplane::ResourceType;
use watchlife_controlplane::object;
use watchlife_controlplane::status::Status;

/// The `Scale` of an object: its identity, `spec.replicas`, and
/// `status.replicas` with the selector as a label-selector string.
pub fn of(obj: &Value) -> Value {
    let meta = |field: &str| obj.pointer(&format!("/metadata/{field}")).cloned();
    let selector = obj
        .pointer("/spec/selector/matchLabels")
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .filter_map(|(k, v)| Some(format!("{k}={}", v.as_str()?)))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": meta("name"),
            "namespace": meta("namespace"),
            "uid": meta("uid"),
            "resourceVersion": meta("resourceVersion"),
            "creationTimestamp": meta("creationTimestamp"),
        },
        "spec": {"replicas": obj.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1)},
        "status": {
            "replicas": obj.pointer("/status/replicas").and_then(Value::as_i64).unwrap_or(0),
            "selector": selector,
        },
    })
}

/// Checks a `Scale` sent by a client and reads its replica count: a
/// non-negative integer, or a 422 as the apiserver answers.
pub fn replicas(rt: ResourceType, scale: &Value) -> Result<u64, Status> {
    let kind = scale.get("kind").and_then(Value::as_str).unwrap_or("Scale");
    let version = scale
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("autoscaling/v1");
    if kind != "Scale" || version != "autoscaling/v1" {
        return Err(Status::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a Scale"
        )));
    }
    scale
        .pointer("/spec/replicas")
        .and_then(Value::as_u64)
        .ok_or_else(|| {
            crate::objects::invalid(
                rt,
                object::name(scale),
                "spec.replicas",
                "FieldValueInvalid",
                "Invalid value: must be a non-negative integer",
            )
        })
}

/// `obj` with `spec.replicas` set.
pub fn apply(obj: &Value, replicas: u64) -> Value {
    let mut out = obj.clone();
    if !out.get("spec").is_some_and(Value::is_object) {
        out["spec"] = json!({});
    }
    out["spec"]["replicas"] = replicas.into();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use watchlife_controlplane::resource::DEPLOYMENTS;

    #[test]
    fn a_scale_mirrors_the_object() {
        let d = json!({
            "metadata": {"name": "web", "namespace": "default", "resourceVersion": "7"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}},
            "status": {"replicas": 2}
        });
        let s = of(&d);
        assert_eq!(s["spec"]["replicas"], 3);
        assert_eq!(s["status"], json!({"replicas": 2, "selector": "app=web"}));
        assert_eq!(s["metadata"]["resourceVersion"], "7");
        assert_eq!(replicas(DEPLOYMENTS, &s).unwrap(), 3);
        assert_eq!(apply(&d, 5)["spec"]["replicas"], 5);
        let negative = json!({"spec": {"replicas": -1}});
        assert_eq!(replicas(DEPLOYMENTS, &negative).unwrap_err().code, 422);
    }
}
