//! What never leaves the bridge: Secret values, managed fields, and the bulk
//! of oversized objects.
//!
//! Every object the Reflector receives passes through [`redact_text`] (or
//! [`redact`], for a tree) before any other stage sees it, so no frame,
//! snapshot, history or recording can carry what was removed.

use serde_json::value::RawValue;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use watchlife_protocol::ObjectJson;

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

/// An object as received, as text: its kind and apiVersion (absent from
/// the items of a LIST) and the object's JSON.
pub struct Received<'a> {
    pub kind: &'a str,
    pub api_version: &'a str,
    pub json: &'a RawValue,
    /// An item of a LIST, which carries no kind or apiVersion of its own; a
    /// watched object carries both.
    pub listed: bool,
}

/// [`redact`] on the object's text, without building its tree: the top
/// level and `metadata` are read as fields of raw text, `managedFields`
/// dropped, the kind and apiVersion filled in when absent, and the fields
/// written out again as they came. A Secret, an oversized object, or text
/// that is not an object goes through [`redact`]. The result is the same
/// object as [`redact`] gives (`redact_text_is_redact` checks it).
pub fn redact_text(received: Received<'_>) -> ObjectJson {
    let Received {
        kind,
        api_version,
        json,
        listed,
    } = received;
    let by_tree = || {
        let mut value: Value = serde_json::from_str(json.get()).unwrap_or(Value::Null);
        if let Some(map) = value.as_object_mut() {
            map.entry("kind").or_insert_with(|| kind.into());
            map.entry("apiVersion")
                .or_insert_with(|| api_version.into());
        }
        ObjectJson::from_value(&redact(kind, value))
    };
    if kind == "Secret" || json.get().len() > MAX_OBJECT_BYTES {
        return by_tree();
    }
    // A watched object with nothing to remove is kept as it came, unread.
    if !listed && !json.get().contains("\"managedFields\"") {
        return ObjectJson::from_raw_ref(json);
    }
    let Ok(mut fields) = serde_json::from_str::<BTreeMap<&str, &RawValue>>(json.get()) else {
        return by_tree();
    };
    // Held here so that the fields can borrow them.
    let kind_text = serde_json::value::to_raw_value(kind).expect("a string encodes");
    let api_text = serde_json::value::to_raw_value(api_version).expect("a string encodes");
    let mut changed = false;
    if !fields.contains_key("kind") {
        fields.insert("kind", &kind_text);
        changed = true;
    }
    if !fields.contains_key("apiVersion") {
        fields.insert("apiVersion", &api_text);
        changed = true;
    }
    let metadata;
    if let Some(meta) = fields.get("metadata")
        && meta.get().contains("\"managedFields\"")
    {
        let Ok(mut meta) = serde_json::from_str::<BTreeMap<&str, &RawValue>>(meta.get()) else {
            return by_tree();
        };
        meta.remove("managedFields");
        metadata = serde_json::value::to_raw_value(&meta).expect("raw fields encode");
        fields.insert("metadata", &metadata);
        changed = true;
    }
    if !changed {
        return ObjectJson::from_raw_ref(json);
    }
    let raw = serde_json::value::to_raw_value(&fields).expect("raw fields encode");
    ObjectJson::from_raw(raw)
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

    /// What [`redact_text`] gives, parsed, against what [`redact`] gives.
    fn both(kind: &str, obj: &Value, listed: bool) -> (Value, Value) {
        let text = serde_json::value::to_raw_value(obj).unwrap();
        let by_text = redact_text(Received {
            kind,
            api_version: "v1",
            json: &text,
            listed,
        })
        .parse();
        let mut filled = obj.clone();
        if let Some(map) = filled.as_object_mut() {
            map.entry("kind").or_insert_with(|| kind.into());
            map.entry("apiVersion").or_insert_with(|| "v1".into());
        }
        (by_text, redact(kind, filled))
    }

    #[test]
    fn redact_text_is_redact() {
        let cases = [
            (
                "ConfigMap",
                json!({"metadata": {"name": "listed", "managedFields": [{"manager": "m"}]}, "data": {"k": "v"}}),
            ),
            (
                "ConfigMap",
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "plain"}}),
            ),
            (
                "Pod",
                json!({"kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}, "managedFields": []}, "spec": {"nodeName": "n"}}),
            ),
            (
                "Secret",
                json!({"kind": "Secret", "metadata": {"name": "s"}, "data": {"password": "aHVudGVyMg=="}}),
            ),
            (
                "ConfigMap",
                json!({"kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"k": "x".repeat(MAX_OBJECT_BYTES)}}),
            ),
            ("ConfigMap", json!([1, 2])),
            ("ConfigMap", json!({"metadata": "odd, \"managedFields\""})),
        ];
        for (kind, obj) in cases {
            let (by_text, by_tree) = both(kind, &obj, true);
            assert_eq!(by_text, by_tree, "{kind} {obj}");
            // A watched object carries its kind and apiVersion.
            let mut whole = obj.clone();
            if let Some(map) = whole.as_object_mut() {
                map.entry("kind").or_insert_with(|| kind.into());
                map.entry("apiVersion").or_insert_with(|| "v1".into());
            }
            let (by_text, by_tree) = both(kind, &whole, false);
            assert_eq!(by_text, by_tree, "watched {kind} {whole}");
        }
    }

    #[test]
    fn an_object_with_nothing_to_remove_keeps_its_text() {
        let text = RawValue::from_string(
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c"},"data":{"z":"1","a":"2"}}"#.into(),
        )
        .unwrap();
        let out = redact_text(Received {
            kind: "ConfigMap",
            api_version: "v1",
            json: &text,
            listed: false,
        });
        assert_eq!(out.as_str(), text.get());
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
