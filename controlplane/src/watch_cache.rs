//! The watch cache, modelled on the apiserver's Cacher.
//!
//! One cache per resource type holds one watch on the store, a sliding window
//! (a ring) of recent events, and a snapshot of the current objects that serves
//! lists. Many watchers are fed from it: the store sees one watch however many
//! clients watch. Each watcher has a bounded buffer; a watcher whose buffer is
//! full is closed rather than allowed to hold up the others, and its client
//! re-watches from the last resourceVersion it saw.

use crate::clock::Clock;
use crate::resource::ResourceType;
use crate::store::{Change, Revision, StoreEvent};
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use tokio::sync::mpsc;
use watchlife_protocol::{EventType, Micros};

/// An event as the cache holds it, shared by every watcher it is sent to.
#[derive(Debug)]
pub struct CachedEvent {
    pub event_type: EventType,
    /// Store key of the object.
    pub key: String,
    pub revision: Revision,
    pub object: Arc<Value>,
    /// When the store committed the change.
    pub committed_at: Micros,
    /// When the change entered the cache.
    pub cached_at: Micros,
}

/// One event handed to one watcher.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub event: Arc<CachedEvent>,
    /// When the cache put it in this watcher's buffer.
    pub dispatched_at: Micros,
}

/// Why a watch could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WatchError {
    /// The requested revision is older than the cache's window (410 Gone).
    #[error("too old resource version: {requested} (oldest available: {oldest})")]
    TooOld {
        requested: Revision,
        oldest: Revision,
    },
}

/// Identifies one watcher of one cache, for as long as the process runs.
pub type WatcherId = u64;

/// Closed watchers a cache remembers, so a viewer that looks a little later
/// still sees which watcher fell behind.
pub const CLOSED_WATCHERS_KEPT: usize = 16;

struct Watcher {
    id: WatcherId,
    /// Who watches (`scheduler`, `kubelet/node-a`, `bridge`); empty when the
    /// client gave no name.
    name: String,
    tx: mpsc::Sender<Delivery>,
    namespace: Option<String>,
}

/// One attached watcher, as the UI draws its lane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatcherInfo {
    pub id: WatcherId,
    pub name: String,
    /// Events waiting in its buffer: sent by the cache, not yet read.
    pub buffered: usize,
    /// Events its buffer holds before the cache closes it.
    pub capacity: usize,
}

/// A watcher the cache closed because its buffer was full.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClosedWatcher {
    pub id: WatcherId,
    pub name: String,
    /// The revision of the event it could not take.
    pub revision: Revision,
    pub closed_at: Micros,
}

/// The watchers of one cache: its fan-out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchersInfo {
    pub resource: ResourceType,
    pub watchers: Vec<WatcherInfo>,
    /// Watchers closed for being too slow since the cache started.
    pub closed_slow: u64,
    /// The last [`CLOSED_WATCHERS_KEPT`] of them, oldest first.
    pub recently_closed: Vec<ClosedWatcher>,
}

/// What [`WatchCache::apply`] did with one change.
#[derive(Debug, Clone)]
pub struct Dispatched {
    pub event: Arc<CachedEvent>,
    /// When the event was put in the watchers' buffers (one time for all).
    pub dispatched_at: Micros,
    /// Watchers that took it.
    pub delivered: usize,
}

/// The Cacher of one resource type.
pub struct WatchCache {
    resource: ResourceType,
    ring: VecDeque<Arc<CachedEvent>>,
    capacity: usize,
    /// The ring holds every change after this revision.
    window_start: Revision,
    /// Latest store revision the cache has seen.
    revision: Revision,
    objects: BTreeMap<String, Arc<Value>>,
    watchers: Vec<Watcher>,
    next_watcher_id: WatcherId,
    closed_slow: u64,
    recently_closed: VecDeque<ClosedWatcher>,
    clock: Clock,
}

impl WatchCache {
    /// A cache primed with the store's current objects at `revision`.
    pub fn new(
        resource: ResourceType,
        capacity: usize,
        objects: impl IntoIterator<Item = (String, Arc<Value>)>,
        revision: Revision,
        clock: Clock,
    ) -> Self {
        WatchCache {
            resource,
            ring: VecDeque::with_capacity(capacity),
            capacity: capacity.max(1),
            window_start: revision,
            revision,
            objects: objects.into_iter().collect(),
            watchers: Vec::new(),
            next_watcher_id: 1,
            closed_slow: 0,
            recently_closed: VecDeque::new(),
            clock,
        }
    }

    pub fn resource(&self) -> ResourceType {
        self.resource
    }

    /// Latest store revision seen.
    pub fn revision(&self) -> Revision {
        self.revision
    }

    /// Watchers currently attached.
    pub fn watcher_count(&self) -> usize {
        self.watchers.len()
    }

    /// The attached watchers and the ones recently closed for being slow.
    /// A watcher whose client has gone away is no longer listed.
    pub fn watchers_info(&self) -> WatchersInfo {
        WatchersInfo {
            resource: self.resource,
            watchers: self
                .watchers
                .iter()
                .filter(|w| !w.tx.is_closed())
                .map(|w| WatcherInfo {
                    id: w.id,
                    name: w.name.clone(),
                    buffered: w.tx.max_capacity() - w.tx.capacity(),
                    capacity: w.tx.max_capacity(),
                })
                .collect(),
            closed_slow: self.closed_slow,
            recently_closed: self.recently_closed.iter().cloned().collect(),
        }
    }

    /// Takes one change from the store's watch: updates the snapshot, appends to
    /// the ring (evicting the oldest when full) and dispatches to every watcher.
    pub fn apply(&mut self, change: &StoreEvent) -> Dispatched {
        self.revision = self.revision.max(change.revision);
        let event_type = match change.change {
            Change::Put { created: true } => EventType::Added,
            Change::Put { created: false } => EventType::Modified,
            Change::Delete => EventType::Deleted,
        };
        match event_type {
            EventType::Deleted => self.objects.remove(&change.key),
            _ => self
                .objects
                .insert(change.key.clone(), change.object.clone()),
        };
        let event = Arc::new(CachedEvent {
            event_type,
            key: change.key.clone(),
            revision: change.revision,
            object: change.object.clone(),
            committed_at: change.committed_at,
            cached_at: self.clock.now(),
        });
        if self.ring.len() == self.capacity
            && let Some(evicted) = self.ring.pop_front()
        {
            self.window_start = evicted.revision;
        }
        self.ring.push_back(event.clone());
        self.dispatch(event)
    }

    /// Notes that the store moved on without touching this type, so a later
    /// watch from that revision is served from the window.
    pub fn advance(&mut self, revision: Revision) {
        self.revision = self.revision.max(revision);
    }

    /// The current objects and the revision they are consistent with.
    pub fn list(&self) -> (Vec<Arc<Value>>, Revision) {
        (self.objects.values().cloned().collect(), self.revision)
    }

    /// Starts a watch.
    ///
    /// `from` is the resourceVersion to watch after. `None` (or 0) means "any":
    /// the watcher first gets an ADDED event for every current object, then the
    /// live stream. A revision older than the window fails with
    /// [`WatchError::TooOld`]. `buffer` bounds the watcher's queue of live events.
    pub fn watch(
        &mut self,
        from: Option<Revision>,
        namespace: Option<String>,
        buffer: usize,
    ) -> Result<mpsc::Receiver<Delivery>, WatchError> {
        self.watch_named("", from, namespace, buffer)
            .map(|(_, rx)| rx)
    }

    /// [`WatchCache::watch`] for a named watcher; also returns its id, the one
    /// [`WatchCache::watchers_info`] lists it under.
    pub fn watch_named(
        &mut self,
        name: &str,
        from: Option<Revision>,
        namespace: Option<String>,
        buffer: usize,
    ) -> Result<(WatcherId, mpsc::Receiver<Delivery>), WatchError> {
        let backlog: Vec<Arc<CachedEvent>> = match from.filter(|&r| r > 0) {
            None => self
                .objects
                .iter()
                .map(|(key, object)| {
                    Arc::new(CachedEvent {
                        event_type: EventType::Added,
                        key: key.clone(),
                        revision: crate::object::resource_version(object)
                            .and_then(|rv| rv.parse().ok())
                            .unwrap_or(self.revision),
                        object: object.clone(),
                        committed_at: self.clock.now(),
                        cached_at: self.clock.now(),
                    })
                })
                .collect(),
            Some(from) if from < self.window_start => {
                return Err(WatchError::TooOld {
                    requested: from,
                    oldest: self.window_start,
                });
            }
            Some(from) => self
                .ring
                .iter()
                .filter(|e| e.revision > from)
                .cloned()
                .collect(),
        };
        let (tx, rx) = mpsc::channel(backlog.len() + buffer.max(1));
        let id = self.next_watcher_id;
        self.next_watcher_id += 1;
        let watcher = Watcher {
            id,
            name: name.to_string(),
            tx,
            namespace,
        };
        for event in backlog {
            if watcher.wants(&event) {
                let _ = watcher.tx.try_send(Delivery {
                    event,
                    dispatched_at: self.clock.now(),
                });
            }
        }
        self.watchers.push(watcher);
        Ok((id, rx))
    }

    /// Closes every watch; clients re-watch from their last resourceVersion.
    pub fn drop_watchers(&mut self) {
        self.watchers.clear();
    }

    fn dispatch(&mut self, event: Arc<CachedEvent>) -> Dispatched {
        let now = self.clock.now();
        let mut delivered = 0;
        let mut slow = Vec::new();
        // A watcher that cannot take the event is closed, never waited for.
        self.watchers.retain(|w| {
            if !w.wants(&event) {
                return true;
            }
            let delivery = Delivery {
                event: event.clone(),
                dispatched_at: now,
            };
            match w.tx.try_send(delivery) {
                Ok(()) => {
                    delivered += 1;
                    true
                }
                Err(mpsc::error::TrySendError::Full(_)) => {
                    slow.push(ClosedWatcher {
                        id: w.id,
                        name: w.name.clone(),
                        revision: event.revision,
                        closed_at: now,
                    });
                    false
                }
                // The client stopped watching: nothing to report.
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            }
        });
        for closed in slow {
            self.closed_slow += 1;
            if self.recently_closed.len() == CLOSED_WATCHERS_KEPT {
                self.recently_closed.pop_front();
            }
            self.recently_closed.push_back(closed);
        }
        Dispatched {
            event,
            dispatched_at: now,
            delivered,
        }
    }
}

impl Watcher {
    fn wants(&self, event: &CachedEvent) -> bool {
        match &self.namespace {
            None => true,
            Some(ns) => crate::object::namespace(&event.object) == Some(ns.as_str()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::PODS;
    use crate::store::Store;
    use serde_json::json;

    fn setup(capacity: usize) -> (Store, WatchCache) {
        let clock = Clock::new(|| 0);
        let store = Store::new(clock.clone());
        let cache = WatchCache::new(PODS, capacity, [], store.revision(), clock);
        (store, cache)
    }

    fn pod(ns: &str, name: &str) -> serde_json::Value {
        json!({"metadata": {"namespace": ns, "name": name}})
    }

    #[test]
    fn watch_from_revision_replays_the_window_then_streams() {
        let (mut store, mut cache) = setup(10);
        cache.apply(&store.create("a", pod("default", "a")).unwrap());
        let after_a = store.revision();
        cache.apply(&store.update("a", pod("default", "a"), None).unwrap());
        let mut rx = cache.watch(Some(after_a), None, 4).unwrap();
        cache.apply(&store.delete("a", None).unwrap());
        let types: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|d| (d.event.event_type, d.event.revision))
            .collect();
        assert_eq!(
            types,
            vec![(EventType::Modified, 3), (EventType::Deleted, 4)]
        );
    }

    #[test]
    fn watch_from_zero_starts_with_synthetic_added_events() {
        let (mut store, mut cache) = setup(10);
        cache.apply(&store.create("a", pod("default", "a")).unwrap());
        cache.apply(&store.update("a", pod("default", "a"), None).unwrap());
        let mut rx = cache.watch(None, None, 4).unwrap();
        let first = rx.try_recv().unwrap();
        assert_eq!(first.event.event_type, EventType::Added);
        assert_eq!(first.event.revision, 3);
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn revision_older_than_the_window_is_too_old() {
        let (mut store, mut cache) = setup(2);
        for name in ["a", "b", "c"] {
            cache.apply(&store.create(name, pod("default", name)).unwrap());
        }
        assert_eq!(
            cache.watch(Some(1), None, 1).unwrap_err(),
            WatchError::TooOld {
                requested: 1,
                oldest: 2
            }
        );
        assert!(cache.watch(Some(2), None, 1).is_ok());
    }

    #[test]
    fn a_full_watcher_is_closed_and_the_others_keep_receiving() {
        let (mut store, mut cache) = setup(10);
        let mut slow = cache.watch(Some(1), None, 1).unwrap();
        let mut fast = cache.watch(Some(1), None, 10).unwrap();
        for name in ["a", "b", "c"] {
            cache.apply(&store.create(name, pod("default", name)).unwrap());
            fast.try_recv().unwrap();
        }
        assert_eq!(cache.watcher_count(), 1);
        assert!(slow.try_recv().is_ok());
        assert!(matches!(
            slow.try_recv(),
            Err(mpsc::error::TryRecvError::Disconnected)
        ));
    }

    #[test]
    fn namespace_filter_applies_to_backlog_and_stream() {
        let (mut store, mut cache) = setup(10);
        let mut rx = cache.watch(Some(1), Some("prod".into()), 10).unwrap();
        cache.apply(&store.create("a", pod("default", "a")).unwrap());
        cache.apply(&store.create("b", pod("prod", "b")).unwrap());
        let got: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|d| d.event.key.clone())
            .collect();
        assert_eq!(got, vec!["b".to_string()]);
    }
}
