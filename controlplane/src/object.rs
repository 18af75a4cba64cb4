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

/// An estimate of the memory `obj` takes as a `serde_json::Value`, what the
/// store's quotas count: a parsed object takes several times its JSON (a
/// small pod ten times, a map of empty maps far more), so its JSON length
/// would understate it. Counts each string's bytes, each array's slots, and
/// each map's B-tree nodes (a node holds up to eleven entries; counted as if
/// half full, as a B-tree's nodes are at least), plus a word of allocator
/// overhead per allocation. Never below the true figure by much, often
/// above.
pub fn weight(obj: &Value) -> usize {
    /// Slot of one value, in an array, a map node or the root.
    const SLOT: usize = std::mem::size_of::<Value>();
    /// One B-tree leaf of `String` keys and `Value`s, eleven of each.
    const NODE: usize = 11 * (std::mem::size_of::<String>() + SLOT) + 16;
    /// What the allocator adds to each allocation.
    const ALLOC: usize = 16;
    fn inner(v: &Value) -> usize {
        match v {
            Value::Null | Value::Bool(_) | Value::Number(_) => 0,
            Value::String(s) => s.len() + ALLOC,
            Value::Array(items) => {
                items.capacity() * SLOT + ALLOC + items.iter().map(inner).sum::<usize>()
            }
            Value::Object(map) if map.is_empty() => 0,
            Value::Object(map) => {
                map.len().div_ceil(6) * (NODE + ALLOC)
                    + map
                        .iter()
                        .map(|(k, v)| k.len() + ALLOC + inner(v))
                        .sum::<usize>()
            }
        }
    }
    SLOT + inner(obj)
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

    #[test]
    fn weight_grows_with_what_parsing_costs_not_with_the_json() {
        let text = json!({"data": {"d": "x".repeat(100_000)}});
        let w = weight(&text);
        assert!((100_000..110_000).contains(&w), "{w}");
        // A map of empty maps: seven bytes of JSON an entry, far more parsed.
        let nested: serde_json::Map<String, Value> = (0..1000)
            .map(|i| (format!("{i}"), json!({"a": {}})))
            .collect();
        let nested = Value::Object(nested);
        assert!(
            weight(&nested) > 50 * encoded_len(&nested),
            "{}",
            weight(&nested)
        );
        assert_eq!(
            encoded_len(&json!({"a": [1, "b"]})),
            r#"{"a":[1,"b"]}"#.len()
        );
    }
}
