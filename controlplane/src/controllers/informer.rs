//! The informer: a reflector (list, then watch from the list's revision) that
//! keeps a local cache of one resource type and tells its owner what changed.
//!
//! IO-free and pull-driven: [`Informer::poll`] drains whatever the watch has
//! delivered (re-watching or re-listing when needed) and returns the
//! notifications; the owning controller hands them to its handlers.

use super::owner::controller_uid;
use crate::control_plane::{ApiError, ControlPlane};
use crate::resource::ResourceType;
use crate::store::Revision;
use crate::watch_cache::{Delivery, WatchFilter};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use tokio::sync::mpsc::{self, error::TryRecvError};
use watchlife_protocol::EventType;

/// Lists or watches one poll may start before giving up until the next poll.
/// A re-watch normally succeeds at once and a relist always does; the bound
/// only stops a control plane that closes every watch at once (drop every
/// watch, pressed repeatedly) from keeping one poll busy.
pub const STARTS_PER_POLL: usize = 4;

/// What changed in an informer's cache, in the order it changed.
#[derive(Debug, Clone, PartialEq)]
pub enum Notification {
    Added(Arc<Value>),
    Updated {
        old: Arc<Value>,
        new: Arc<Value>,
    },
    /// The object's last state known (from the DELETED event, or the cache's
    /// copy when a relist found it gone).
    Deleted(Arc<Value>),
}

impl Notification {
    /// The object as it is now (the last state for a deletion).
    pub fn object(&self) -> &Arc<Value> {
        match self {
            Notification::Added(obj) | Notification::Deleted(obj) => obj,
            Notification::Updated { new, .. } => new,
        }
    }

    /// The cache key of the object (see [`key_of`]).
    pub fn key(&self) -> String {
        key_of(self.object())
    }
}

/// Where the reflector is, the stages the UI draws.
#[derive(Debug)]
enum Phase {
    /// Must list (at start, or after the watch cache answered 410 Gone).
    NeedsList,
    /// Listed; must (re)start the watch from the last revision seen.
    NeedsWatch,
    Watching(mpsc::Receiver<Delivery>),
}

/// Counts a viewer may show of one informer's life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InformerStats {
    pub lists: u64,
    pub watches: u64,
    pub events: u64,
}

/// A reflector and its indexer for one resource type.
///
/// Contract, as client-go's shared informer gives it:
/// - Notifications of one object come in the order of its changes, each
///   exactly once, for as long as the watch lasts; over a relist the informer
///   swaps its whole cache at once and reports the difference (adds for new
///   objects, updates for changed ones, deletions for vanished ones), so
///   intermediate changes may be folded together but none is reported twice.
/// - The cache is updated before the notification is returned: a handler that
///   reads the cache sees the object at least as new as the notification.
/// - Reads of the cache are as fresh as the last poll, never fresher.
pub struct Informer {
    resource: ResourceType,
    name: String,
    /// The selection the watch asks the server for (namespace, labels,
    /// fields); the list is narrowed to the same.
    filter: WatchFilter,
    phase: Phase,
    last_revision: Revision,
    cache: BTreeMap<String, Arc<Value>>,
    /// Keys of the cached objects by the uid of the controller managing
    /// them, as client-go's indexer keeps an owner index: a controller asks
    /// for its own objects on every sync, and a pass over the whole cache
    /// each time would cost as much as the cache is large.
    controlled: BTreeMap<String, BTreeSet<String>>,
    synced: bool,
    stats: InformerStats,
}

impl std::fmt::Debug for Informer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Informer")
            .field("resource", &self.resource.plural)
            .field("name", &self.name)
            .field("phase", &self.phase)
            .field("objects", &self.cache.len())
            .finish()
    }
}

impl Informer {
    /// An informer on every object of `rt`, whose watch the watch cache lists
    /// under `name`.
    pub fn new(rt: ResourceType, name: impl Into<String>) -> Self {
        Informer {
            resource: rt,
            name: name.into(),
            filter: WatchFilter::default(),
            phase: Phase::NeedsList,
            last_revision: 0,
            cache: BTreeMap::new(),
            controlled: BTreeMap::new(),
            synced: false,
            stats: InformerStats::default(),
        }
    }

    /// Keeps only the objects in `filter`, as a client's `labelSelector` and
    /// `fieldSelector` do (a kubelet asks for `spec.nodeName=<its node>`). The
    /// watch cache applies it: an object that stops matching arrives as a
    /// deletion, one that starts matching as an addition.
    pub fn with_filter(mut self, filter: WatchFilter) -> Self {
        self.filter = filter;
        self
    }

    pub fn resource(&self) -> ResourceType {
        self.resource
    }

    /// True once the first list is in the cache (client-go's `HasSynced`).
    pub fn has_synced(&self) -> bool {
        self.synced
    }

    pub fn stats(&self) -> InformerStats {
        self.stats
    }

    /// The cached object under `key` (`namespace/name`, or `name`).
    pub fn get(&self, key: &str) -> Option<&Arc<Value>> {
        self.cache.get(key)
    }

    /// Every cached object, in key order.
    pub fn list(&self) -> impl Iterator<Item = &Arc<Value>> {
        self.cache.values()
    }

    /// The cached objects whose managing controller has uid `owner`, in key
    /// order.
    pub fn controlled_by<'a>(&'a self, owner: &str) -> impl Iterator<Item = &'a Arc<Value>> {
        self.controlled
            .get(owner)
            .into_iter()
            .flatten()
            .filter_map(|key| self.cache.get(key))
    }

    /// Brings the cache up to date with what the control plane has delivered
    /// and returns what changed. Lists first when needed, re-watches from the
    /// last revision seen when the watch was closed, and re-lists when that
    /// revision is too old (410 Gone).
    pub fn poll(&mut self, cp: &ControlPlane) -> Vec<Notification> {
        let mut changes = Vec::new();
        let mut starts = 0;
        loop {
            match &mut self.phase {
                Phase::Watching(rx) => match rx.try_recv() {
                    Ok(delivery) => {
                        self.stats.events += 1;
                        self.last_revision = delivery.event.revision;
                        self.apply(&delivery, &mut changes);
                    }
                    Err(TryRecvError::Empty) => return changes,
                    // The cache closed the watch (too slow, or every watch was
                    // dropped): resume from the last revision seen.
                    Err(TryRecvError::Disconnected) => self.phase = Phase::NeedsWatch,
                },
                _ if starts == STARTS_PER_POLL => return changes,
                Phase::NeedsList => {
                    starts += 1;
                    let (items, revision) = cp.list(self.resource, None);
                    self.stats.lists += 1;
                    self.replace(items, &mut changes);
                    self.last_revision = revision;
                    self.synced = true;
                    self.phase = Phase::NeedsWatch;
                }
                Phase::NeedsWatch => {
                    starts += 1;
                    let from = Some(self.last_revision);
                    let filter = self.filter.clone();
                    match cp.watch_with(&self.name, self.resource, from, filter) {
                        Ok(rx) => {
                            self.stats.watches += 1;
                            self.phase = Phase::Watching(rx);
                        }
                        // Too old for the watch cache's window: list again.
                        Err(ApiError::Gone(_)) => self.phase = Phase::NeedsList,
                        Err(_) => return changes,
                    }
                }
            }
        }
    }

    fn selects(&self, obj: &Value) -> bool {
        self.filter.matches(obj)
    }

    fn apply(&mut self, delivery: &Delivery, changes: &mut Vec<Notification>) {
        let event = &delivery.event;
        let obj = event.object.clone();
        let key = key_of(&obj);
        let keep = event.event_type != EventType::Deleted && self.selects(&obj);
        match event.event_type {
            EventType::Added | EventType::Modified | EventType::Deleted => {}
            EventType::Bookmark | EventType::Error => return,
        }
        if keep {
            self.index(&key, &obj);
            changes.push(match self.cache.insert(key.clone(), obj.clone()) {
                None => Notification::Added(obj),
                Some(old) => {
                    if controller_uid(&old) != controller_uid(&obj) {
                        self.unindex(&key, &old);
                    }
                    Notification::Updated { old, new: obj }
                }
            });
        } else if let Some(old) = self.cache.remove(&key) {
            self.unindex(&key, &old);
            changes.push(Notification::Deleted(obj));
        }
    }

    fn index(&mut self, key: &str, obj: &Value) {
        if let Some(owner) = controller_uid(obj) {
            self.controlled
                .entry(owner.to_string())
                .or_default()
                .insert(key.to_string());
        }
    }

    fn unindex(&mut self, key: &str, obj: &Value) {
        if let Some(owner) = controller_uid(obj)
            && let Some(keys) = self.controlled.get_mut(owner)
        {
            keys.remove(key);
            if keys.is_empty() {
                self.controlled.remove(owner);
            }
        }
    }

    /// Swaps in a fresh list at once and reports how it differs.
    fn replace(&mut self, items: Vec<Arc<Value>>, changes: &mut Vec<Notification>) {
        let mut fresh = BTreeMap::new();
        for obj in items.into_iter().filter(|o| self.selects(o)) {
            fresh.insert(key_of(&obj), obj);
        }
        self.controlled.clear();
        for (key, obj) in &fresh {
            self.index(key, obj);
        }
        let old = std::mem::replace(&mut self.cache, fresh);
        for (key, obj) in &self.cache {
            match old.get(key) {
                None => changes.push(Notification::Added(obj.clone())),
                Some(prev)
                    if crate::object::resource_version(prev)
                        != crate::object::resource_version(obj) =>
                {
                    changes.push(Notification::Updated {
                        old: prev.clone(),
                        new: obj.clone(),
                    })
                }
                Some(_) => {}
            }
        }
        for (key, obj) in old {
            if !self.cache.contains_key(&key) {
                changes.push(Notification::Deleted(obj));
            }
        }
    }
}

/// The cache and workqueue key of an object: `namespace/name`, or `name` for
/// a cluster-scoped one (client-go's `MetaNamespaceKeyFunc`).
pub fn key_of(obj: &Value) -> String {
    let name = crate::object::name(obj);
    match crate::object::namespace(obj) {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    }
}

/// Splits a key into namespace and name.
pub fn split_key(key: &str) -> (Option<&str>, &str) {
    match key.split_once('/') {
        Some((ns, name)) => (Some(ns), name),
        None => (None, key),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Clock;
    use crate::resource::PODS;
    use serde_json::json;

    fn names(changes: &[Notification]) -> Vec<String> {
        changes
            .iter()
            .map(|c| match c {
                Notification::Added(o) => format!("+{}", crate::object::name(o)),
                Notification::Updated { new, .. } => format!("~{}", crate::object::name(new)),
                Notification::Deleted(o) => format!("-{}", crate::object::name(o)),
            })
            .collect()
    }

    #[test]
    fn lists_then_watches_and_survives_dropped_watches_and_compaction() {
        let cp = ControlPlane::new(Clock::new(|| 0));
        cp.create(PODS, json!({"metadata": {"name": "a"}})).unwrap();
        let mut informer = Informer::new(PODS, "test");
        assert_eq!(names(&informer.poll(&cp)), vec!["+a"]);
        assert!(informer.has_synced());
        cp.create(PODS, json!({"metadata": {"name": "b"}})).unwrap();
        cp.drop_watchers();
        cp.modify(PODS, Some("default"), "a", |p| p["spec"] = json!({"x": 1}))
            .unwrap();
        assert_eq!(names(&informer.poll(&cp)), vec!["+b", "~a"]);
        assert_eq!(informer.stats().watches, 2, "re-watched once");
        // Fall behind a compaction: the watch cache answers 410 Gone.
        cp.drop_watchers();
        cp.delete(PODS, Some("default"), "b").unwrap();
        for i in 0..3 {
            cp.modify(PODS, Some("default"), "a", |p| p["spec"] = json!({"x": i}))
                .unwrap();
        }
        cp.compact();
        assert_eq!(names(&informer.poll(&cp)), vec!["~a", "-b"]);
        assert_eq!(informer.stats().lists, 2, "relisted after 410 Gone");
        assert_eq!(informer.list().count(), 1);
    }

    #[test]
    fn a_selector_turns_leaving_into_deletion_and_entering_into_addition() {
        let cp = ControlPlane::new(Clock::new(|| 0));
        let mut informer = Informer::new(PODS, "kubelet/node-a")
            .with_filter(crate::controllers::kubelet::pods_on("node-a"));
        informer.poll(&cp);
        cp.create(PODS, json!({"metadata": {"name": "p"}})).unwrap();
        assert!(informer.poll(&cp).is_empty());
        cp.modify(PODS, Some("default"), "p", |p| {
            p["spec"]["nodeName"] = json!("node-a")
        })
        .unwrap();
        assert_eq!(names(&informer.poll(&cp)), vec!["+p"]);
        assert_eq!(
            informer.get("default/p").unwrap()["spec"]["nodeName"],
            "node-a"
        );
        cp.modify(PODS, Some("default"), "p", |p| {
            p["spec"]["nodeName"] = json!("node-b")
        })
        .unwrap();
        assert_eq!(names(&informer.poll(&cp)), vec!["-p"]);
    }

    #[test]
    fn the_owner_index_follows_adds_owner_changes_deletions_and_relists() {
        let cp = ControlPlane::new(Clock::new(|| 0));
        let owned_by = |name: &str, owner: &str| {
            json!({"metadata": {"name": name, "ownerReferences": [
                {"kind": "ReplicaSet", "name": owner, "uid": owner, "controller": true}
            ]}})
        };
        let mut informer = Informer::new(PODS, "test");
        let controlled = |informer: &Informer, owner: &str| -> Vec<String> {
            informer
                .controlled_by(owner)
                .map(|o| crate::object::name(o).to_string())
                .collect()
        };
        cp.create(PODS, owned_by("a", "rs-1")).unwrap();
        cp.create(PODS, json!({"metadata": {"name": "loose"}}))
            .unwrap();
        informer.poll(&cp);
        cp.create(PODS, owned_by("b", "rs-1")).unwrap();
        cp.create(PODS, owned_by("c", "rs-2")).unwrap();
        informer.poll(&cp);
        assert_eq!(controlled(&informer, "rs-1"), vec!["a", "b"]);
        assert_eq!(controlled(&informer, "rs-2"), vec!["c"]);

        // Adopted by another owner, then deleted.
        cp.modify(PODS, Some("default"), "b", |p| {
            p["metadata"]["ownerReferences"][0]["uid"] = json!("rs-2")
        })
        .unwrap();
        cp.delete(PODS, Some("default"), "a").unwrap();
        informer.poll(&cp);
        assert!(controlled(&informer, "rs-1").is_empty());
        assert_eq!(controlled(&informer, "rs-2"), vec!["b", "c"]);

        // A relist after 410 Gone rebuilds the index with the cache.
        cp.drop_watchers();
        cp.delete(PODS, Some("default"), "c").unwrap();
        cp.create(PODS, owned_by("d", "rs-1")).unwrap();
        cp.compact();
        informer.poll(&cp);
        assert_eq!(informer.stats().lists, 2, "relisted");
        assert_eq!(controlled(&informer, "rs-1"), vec!["d"]);
        assert_eq!(controlled(&informer, "rs-2"), vec!["b"]);
    }
}
