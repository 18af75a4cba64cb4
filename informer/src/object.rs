//! An object as the informer keeps it: the shared text of its JSON, and the
//! few fields the stages read, parsed once beside it.
//!
//! A handler or controller that needs more parses the text on demand
//! ([`Object::value`]). Cloning an object copies a pointer.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use watchlife_protocol::ObjectJson;

/// One object: its JSON text and its [`Meta`].
#[derive(Clone, PartialEq)]
pub struct Object(Arc<Kept>);

#[derive(PartialEq)]
struct Kept {
    json: ObjectJson,
    meta: Meta,
}

/// The fields of an object the informer's stages read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Meta {
    /// `namespace/name`, or `name` when cluster-scoped (client-go's
    /// `MetaNamespaceKeyFunc`); the namespace and the name are read from it.
    pub key: String,
    /// `metadata.resourceVersion`, or "" when absent.
    pub resource_version: String,
    pub labels: BTreeMap<String, String>,
    /// The uid of the owner reference marked `controller: true`.
    pub controller_uid: Option<String>,
    /// `spec.nodeName`, when set and not empty.
    pub node_name: Option<String>,
    /// `status.phase`.
    pub phase: Option<String>,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
}

impl Meta {
    /// The namespace; `None` when cluster-scoped.
    pub fn namespace(&self) -> Option<&str> {
        self.key.split_once('/').map(|(ns, _)| ns)
    }

    pub fn name(&self) -> &str {
        self.key.split_once('/').map_or(&self.key, |(_, name)| name)
    }
}

impl Object {
    /// Keeps `json`, reading its [`Meta`] (what is not there stays empty).
    pub fn from_json(json: ObjectJson) -> Self {
        let meta = json
            .read::<Fields>()
            .map(Fields::into_meta)
            .unwrap_or_default();
        Object(Arc::new(Kept { json, meta }))
    }

    /// The object of `value`, written out once.
    pub fn from_value(value: &serde_json::Value) -> Self {
        Self::from_json(ObjectJson::from_value(value))
    }

    /// The JSON text, shared.
    pub fn json(&self) -> &ObjectJson {
        &self.0.json
    }

    /// The fields the stages read.
    pub fn meta(&self) -> &Meta {
        &self.0.meta
    }

    pub fn key(&self) -> &str {
        &self.0.meta.key
    }

    pub fn resource_version(&self) -> &str {
        &self.0.meta.resource_version
    }

    /// The whole object as a tree, parsed now.
    pub fn value(&self) -> serde_json::Value {
        self.0.json.parse()
    }
}

/// What the Indexer and the shared informer read of an object: its store
/// key and its resourceVersion. The bridge and the page keep [`Object`]s;
/// the demo's controllers, which read every field, keep parsed trees.
pub trait Stored: Clone {
    /// `namespace/name`, or `name` when cluster-scoped.
    fn key(&self) -> String;
    /// `metadata.resourceVersion`, or "" when absent.
    fn resource_version(&self) -> &str;
}

impl Stored for Object {
    fn key(&self) -> String {
        Object::key(self).to_string()
    }
    fn resource_version(&self) -> &str {
        Object::resource_version(self)
    }
}

impl Stored for Arc<serde_json::Value> {
    fn key(&self) -> String {
        crate::indexer::key_of(self)
    }
    fn resource_version(&self) -> &str {
        crate::indexer::resource_version(self)
    }
}

impl std::fmt::Debug for Object {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.json.fmt(f)
    }
}

impl From<serde_json::Value> for Object {
    fn from(value: serde_json::Value) -> Self {
        Object::from_value(&value)
    }
}

/// What is read of the text to make a [`Meta`]; the rest is skipped.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Fields {
    metadata: MetaFields,
    spec: SpecFields,
    status: StatusFields,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct MetaFields {
    name: String,
    namespace: Option<String>,
    resource_version: String,
    labels: BTreeMap<String, String>,
    owner_references: Vec<OwnerFields>,
    deletion_timestamp: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct OwnerFields {
    uid: String,
    controller: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct SpecFields {
    node_name: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct StatusFields {
    phase: Option<String>,
}

impl Fields {
    fn into_meta(self) -> Meta {
        let m = self.metadata;
        let namespace = m.namespace.filter(|ns| !ns.is_empty());
        let key = match &namespace {
            Some(ns) => format!("{ns}/{}", m.name),
            None => m.name.clone(),
        };
        Meta {
            key,
            resource_version: m.resource_version,
            labels: m.labels,
            controller_uid: m
                .owner_references
                .into_iter()
                .find(|o| o.controller == Some(true))
                .map(|o| o.uid),
            node_name: self.spec.node_name.filter(|n| !n.is_empty()),
            phase: self.status.phase,
            deleting: m.deletion_timestamp.is_some(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_stages_fields_are_read_once() {
        let o = Object::from_value(&json!({
            "metadata": {
                "name": "web-1", "namespace": "default", "resourceVersion": "42",
                "labels": {"app": "web"},
                "ownerReferences": [
                    {"uid": "u0", "controller": false},
                    {"uid": "u1", "controller": true}
                ],
                "deletionTimestamp": "2026-01-01T00:00:00Z"
            },
            "spec": {"nodeName": "node-1"},
            "status": {"phase": "Running"}
        }));
        let m = o.meta();
        assert_eq!(o.key(), "default/web-1");
        assert_eq!(m.namespace(), Some("default"));
        assert_eq!(m.name(), "web-1");
        assert_eq!(o.resource_version(), "42");
        assert_eq!(m.labels["app"], "web");
        assert_eq!(m.controller_uid.as_deref(), Some("u1"));
        assert_eq!(m.node_name.as_deref(), Some("node-1"));
        assert_eq!(m.phase.as_deref(), Some("Running"));
        assert!(m.deleting);
        assert_eq!(o.value()["status"]["phase"], "Running");
    }

    #[test]
    fn cluster_scoped_and_odd_objects_get_what_they_have() {
        let node = Object::from_value(&json!({"metadata": {"name": "n"}}));
        assert_eq!((node.key(), node.meta().namespace()), ("n", None));
        let odd = Object::from_value(&json!({"metadata": {"name": 3}}));
        assert_eq!(odd.meta(), &Meta::default());
        assert_eq!(Object::from_value(&json!(null)).key(), "");
    }

    #[test]
    fn clones_share_the_text() {
        let a = Object::from_value(&json!({"metadata": {"name": "a"}}));
        assert!(a.clone().json().same_buffer(a.json()));
    }
}
