//! The Indexer: the informer's store of objects, with a namespace index and
//! any number of named indexes (client-go's `Indexers`).
//!
//! State is the accumulation of events: ADDED inserts, MODIFIED replaces,
//! DELETED removes.

use crate::object::{Object, Stored};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// An index function: the values under which an object is found.
pub type IndexFunc<O = Object> = fn(&O) -> Vec<String>;

/// Objects by key (`namespace/name` or `name`), indexed by namespace and by
/// the indexes registered with [`Indexer::with_index`].
///
/// A key is one shared text wherever it is filed (the map, the namespace
/// index, the named indexes, and the object's own [`crate::Meta`]): with
/// 150,000 objects, a copy per place would be megabytes of the same names.
#[derive(Debug)]
pub struct Indexer<O = Object> {
    objects: HashMap<Arc<str>, O>,
    by_namespace: BTreeMap<String, BTreeSet<Arc<str>>>,
    indexes: BTreeMap<&'static str, Index<O>>,
}

#[derive(Debug)]
struct Index<O> {
    func: IndexFunc<O>,
    keys: BTreeMap<String, BTreeSet<Arc<str>>>,
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
        let own = object.key();
        let key: Arc<str> = if *own == *key { own } else { key.into() };
        if let Some(ns) = namespace_of(&key) {
            let keys = self.by_namespace.entry(ns.to_string()).or_default();
            keys.replace(key.clone());
        }
        for index in self.indexes.values_mut() {
            for value in (index.func)(&object) {
                index.keys.entry(value).or_default().replace(key.clone());
            }
        }
        // The map's key too becomes the new object's text, so that the old
        // object's can be freed with it.
        let old = self.objects.remove(&*key);
        self.objects.insert(key.clone(), object);
        if let Some(old) = &old {
            self.unindex(&key, old, true);
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
            .map(|key| &**key)
    }

    /// The objects filed under `value` in index `name`, in key order.
    pub fn by_index<'a>(&'a self, name: &str, value: &str) -> impl Iterator<Item = &'a O> {
        self.indexes
            .get(name)
            .and_then(|index| index.keys.get(value))
            .into_iter()
            .flatten()
            .filter_map(|key| self.objects.get(&**key))
    }

    /// Every key.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.objects.keys().map(|key| &**key)
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

fn namespace_of(key: &str) -> Option<&str> {
    key.split_once('/').map(|(ns, _)| ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::key_of;
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
        o.meta().labels.get("owner").into_iter().collect()
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
    fn the_key_is_one_text_shared_with_the_object() {
        let mut ix = Indexer::default();
        let o = Object::from(json!({"metadata": {"namespace": "d", "name": "a"}}));
        ix.upsert("d/a", o.clone());
        let shared = Stored::key(&o);
        let (filed, _) = ix.objects.get_key_value("d/a").unwrap();
        assert!(Arc::ptr_eq(filed, &shared));
        assert!(Arc::ptr_eq(ix.by_namespace["d"].first().unwrap(), &shared));
        let newer = Object::from(json!({"metadata": {"namespace": "d", "name": "a", "x": 1}}));
        ix.upsert("d/a", newer.clone());
        let (filed, _) = ix.objects.get_key_value("d/a").unwrap();
        assert!(
            Arc::ptr_eq(filed, &Stored::key(&newer)),
            "the old text goes with the old object"
        );
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
