//! The Indexer: the informer's store of objects, with a namespace index.
//!
//! State is the accumulation of events: ADDED inserts, MODIFIED replaces,
//! DELETED removes. A relist replaces the whole contents at once, so no reader
//! ever sees a half-empty store.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// Objects by key (`namespace/name` or `name`), indexed by namespace.
#[derive(Debug, Default)]
pub struct Indexer {
    objects: HashMap<String, Arc<Value>>,
    by_namespace: BTreeMap<String, BTreeSet<String>>,
}

impl Indexer {
    /// Inserts or replaces; returns the previous object.
    pub fn upsert(&mut self, key: &str, object: Arc<Value>) -> Option<Arc<Value>> {
        if let Some(ns) = namespace_of(key) {
            self.by_namespace
                .entry(ns.to_string())
                .or_default()
                .insert(key.to_string());
        }
        self.objects.insert(key.to_string(), object)
    }

    /// Removes; returns the object that was there.
    pub fn remove(&mut self, key: &str) -> Option<Arc<Value>> {
        if let Some(ns) = namespace_of(key)
            && let Some(keys) = self.by_namespace.get_mut(ns)
        {
            keys.remove(key);
            if keys.is_empty() {
                self.by_namespace.remove(ns);
            }
        }
        self.objects.remove(key)
    }

    /// Replaces every object at once (after a LIST).
    pub fn replace(&mut self, items: impl IntoIterator<Item = (String, Arc<Value>)>) {
        let mut fresh = Indexer::default();
        for (key, object) in items {
            fresh.upsert(&key, object);
        }
        *self = fresh;
    }

    pub fn get(&self, key: &str) -> Option<&Arc<Value>> {
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

    /// Every key.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.objects.keys().map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
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
        assert!(ix.upsert("default/a", Arc::new(json!(1))).is_none());
        assert_eq!(
            *ix.upsert("default/a", Arc::new(json!(2))).unwrap(),
            json!(1)
        );
        ix.upsert("prod/b", Arc::new(json!(3)));
        assert_eq!(ix.keys_in("default").collect::<Vec<_>>(), vec!["default/a"]);
        assert_eq!(*ix.remove("default/a").unwrap(), json!(2));
        assert_eq!(ix.keys_in("default").count(), 0);
        ix.replace([("node-a".to_string(), Arc::new(json!(4)))]);
        assert_eq!(ix.len(), 1);
        assert!(ix.get("prod/b").is_none());
    }
}
