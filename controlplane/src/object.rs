//! Reading and writing the `metadata` of objects held as JSON.
//!
//! The control plane stores objects as `serde_json::Value`: it serves eight
//! types through one code path, and only `metadata` (plus a few spec fields the
//! controllers read) is ever interpreted.

use serde_json::{Map, Value};

/// The field at `path` (`["metadata", "uid"]`). The controllers read fields
/// of every object on every pass: unlike a JSON pointer, this allocates
/// nothing.
pub fn field<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(obj, |v, key| v.get(key))
}

/// Whether the object is being deleted (`metadata.deletionTimestamp` is set).
pub fn is_deleting(obj: &Value) -> bool {
    field(obj, &["metadata", "deletionTimestamp"]).is_some()
}

/// `metadata.name`, or "" when absent.
pub fn name(obj: &Value) -> &str {
    field(obj, &["metadata", "name"])
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `metadata.namespace`, when set.
pub fn namespace(obj: &Value) -> Option<&str> {
    field(obj, &["metadata", "namespace"]).and_then(Value::as_str)
}

/// `metadata.resourceVersion`, when set.
pub fn resource_version(obj: &Value) -> Option<&str> {
    field(obj, &["metadata", "resourceVersion"]).and_then(Value::as_str)
}

/// `metadata.labels` as pairs.
pub fn labels(obj: &Value) -> impl Iterator<Item = (&str, &str)> {
    field(obj, &["metadata", "labels"])
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|m| m.iter())
        .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)))
}

/// The length of `obj` as compact JSON, counted without building the text:
/// what the store's size limits are measured in.
pub fn encoded_len(obj: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, obj).expect("a JSON value always serializes");
    count.0
}

/// The `metadata` map, created when missing (and replacing a non-object).
pub fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let map = obj.as_object_mut().expect("made an object above");
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut().expect("made an object above")
}

/// Sets `metadata.<field>` to a string.
pub fn set_meta(obj: &mut Value, field: &str, value: impl Into<String>) {
    metadata_mut(obj).insert(field.to_string(), Value::String(value.into()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_and_writes_metadata() {
        let mut obj = json!({"metadata": {"name": "a", "labels": {"app": "web", "n": 1}}});
        assert_eq!(name(&obj), "a");
        assert_eq!(namespace(&obj), None);
        assert_eq!(labels(&obj).collect::<Vec<_>>(), vec![("app", "web")]);
        set_meta(&mut obj, "resourceVersion", "12");
        assert_eq!(resource_version(&obj), Some("12"));
        let mut not_an_object = json!(3);
        set_meta(&mut not_an_object, "name", "b");
        assert_eq!(name(&not_an_object), "b");
    }
}
