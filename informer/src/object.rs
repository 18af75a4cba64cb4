//! An object as the informer keeps it: the shared text of its JSON, and the
//! few fields the stages read, parsed once beside it.
//!
//! A handler or controller that needs more parses the text on demand
//! ([`Object::value`]). Cloning an object copies a pointer.

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
pub use watchlife_object_json::ObjectJson;

/// One object: its JSON text and its [`Meta`].
#[derive(Clone, PartialEq)]
pub struct Object(Arc<Kept>);

#[derive(PartialEq)]
struct Kept {
    json: ObjectJson,
    meta: Meta,
}

/// The fields of an object the informer's stages read.
///
/// Kept small, because there is one per cached object (150,000 in a big
/// cluster): each text is one exact-size allocation, the labels stay the
/// JSON text they were, read when asked for (see [`Labels`]), and the fields
/// most objects lack (a configmap has no owner, node or phase) take one
/// pointer when absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Meta {
    /// `namespace/name`, or `name` when cluster-scoped (client-go's
    /// `MetaNamespaceKeyFunc`); the namespace and the name are read from it.
    /// Shared: the Indexer files the object under this very text.
    pub key: Arc<str>,
    /// `metadata.resourceVersion`, or "" when absent.
    pub resource_version: Box<str>,
    pub labels: Labels,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// The owner, node and phase, when the object has any of them.
    rest: Option<Box<Rest>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Rest {
    controller_uid: Option<Box<str>>,
    node_name: Option<Box<str>>,
    phase: Option<Box<str>>,
}

/// `metadata.labels`, as the JSON text of the object they were in: a map of
/// strings would cost more than the whole object's text for two labels
/// (a B-tree node holds room for eleven). Read on demand; a label map that
/// is not all strings reads as empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Labels(Option<Box<str>>);

impl Labels {
    /// The labels of the JSON object text `raw`.
    fn from_raw(raw: Option<&RawValue>) -> Self {
        Labels(raw.map(|r| r.get().into()))
    }

    /// Every label, by key.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        self.0
            .as_deref()
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or_default()
    }

    /// The value of label `key`.
    pub fn get(&self, key: &str) -> Option<String> {
        self.to_map().remove(key)
    }

    pub fn is_empty(&self) -> bool {
        self.to_map().is_empty()
    }
}

impl Meta {
    /// The uid of the owner reference marked `controller: true`.
    pub fn controller_uid(&self) -> Option<&str> {
        self.rest.as_ref()?.controller_uid.as_deref()
    }

    /// `spec.nodeName`, when set and not empty.
    pub fn node_name(&self) -> Option<&str> {
        self.rest.as_ref()?.node_name.as_deref()
    }

    /// `status.phase`.
    pub fn phase(&self) -> Option<&str> {
        self.rest.as_ref()?.phase.as_deref()
    }

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
    /// `namespace/name`, or `name` when cluster-scoped: shared with the
    /// object where it keeps one.
    fn key(&self) -> Arc<str>;
    /// `metadata.resourceVersion`, or "" when absent.
    fn resource_version(&self) -> &str;
}

impl Stored for Object {
    fn key(&self) -> Arc<str> {
        self.0.meta.key.clone()
    }
    fn resource_version(&self) -> &str {
        Object::resource_version(self)
    }
}

impl Stored for Arc<serde_json::Value> {
    fn key(&self) -> Arc<str> {
        key_of(self).into()
    }
    fn resource_version(&self) -> &str {
        resource_version(self)
    }
}

/// The store key of an object: `namespace/name`, or `name` for a
/// cluster-scoped one (client-go's `MetaNamespaceKeyFunc`).
pub fn key_of(object: &serde_json::Value) -> String {
    let meta = |field: &str| {
        object
            .get("metadata")
            .and_then(|m| m.get(field))
            .and_then(serde_json::Value::as_str)
    };
    let name = meta("name").unwrap_or_default();
    match meta("namespace").filter(|ns| !ns.is_empty()) {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    }
}

/// `metadata.resourceVersion`, or "" when absent.
pub fn resource_version(object: &serde_json::Value) -> &str {
    object
        .get("metadata")
        .and_then(|m| m.get("resourceVersion"))
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
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
/// Strings are borrowed from the text where it has no escapes.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Fields<'a> {
    #[serde(borrow)]
    metadata: MetaFields<'a>,
    #[serde(borrow)]
    spec: SpecFields<'a>,
    #[serde(borrow)]
    status: StatusFields<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct MetaFields<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    namespace: Option<Cow<'a, str>>,
    #[serde(borrow)]
    resource_version: Cow<'a, str>,
    #[serde(borrow)]
    labels: Option<&'a RawValue>,
    #[serde(borrow)]
    owner_references: Vec<OwnerFields<'a>>,
    deletion_timestamp: Option<IgnoredAny>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct OwnerFields<'a> {
    #[serde(borrow)]
    uid: Cow<'a, str>,
    controller: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct SpecFields<'a> {
    #[serde(borrow)]
    node_name: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct StatusFields<'a> {
    #[serde(borrow)]
    phase: Option<Cow<'a, str>>,
}

impl Fields<'_> {
    fn into_meta(self) -> Meta {
        let m = self.metadata;
        let key: Arc<str> = match m.namespace.as_deref().filter(|ns| !ns.is_empty()) {
            Some(ns) => format!("{ns}/{}", m.name).into(),
            None => m.name.as_ref().into(),
        };
        let rest = Rest {
            controller_uid: m
                .owner_references
                .into_iter()
                .find(|o| o.controller == Some(true))
                .map(|o| o.uid.as_ref().into()),
            node_name: self
                .spec
                .node_name
                .filter(|n| !n.is_empty())
                .map(|n| n.as_ref().into()),
            phase: self.status.phase.map(|p| p.as_ref().into()),
        };
        Meta {
            key,
            resource_version: m.resource_version.as_ref().into(),
            labels: Labels::from_raw(m.labels),
            deleting: m.deletion_timestamp.is_some(),
            rest: (rest != Rest::default()).then(|| Box::new(rest)),
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
        assert_eq!(m.labels.get("app").as_deref(), Some("web"));
        assert_eq!(m.labels.to_map().len(), 1);
        assert_eq!(m.controller_uid(), Some("u1"));
        assert_eq!(m.node_name(), Some("node-1"));
        assert_eq!(m.phase(), Some("Running"));
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
    fn meta_stays_within_a_cache_line() {
        // One per cached object: every field here is paid 150,000 times.
        assert!(std::mem::size_of::<Meta>() <= 64);
    }

    #[test]
    fn labels_read_back_whatever_their_text() {
        let o = Object::from_value(&json!({
            "metadata": {"name": "a", "labels": {"q\"uote": "a/b\u{e9}", "tier": "web"}}
        }));
        let labels = o.meta().labels.to_map();
        assert_eq!(labels["q\"uote"], "a/b\u{e9}");
        assert_eq!(labels["tier"], "web");
        let odd = Object::from_value(&json!({"metadata": {"name": "a", "labels": {"n": 1}}}));
        assert_eq!(odd.meta().node_name(), None);
        assert_eq!(odd.key(), "a", "odd labels spoil nothing else");
        assert!(odd.meta().labels.is_empty());
        assert!(
            Object::from_value(&json!({"metadata": {}}))
                .meta()
                .labels
                .is_empty()
        );
    }

    #[test]
    fn clones_share_the_text() {
        let a = Object::from_value(&json!({"metadata": {"name": "a"}}));
        assert!(a.clone().json().same_buffer(a.json()));
    }
}
