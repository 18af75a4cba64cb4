//! An update's body as a JSON merge patch (RFC 7386) against the version
//! before it, for viewers that ask for it (`/ws?bodies=patch`).
//!
//! A write usually changes a few fields of an object of a kilobyte or more;
//! the frame of a MODIFIED event then carries those fields, and the page
//! that holds the earlier body rebuilds the new one. Nothing is lost: a
//! patch is sent only when applying it to the earlier body gives the new
//! body exactly (a merge patch cannot set a field to `null`, for one), and
//! a page without the earlier body keeps the patch as the change and
//! fetches the whole body when someone opens the object.

use crate::ObjectJson;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The body of a MODIFIED event, as the change from the version before it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BodyPatch {
    /// The resourceVersion of the body the patch applies to: the object's
    /// previous event in the stream.
    pub base: String,
    /// The merge patch: changed fields with their new values, removed
    /// fields as `null`, objects merged key by key, arrays whole.
    pub merge: ObjectJson,
}

/// The merge patch that turns the JSON text `old` into `new`, or `None`
/// when no merge patch can (`new` holds a `null` that differs from `old`,
/// or is not an object) or either is not JSON.
///
/// It reads both as text and goes down only where their texts differ, so
/// the fields that did not change (most of an object, as a rule) are
/// scanned but never built into trees: an update's patch costs about what
/// parsing the object once would.
pub fn merge_patch(old: &str, new: &str) -> Option<Value> {
    let old: &RawValue = serde_json::from_str(old).ok()?;
    let new: &RawValue = serde_json::from_str(new).ok()?;
    fields(new)?;
    difference(old, new)
}

/// An object's fields, as text; `None` for any other value.
fn fields(raw: &RawValue) -> Option<BTreeMap<String, &RawValue>> {
    if !raw.get().starts_with('{') {
        return None;
    }
    serde_json::from_str(raw.get()).ok()
}

/// The patch from `old` to `new`, or `None` when a value it would set holds
/// a `null` in an object (applying it would remove that field instead).
fn difference(old: &RawValue, new: &RawValue) -> Option<Value> {
    let (Some(old), Some(new)) = (fields(old), fields(new)) else {
        let new: Value = serde_json::from_str(new.get()).ok()?;
        return settable(&new).then_some(new);
    };
    let mut patch = Map::new();
    for key in old.keys().filter(|k| !new.contains_key(*k)) {
        patch.insert(key.clone(), Value::Null);
    }
    for (key, value) in &new {
        let change = match old.get(key) {
            Some(was) if was.get() == value.get() => continue,
            Some(was) => difference(was, value)?,
            None => {
                let value: Value = serde_json::from_str(value.get()).ok()?;
                if !settable(&value) {
                    return None;
                }
                value
            }
        };
        patch.insert(key.clone(), change);
    }
    Some(Value::Object(patch))
}

/// Whether a patch can set `value` as it is: no `null` where merging would
/// read it as "remove" (the value itself, or a field of an object in it;
/// arrays are set whole, nulls and all).
fn settable(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Object(fields) => fields.values().all(settable),
        _ => true,
    }
}

/// Applies a merge patch to `target`, as RFC 7386 says.
pub fn apply_merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(fields) = target {
        for (key, value) in patch {
            if value.is_null() {
                fields.remove(key);
            } else {
                apply_merge_patch(fields.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn a_patch_holds_what_changed_and_nulls_what_went() {
        let old = json!({"metadata": {"name": "a", "labels": {"x": "1", "y": "2"}},
                         "data": {"mode": "old", "big": "unchanged"}});
        let new = json!({"metadata": {"name": "a", "labels": {"x": "1"}},
                         "data": {"mode": "new", "big": "unchanged"}, "extra": [1, 2]});
        let patch = merge_patch(&old.to_string(), &new.to_string()).unwrap();
        assert_eq!(
            patch,
            json!({"metadata": {"labels": {"y": null}}, "data": {"mode": "new"}, "extra": [1, 2]})
        );
        let mut rebuilt = old.clone();
        apply_merge_patch(&mut rebuilt, &patch);
        assert_eq!(rebuilt, new);
    }

    #[test]
    fn a_null_the_patch_cannot_set_gives_no_patch() {
        let old = json!({"spec": {"a": 1}});
        let patch = |old: &Value, new: Value| merge_patch(&old.to_string(), &new.to_string());
        assert_eq!(patch(&old, json!({"spec": {"a": null}})), None);
        assert_eq!(patch(&old, json!([1])), None);
        assert_eq!(merge_patch("{", "{}"), None, "not JSON");
        // An unchanged null is fine: the patch leaves it alone.
        let old = json!({"spec": {"a": null, "b": 1}});
        assert_eq!(
            patch(&old, json!({"spec": {"a": null, "b": 2}})),
            Some(json!({"spec": {"b": 2}}))
        );
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(|n| json!(n)),
            "[a-c]{0,3}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::btree_map("[a-d]", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Whenever a patch is given, it rebuilds the new body exactly.
        #[test]
        fn a_patch_given_rebuilds_the_new_body(old in json_value(), new in json_value()) {
            if let Some(patch) = merge_patch(&old.to_string(), &new.to_string()) {
                let mut rebuilt = old.clone();
                apply_merge_patch(&mut rebuilt, &patch);
                prop_assert_eq!(rebuilt, new);
            }
        }

        /// Bodies without nulls (Kubernetes objects, as a rule) always get one.
        #[test]
        fn objects_without_nulls_always_get_a_patch(old in json_value(), new in json_value()) {
            fn no_nulls(v: &Value) -> bool {
                match v {
                    Value::Null => false,
                    Value::Array(a) => a.iter().all(no_nulls),
                    Value::Object(m) => m.values().all(no_nulls),
                    _ => true,
                }
            }
            prop_assume!(new.is_object() && no_nulls(&new));
            prop_assert!(merge_patch(&old.to_string(), &new.to_string()).is_some());
        }
    }
}
