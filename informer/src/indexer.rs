//! The Indexer: the informer's store of objects, with a namespace index and
//! any number of named indexes (client-go's `Indexers`).
//!
//! State is the accumulation of events: ADDED inserts, MODIFIED replaces,
//! DELETED removes.

use crate::object::{Object, Stored};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// An index function: the values under which an object is found.
pub type IndexFunc<O = Object> = fn(&O) -> Vec<String>;

/// Objects by key (`namespace/name` or `name`), indexed by namespace and by
/// the indexes registered with [`Indexer::with_index`].
#[derive(Debug)]
pub struct Indexer<O = Object> {
    objects: HashMap<String, O>,
    by_namespace: BTreeMap<String, BTreeSet<String>>,
    indexes: BTreeMap<&'static str, Index<O>>,
}

#[derive(Debug)]
struct Index<O> {
    func: IndexFunc<O>,
    keys: BTreeMap<String, BTreeSet<String>>,
}

impl<O> Default for Indexer<O> {
    fn default() -> Self {
        Indexer {
            objects: HashMap::new(),
            by_namespace: BTreeMap::new(),
            indexes: BTreeMap::new(),
        }
    }
}

impl<O: Stored> Indexer<O> {
    /// Adds an index named `name`: [`Indexer::by_index`] then finds the
    /// keys of the objects for which `func` gives a value.
    pub fn with_index(mut self, name: &'static str, func: IndexFunc<O>) -> Self {
        self.indexes.insert(
            name,
            Index {
                func,
                keys: BTreeMap::new(),
            },
        );
        self
    }

    /// Inserts or replaces; returns the previous object.
    pub fn upsert(&mut self, key: &str, object: O) -> Option<O> {
        if let Some(ns) = namespace_of(key) {
            self.by_namespace
                .entry(ns.to_string())
                .or_default()
                .insert(key.to_string());
        }
        for index in self.indexes.values_mut() {
            for value in (index.func)(&object) {
                index.keys.entry(value).or_default().insert(key.to_string());
            }
        }
        let old = self.objects.insert(key.to_string(), object);
        if let Some(old) = &old {
            self.unindex(key, old, true);
        }
        old
    }

    /// Removes; returns the object that was there.
    pub fn remove(&mut self, key: &str) -> Option<O> {
        if let Some(ns) = namespace_of(key)
            && let Some(keys) = self.by_namespace.get_mut(ns)
        {
            keys.remove(key);
            if keys.is_empty() {
                self.by_namespace.remove(ns);
            }
        }
        let old = self.objects.remove(key);
        if let Some(old) = &old {
            self.unindex(key, old, false);
        }
        old
    }

    pub fn get(&self, key: &str) -> Option<&O> {
        self.objects.get(key)
    }

    /// Keys of the objects in one namespace, sorted.
    pub fn keys_in(&self, namespace: &str) -> impl Iterator<Item = &str> {
        self.by_namespace
            .get(namespace)
            .into_iter()
            .flatten()
            .map(String::as_str)
    }

    /// The objects filed under `value` in index `name`, in key order.
    pub fn by_index<'a>(&'a self, name: &str, value: &str) -> impl Iterator<Item = &'a O> {
        self.indexes
            .get(name)
            .and_then(|index| index.keys.get(value))
            .into_iter()
            .flatten()
            .filter_map(|key| self.objects.get(key))
    }

    /// Every key.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.objects.keys().map(String::as_str)
    }

    /// Every object, in no particular order.
    pub fn values(&self) -> impl Iterator<Item = &O> {
        self.objects.values()
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Takes `key` out of the index entries of `old`; on a replacement,
    /// keeps the entries the new object still has.
    fn unindex(&mut self, key: &str, old: &O, replaced: bool) {
        let current = replaced.then(|| self.objects.get(key).cloned()).flatten();
        for index in self.indexes.values_mut() {
            let keep: Vec<String> = current.as_ref().map(index.func).unwrap_or_default();
            for value in (index.func)(old) {
                if keep.contains(&value) {
                    continue;
                }
                if let Some(keys) = index.keys.get_mut(&value) {
                    keys.remove(key);
                    if keys.is_empty() {
                        index.keys.remove(&value);
                    }
                }
            }
        }
    }
}

/// The store key of an object: `namespace/name`, or `name` for a
/// cluster-scoped one (client-go's `MetaNamespaceKeyFunc`).
pub fn key_of(object: &Value) -> String {
    let meta = |field: &str| {
        object
            .get("metadata")
            .and_then(|m| m.get(field))
            .and_then(Value::as_str)
    };
    let name = meta("name").unwrap_or_default();
    match meta("namespace").filter(|ns| !ns.is_empty()) {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    }
}

/// `metadata.resourceVersion`, or "" when absent.
pub fn resource_version(object: &Value) -> &str {
    object
        .get("metadata")
        .and_then(|m| m.get("resourceVersion"))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn namespace_of(key: &str) -> Option<&str> {
    key.split_once('/').map(|(ns, _)| ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn state_is_the_accumulation_of_events() {
        let mut ix = Indexer::default();
        assert!(ix.upsert("default/a", Object::from(json!(1))).is_none());
        assert_eq!(
            ix.upsert("default/a", Object::from(json!(2))).unwrap(),
            Object::from(json!(1))
        );
        ix.upsert("prod/b", Object::from(json!(3)));
        assert_eq!(ix.keys_in("default").collect::<Vec<_>>(), vec!["default/a"]);
        assert_eq!(ix.remove("default/a").unwrap(), Object::from(json!(2)));
        assert_eq!(ix.keys_in("default").count(), 0);
        assert_eq!(ix.len(), 1);
    }

    fn owner(o: &Object) -> Vec<String> {
        o.meta().labels.get("owner").cloned().into_iter().collect()
    }

    #[test]
    fn a_named_index_follows_adds_changes_of_value_and_deletions() {
        let mut ix = Indexer::default().with_index("owner", owner);
        ix.upsert(
            "a",
            Object::from(json!({"metadata": {"labels": {"owner": "rs1"}}})),
        );
        ix.upsert(
            "b",
            Object::from(json!({"metadata": {"labels": {"owner": "rs1"}}})),
        );
        assert_eq!(ix.by_index("owner", "rs1").count(), 2);
        ix.upsert(
            "a",
            Object::from(json!({"metadata": {"labels": {"owner": "rs2"}}})),
        );
        assert_eq!(ix.by_index("owner", "rs1").count(), 1);
        assert_eq!(ix.by_index("owner", "rs2").count(), 1);
        ix.upsert(
            "a",
            Object::from(json!({"metadata": {"labels": {"owner": "rs2"}}, "x": 1})),
        );
        assert_eq!(ix.by_index("owner", "rs2").count(), 1, "same value kept");
        ix.remove("b");
        assert_eq!(ix.by_index("owner", "rs1").count(), 0);
    }

    #[test]
    fn keys_are_namespace_slash_name_or_name() {
        assert_eq!(
            key_of(&json!({"metadata": {"namespace": "d", "name": "a"}})),
            "d/a"
        );
        assert_eq!(key_of(&json!({"metadata": {"name": "node-1"}})), "node-1");
    }
}
