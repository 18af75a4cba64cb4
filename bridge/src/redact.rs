//! What never leaves the bridge: Secret values, managed fields, and the bulk
//! of oversized objects.
//!
//! Every object the Reflector receives passes through [`redact`] before any
//! other stage sees it, so no frame, snapshot, history or recording can carry
//! what was removed.

use serde_json::{Value, json};

/// Largest object, in bytes of JSON, relayed whole. Viewers keep every
/// version of every object they show; 64 KiB covers ordinary pods and
/// deployments several times over, while a 1 MiB ConfigMap relayed at each
/// change would swamp phones on conference Wi-Fi.
pub const MAX_OBJECT_BYTES: usize = 64 * 1024;

/// Annotation in which `kubectl apply` keeps the whole last applied object:
/// for a Secret, its values in clear.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Top-level field that marks an object whose bulk was cut, with the size it had.
pub const TRUNCATED_MARKER: &str = "watchlife.truncated";

/// Fields of a Secret that hold values.
const SECRET_VALUE_FIELDS: [&str; 2] = ["data", "stringData"];

/// Removes from `obj` (of `kind`) what must not leave the bridge:
/// - for a Secret, every value in `data` and `stringData` (the keys stay,
///   each value replaced by a note of its length) and the last-applied
///   annotation;
/// - for every object, `metadata.managedFields` (bookkeeping of server-side
///   apply, often larger than the object itself);
/// - when what is left is over [`MAX_OBJECT_BYTES`], everything but
///   `apiVersion`, `kind` and `metadata`, with [`TRUNCATED_MARKER`] saying so.
pub fn redact(kind: &str, mut obj: Value) -> Value {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
        if kind == "Secret"
            && let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut)
        {
            annotations.remove(LAST_APPLIED);
        }
    }
    if kind == "Secret" {
        for field in SECRET_VALUE_FIELDS {
            if let Some(values) = obj.get_mut(field).and_then(Value::as_object_mut) {
                for value in values.values_mut() {
                    let len = value.as_str().map_or(0, str::len);
                    *value = Value::String(format!("(redacted: {len} bytes encoded)"));
                }
            }
        }
    }
    let size = serde_json::to_vec(&obj).map_or(0, |b| b.len());
    if size > MAX_OBJECT_BYTES {
        return cut(obj, size);
    }
    obj
}

/// Keeps only the identity of an oversized object.
fn cut(obj: Value, size: usize) -> Value {
    let mut kept = serde_json::Map::new();
    for field in ["apiVersion", "kind", "metadata"] {
        if let Some(v) = obj.get(field) {
            kept.insert(field.into(), v.clone());
        }
    }
    if let Some(meta) = kept.get_mut("metadata").and_then(Value::as_object_mut) {
        // Annotations and labels can themselves be the bulk.
        let meta_size = serde_json::to_vec(&*meta).map_or(0, |b| b.len());
        if meta_size > MAX_OBJECT_BYTES / 2 {
            meta.remove("annotations");
        }
    }
    kept.insert(
        TRUNCATED_MARKER.into(),
        json!({
            "original_bytes": size,
            "limit_bytes": MAX_OBJECT_BYTES,
            "note": "this object is larger than watchlife relays; only its metadata is shown",
        }),
    );
    Value::Object(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_values_and_last_applied_never_pass() {
        let secret = json!({
            "kind": "Secret",
            "metadata": {"name": "db", "annotations": {LAST_APPLIED: "{\"data\":{\"password\":\"aHVudGVyMg==\"}}", "team": "a"},
                         "managedFields": [{"manager": "kubectl"}]},
            "data": {"password": "aHVudGVyMg=="},
            "stringData": {"token": "s3cr3t"}
        });
        let out = redact("Secret", secret);
        let text = out.to_string();
        assert!(!text.contains("aHVudGVyMg"), "{text}");
        assert!(!text.contains("s3cr3t"), "{text}");
        assert_eq!(out["data"]["password"], "(redacted: 12 bytes encoded)");
        assert_eq!(out["metadata"]["annotations"]["team"], "a");
        assert!(out["metadata"].get("managedFields").is_none());
    }

    #[test]
    fn other_kinds_keep_their_data_but_lose_managed_fields() {
        let cm = json!({"kind": "ConfigMap", "metadata": {"name": "c", "managedFields": []}, "data": {"k": "v"}});
        let out = redact("ConfigMap", cm);
        assert_eq!(out["data"]["k"], "v");
        assert!(out["metadata"].get("managedFields").is_none());
    }

    #[test]
    fn oversized_objects_are_cut_with_a_visible_marker() {
        let big = "x".repeat(MAX_OBJECT_BYTES + 1);
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big", "resourceVersion": "7"}, "data": {"k": big}});
        let out = redact("ConfigMap", cm);
        assert!(out.get("data").is_none());
        assert_eq!(out["metadata"]["resourceVersion"], "7");
        assert!(
            out[TRUNCATED_MARKER]["original_bytes"].as_u64().unwrap() > MAX_OBJECT_BYTES as u64
        );
    }
}
