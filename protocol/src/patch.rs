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
use serde_json::{Map, Value};

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

/// The merge patch that turns `old` into `new`, or `None` when no merge
/// patch can (`new` holds a `null` that differs from `old`, or is not an
/// object).
pub fn merge_patch(old: &Value, new: &Value) -> Option<Value> {
    if !new.is_object() {
        return None;
    }
    let patch = difference(old, new);
    let mut check = old.clone();
    apply_merge_patch(&mut check, &patch);
    (check == *new).then_some(patch)
}

fn difference(old: &Value, new: &Value) -> Value {
    let (Value::Object(old), Value::Object(new)) = (old, new) else {
        return new.clone();
    };
    let mut patch = Map::new();
    for key in old.keys().filter(|k| !new.contains_key(*k)) {
        patch.insert(key.clone(), Value::Null);
    }
    for (key, value) in new {
        match old.get(key) {
            Some(was) if was == value => {}
            Some(was) => {
                patch.insert(key.clone(), difference(was, value));
            }
            None => {
                patch.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(patch)
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
        let patch = merge_patch(&old, &new).unwrap();
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
        assert_eq!(merge_patch(&old, &json!({"spec": {"a": null}})), None);
        assert_eq!(merge_patch(&old, &json!([1])), None);
        // An unchanged null is fine: the patch leaves it alone.
        let old = json!({"spec": {"a": null, "b": 1}});
        let new = json!({"spec": {"a": null, "b": 2}});
        assert_eq!(merge_patch(&old, &new), Some(json!({"spec": {"b": 2}})));
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
            if let Some(patch) = merge_patch(&old, &new) {
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
            prop_assert!(merge_patch(&old, &new).is_some());
        }
    }
}
