//! Owner references: how a ReplicaSet knows its Deployment and a pod its
//! ReplicaSet, and how the garbage collector finds orphans.

use crate::resource::ResourceType;
use serde_json::{Value, json};

/// One entry of `metadata.ownerReferences`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerRef {
    pub kind: String,
    pub name: String,
    pub uid: String,
    /// Whether this owner is the object's managing controller.
    pub controller: bool,
}

/// `metadata.uid`, or "".
pub fn uid(obj: &Value) -> &str {
    crate::object::field(obj, &["metadata", "uid"])
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The entries of `metadata.ownerReferences`, as JSON.
fn references(obj: &Value) -> impl Iterator<Item = &Value> {
    crate::object::field(obj, &["metadata", "ownerReferences"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// Every owner reference of `obj`.
pub fn owners(obj: &Value) -> Vec<OwnerRef> {
    references(obj)
        .filter_map(|r| {
            Some(OwnerRef {
                kind: r["kind"].as_str()?.to_string(),
                name: r["name"].as_str()?.to_string(),
                uid: r["uid"].as_str()?.to_string(),
                controller: r["controller"].as_bool().unwrap_or(false),
            })
        })
        .collect()
}

/// Whether `obj` names any owner.
pub fn has_owners(obj: &Value) -> bool {
    references(obj).next().is_some()
}

/// The owner that manages `obj`, when it is of `kind`.
pub fn controller_of(obj: &Value, kind: &str) -> Option<OwnerRef> {
    owners(obj)
        .into_iter()
        .find(|o| o.controller && o.kind == kind)
}

/// The uid of the object that manages `obj`, when one does.
pub fn controller_uid(obj: &Value) -> Option<&str> {
    references(obj)
        .find(|r| r["controller"] == true)
        .and_then(|r| r["uid"].as_str())
}

/// The reference a controller puts on what it creates.
pub fn controller_reference(owner: &Value, rt: ResourceType) -> Value {
    json!({
        "apiVersion": rt.api_version(),
        "kind": rt.kind,
        "name": crate::object::name(owner),
        "uid": uid(owner),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}
