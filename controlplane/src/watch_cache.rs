//! The watch cache, modelled on the apiserver's Cacher.
//!
//! One cache per resource type holds one watch on the store, a sliding window
//! (a ring) of recent events, and a snapshot of the current objects that serves
//! lists. Many watchers are fed from it: the store sees one watch however many
//! clients watch. Each watcher has a bounded buffer; a watcher whose buffer is
//! full is closed rather than allowed to hold up the others, and its client
//! re-watches from the last resourceVersion it saw.
//!
//! The window grows and shrinks as the Cacher's does: when it is full and its
//! oldest event is younger than [`EVENT_FRESH_MICROS`], events are falling out
//! too fast for a client to re-watch from them, so the capacity doubles (up to
//! the upper bound); when even the newest quarter of the window is older than
//! that, the cache is idle and the capacity halves (down to the lower bound).
//! Whatever its capacity, the window also holds at most
//! [`WindowBounds::max_bytes`] of objects (their weights,
//! [`crate::object::weight`]): large objects written fast leave it sooner.
//!
//! Each event is serialized at most once, on first use, for every watcher it is
//! sent to ([`CachedEvent::line`]). So is the ADDED event of each current
//! object that a watch from "now" starts with: it is made once and shared by
//! every such watch, which then costs a pointer per object.

use crate::clock::Clock;
use crate::resource::ResourceType;
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::{Change, Revision, StoreEvent};
use bytes::Bytes;
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, OnceLock};
use tokio::sync::mpsc;
use watchlife_protocol::{EventType, Micros};

/// How young the oldest event of a full window may be before the window
/// doubles: the apiserver's `eventFreshDuration` (75 s), long enough for a
/// client whose watch just ended to re-watch from where it was.
pub const EVENT_FRESH_MICROS: Micros = 75_000_000;

/// The smallest and largest window a growing cache may have, in events, and
/// the most it may hold in bytes of JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowBounds {
    pub min: usize,
    pub max: usize,
    /// Beyond this the oldest events leave the window, however many it may
    /// hold; the newest event always stays.
    pub max_bytes: usize,
}

impl WindowBounds {
    /// A window that never resizes, whatever its events weigh.
    pub fn fixed(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        WindowBounds {
            min: capacity,
            max: capacity,
            max_bytes: usize::MAX,
        }
    }
}

/// An event as the cache holds it, shared by every watcher it is sent to.
#[derive(Debug)]
pub struct CachedEvent {
    pub event_type: EventType,
    /// Store key of the object.
    pub key: String,
    pub revision: Revision,
    pub object: Arc<Value>,
    /// The weight of `object` (the memory it takes), as the store measured
    /// it.
    pub size: usize,
    /// The object before the change, when it existed; lets a watcher with a
    /// selector see an object leave its selection as DELETED.
    pub prev: Option<Arc<Value>>,
    /// When the store committed the change; for the ADDED event of a current
    /// object that starts a watch from "now", when the cache first made it.
    pub committed_at: Micros,
    /// When the change entered the cache (for such an ADDED event, as
    /// `committed_at`).
    pub cached_at: Micros,
    line: OnceLock<Bytes>,
}

impl CachedEvent {
    /// An event; its wire form is made on first use of [`CachedEvent::line`].
    #[allow(
        clippy::too_many_arguments,
        reason = "one per field, named at every call"
    )]
    pub fn new(
        event_type: EventType,
        key: String,
        revision: Revision,
        object: Arc<Value>,
        size: usize,
        prev: Option<Arc<Value>>,
        committed_at: Micros,
        cached_at: Micros,
    ) -> Self {
        CachedEvent {
            event_type,
            key,
            revision,
            object,
            size,
            prev,
            committed_at,
            cached_at,
            line: OnceLock::new(),
        }
    }

    /// The event as one line of a Kubernetes watch stream,
    /// `{"type":"ADDED","object":{..}}` and a newline, serialized once and
    /// shared by every watcher (cloning [`Bytes`] does not copy).
    pub fn line(&self) -> Bytes {
        self.line
            .get_or_init(|| {
                let object =
                    serde_json::to_string(&*self.object).expect("a JSON value always serializes");
                Bytes::from(format!(
                    "{{\"type\":\"{}\",\"object\":{object}}}\n",
                    self.event_type.as_str()
                ))
            })
            .clone()
    }

    /// The same change seen as another type by a watcher with a selector.
    fn retyped(&self, event_type: EventType, object: Arc<Value>) -> Self {
        CachedEvent::new(
            event_type,
            self.key.clone(),
            self.revision,
            object,
            self.size,
            self.prev.clone(),
            self.committed_at,
            self.cached_at,
        )
    }
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
    /// The message is the apiserver's.
    #[error("too old resource version: {requested} ({oldest})")]
    TooOld {
        requested: Revision,
        oldest: Revision,
    },
}

/// Which events a watcher wants: the apiserver's namespace scope and
/// selection predicate.
#[derive(Debug, Clone, Default)]
pub struct WatchFilter {
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl WatchFilter {
    /// A filter on the namespace only.
    pub fn namespace(namespace: Option<String>) -> Self {
        WatchFilter {
            namespace,
            ..WatchFilter::default()
        }
    }

    /// Whether `obj` is in the watcher's selection.
    pub fn matches(&self, obj: &Value) -> bool {
        self.namespace
            .as_deref()
            .is_none_or(|ns| crate::object::namespace(obj) == Some(ns))
            && self.labels.matches(obj)
            && self.fields.matches(obj)
    }

    /// How `event` looks to this watcher, as the Cacher's
    /// `convertToWatchEvent` decides: a change that brings an object into the
    /// selection is ADDED, one that takes it out is DELETED (carrying its
    /// previous state at the event's revision), and an object outside the
    /// selection before and after is not sent.
    fn view(&self, event: &Arc<CachedEvent>) -> Option<Arc<CachedEvent>> {
        let now = self.matches(&event.object);
        match event.event_type {
            EventType::Modified => {
                let before = event.prev.as_deref().is_some_and(|p| self.matches(p));
                match (before, now) {
                    (true, true) => Some(event.clone()),
                    (false, true) => Some(Arc::new(
                        event.retyped(EventType::Added, event.object.clone()),
                    )),
                    (true, false) => {
                        let mut last = (**event.prev.as_ref()?).clone();
                        crate::object::set_meta(
                            &mut last,
                            "resourceVersion",
                            event.revision.to_string(),
                        );
                        Some(Arc::new(event.retyped(EventType::Deleted, Arc::new(last))))
                    }
                    (false, false) => None,
                }
            }
            _ => now.then(|| event.clone()),
        }
    }
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
    filter: WatchFilter,
    /// Events at or below this revision are not sent (a watch from a
    /// revision the cache has not reached yet waits for it).
    after: Revision,
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

/// A current object as the cache holds it.
struct Current {
    object: Arc<Value>,
    size: usize,
    /// Its ADDED event for watches from "now", made on first use.
    added: OnceLock<Arc<CachedEvent>>,
}

impl Current {
    fn new(object: Arc<Value>, size: usize) -> Self {
        Current {
            object,
            size,
            added: OnceLock::new(),
        }
    }

    /// The object's ADDED event, shared by every watch from "now" until the
    /// object changes; `fallback` is its revision when the object names none.
    fn added(&self, key: &str, fallback: Revision, now: Micros) -> Arc<CachedEvent> {
        self.added
            .get_or_init(|| {
                let revision = crate::object::resource_version(&self.object)
                    .and_then(|rv| rv.parse().ok())
                    .unwrap_or(fallback);
                Arc::new(CachedEvent::new(
                    EventType::Added,
                    key.to_string(),
                    revision,
                    self.object.clone(),
                    self.size,
                    None,
                    now,
                    now,
                ))
            })
            .clone()
    }
}

/// The Cacher of one resource type.
pub struct WatchCache {
    resource: ResourceType,
    ring: VecDeque<Arc<CachedEvent>>,
    /// The weights of the ring's objects, summed.
    ring_bytes: usize,
    capacity: usize,
    bounds: WindowBounds,
    /// The ring holds every change after this revision.
    window_start: Revision,
    /// Latest store revision the cache has seen.
    revision: Revision,
    objects: BTreeMap<String, Current>,
    watchers: Vec<Watcher>,
    next_watcher_id: WatcherId,
    closed_slow: u64,
    recently_closed: VecDeque<ClosedWatcher>,
    clock: Clock,
}

impl WatchCache {
    /// A cache primed with the store's current objects at `revision`, whose
    /// window holds `capacity` events and never resizes.
    pub fn new(
        resource: ResourceType,
        capacity: usize,
        objects: impl IntoIterator<Item = (String, Arc<Value>)>,
        revision: Revision,
        clock: Clock,
    ) -> Self {
        Self::with_window(
            resource,
            WindowBounds::fixed(capacity),
            objects,
            revision,
            clock,
        )
    }

    /// A cache whose window starts at `bounds.min` events and resizes within
    /// `bounds` (see the module doc).
    pub fn with_window(
        resource: ResourceType,
        bounds: WindowBounds,
        objects: impl IntoIterator<Item = (String, Arc<Value>)>,
        revision: Revision,
        clock: Clock,
    ) -> Self {
        let min = bounds.min.max(1);
        let bounds = WindowBounds {
            min,
            max: bounds.max.max(min),
            max_bytes: bounds.max_bytes,
        };
        WatchCache {
            resource,
            ring: VecDeque::with_capacity(min),
            ring_bytes: 0,
            capacity: min,
            bounds,
            window_start: revision,
            revision,
            objects: objects
                .into_iter()
                .map(|(key, object)| {
                    let size = crate::object::weight(&object);
                    (key, Current::new(object, size))
                })
                .collect(),
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

    /// The window holds every change after this revision; a watch from an
    /// older one is too old.
    pub fn window_start(&self) -> Revision {
        self.window_start
    }

    /// Events the window holds at most, now.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Events in the window.
    pub fn len(&self) -> usize {
        self.ring.len()
    }

    /// Whether the window is empty.
    pub fn is_empty(&self) -> bool {
        self.ring.is_empty()
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
    /// the ring (resizing it, or evicting the oldest when full) and dispatches
    /// to every watcher.
    pub fn apply(&mut self, change: &StoreEvent) -> Dispatched {
        self.revision = self.revision.max(change.revision);
        let event_type = match change.change {
            Change::Put { created: true } => EventType::Added,
            Change::Put { created: false } => EventType::Modified,
            Change::Delete => EventType::Deleted,
        };
        match event_type {
            EventType::Deleted => {
                self.objects.remove(&change.key);
            }
            _ => {
                self.objects.insert(
                    change.key.clone(),
                    Current::new(change.object.clone(), change.size),
                );
            }
        };
        let now = self.clock.now();
        let event = Arc::new(CachedEvent::new(
            event_type,
            change.key.clone(),
            change.revision,
            change.object.clone(),
            change.size,
            change.prev.clone(),
            change.committed_at,
            now,
        ));
        self.resize(now);
        while self.ring.len() >= self.capacity
            || (!self.ring.is_empty()
                && self.ring_bytes.saturating_add(event.size) > self.bounds.max_bytes)
        {
            self.evict_oldest();
        }
        self.ring_bytes = self.ring_bytes.saturating_add(event.size);
        self.ring.push_back(event.clone());
        self.dispatch(event)
    }

    /// Notes that the store moved on without touching this type, so a later
    /// watch from that revision is served from the window.
    pub fn advance(&mut self, revision: Revision) {
        self.revision = self.revision.max(revision);
    }

    /// Drops the window's events at or below `revision`, so that no watch is
    /// served from a revision the store has compacted.
    pub fn compact(&mut self, revision: Revision) {
        while self.ring.front().is_some_and(|e| e.revision <= revision) {
            self.evict_oldest();
        }
        self.window_start = self.window_start.max(revision.min(self.revision));
    }

    /// The current objects and the revision they are consistent with.
    pub fn list(&self) -> (Vec<Arc<Value>>, Revision) {
        (
            self.objects.values().map(|c| c.object.clone()).collect(),
            self.revision,
        )
    }

    /// The weights of the window's objects, summed.
    pub fn window_bytes(&self) -> usize {
        self.ring_bytes
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
        self.watch_filtered(name, from, WatchFilter::namespace(namespace), buffer)
    }

    /// [`WatchCache::watch_named`] with a selection: the watcher is sent only
    /// the events of objects in `filter`, retyped as the filter sees them (see
    /// [`WatchFilter`]). A revision newer than the cache's is waited for: the
    /// watcher gets the events after it, none before.
    pub fn watch_filtered(
        &mut self,
        name: &str,
        from: Option<Revision>,
        filter: WatchFilter,
        buffer: usize,
    ) -> Result<(WatcherId, mpsc::Receiver<Delivery>), WatchError> {
        let (backlog, after): (Vec<Arc<CachedEvent>>, Revision) = match from.filter(|&r| r > 0) {
            None => {
                let now = self.clock.now();
                (
                    self.objects
                        .iter()
                        .filter(|(_, current)| filter.matches(&current.object))
                        .map(|(key, current)| current.added(key, self.revision, now))
                        .collect(),
                    self.revision,
                )
            }
            Some(from) if from < self.window_start => {
                return Err(WatchError::TooOld {
                    requested: from,
                    oldest: self.window_start,
                });
            }
            Some(from) => (
                self.ring
                    .iter()
                    .filter(|e| e.revision > from)
                    .filter_map(|e| filter.view(e))
                    .collect(),
                from,
            ),
        };
        let (tx, rx) = mpsc::channel(backlog.len() + buffer.max(1));
        let now = self.clock.now();
        for event in backlog {
            let _ = tx.try_send(Delivery {
                event,
                dispatched_at: now,
            });
        }
        let id = self.next_watcher_id;
        self.next_watcher_id += 1;
        self.watchers.push(Watcher {
            id,
            name: name.to_string(),
            tx,
            filter,
            after,
        });
        Ok((id, rx))
    }

    /// Closes every watch; clients re-watch from their last resourceVersion.
    pub fn drop_watchers(&mut self) {
        self.watchers.clear();
    }

    /// Resizes a full window before an event is added (see the module doc).
    fn resize(&mut self, now: Micros) {
        if self.ring.len() < self.capacity {
            return;
        }
        let age = |e: &Arc<CachedEvent>| now.saturating_sub(e.cached_at);
        if self
            .ring
            .front()
            .is_some_and(|e| age(e) < EVENT_FRESH_MICROS)
        {
            self.capacity = (self.capacity * 2).min(self.bounds.max);
            return;
        }
        let recent_quarter = self.ring.len() - (self.capacity / 4).max(1);
        if self
            .ring
            .get(recent_quarter)
            .is_some_and(|e| age(e) > EVENT_FRESH_MICROS)
        {
            self.capacity = (self.capacity / 2).max(self.bounds.min);
        }
    }

    fn evict_oldest(&mut self) {
        if let Some(evicted) = self.ring.pop_front() {
            self.ring_bytes = self.ring_bytes.saturating_sub(evicted.size);
            self.window_start = self.window_start.max(evicted.revision);
        }
    }

    fn dispatch(&mut self, event: Arc<CachedEvent>) -> Dispatched {
        let now = self.clock.now();
        let mut delivered = 0;
        let mut slow = Vec::new();
        // A watcher that cannot take the event is closed, never waited for.
        self.watchers.retain(|w| {
            let view = if event.revision <= w.after {
                None
            } else {
                w.filter.view(&event)
            };
            let Some(view) = view else {
                return !w.tx.is_closed();
            };
            let delivery = Delivery {
                event: view,
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
        assert_eq!(
            cache.watch(Some(1), None, 1).unwrap_err().to_string(),
            "too old resource version: 1 (2)"
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

    #[test]
    fn a_selector_turns_entering_and_leaving_into_added_and_deleted() {
        let (mut store, mut cache) = setup(10);
        let filter = WatchFilter {
            labels: LabelSelector::parse("app=web").unwrap(),
            ..WatchFilter::default()
        };
        let (_, mut rx) = cache.watch_filtered("", Some(1), filter, 10).unwrap();
        let labelled = |app: &str| json!({"metadata": {"namespace": "d", "name": "a", "labels": {"app": app}}});
        cache.apply(&store.create("a", labelled("db")).unwrap());
        cache.apply(&store.update("a", labelled("web"), None).unwrap());
        cache.apply(&store.update("a", labelled("web"), None).unwrap());
        cache.apply(&store.update("a", labelled("db"), None).unwrap());
        let seen: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|d| {
                let e = &d.event;
                (
                    e.event_type,
                    e.revision,
                    e.object["metadata"]["labels"]["app"].clone(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                (EventType::Added, 3, json!("web")),
                (EventType::Modified, 4, json!("web")),
                // The last state in the selection, at the revision that took it out.
                (EventType::Deleted, 5, json!("web")),
            ]
        );
    }

    #[test]
    fn the_window_doubles_under_a_burst_and_halves_when_idle() {
        let now = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let clock = {
            let now = now.clone();
            Clock::new(move || now.load(std::sync::atomic::Ordering::Relaxed))
        };
        let mut store = Store::new(clock.clone());
        let bounds = WindowBounds {
            min: 4,
            max: 16,
            max_bytes: usize::MAX,
        };
        let mut cache = WatchCache::with_window(PODS, bounds, [], store.revision(), clock);
        for i in 0..20 {
            let name = format!("p{i}");
            cache.apply(&store.create(&name, pod("d", &name)).unwrap());
        }
        // A burst (every event fresh): 4 -> 8 -> 16, then capped.
        assert_eq!((cache.capacity(), cache.len()), (16, 16));
        assert_eq!(cache.window_start(), 5);
        now.store(EVENT_FRESH_MICROS * 2, std::sync::atomic::Ordering::Relaxed);
        cache.apply(&store.create("late", pod("d", "late")).unwrap());
        // Idle: even the newest quarter was stale, so the window halved.
        assert_eq!((cache.capacity(), cache.len()), (8, 8));
        assert!(matches!(
            cache.watch(Some(5), None, 1),
            Err(WatchError::TooOld { .. })
        ));
    }

    #[test]
    fn compaction_trims_the_window() {
        let (mut store, mut cache) = setup(10);
        for name in ["a", "b", "c"] {
            cache.apply(&store.create(name, pod("default", name)).unwrap());
        }
        cache.compact(3);
        assert_eq!(cache.len(), 1);
        assert_eq!(
            cache.watch(Some(2), None, 1).unwrap_err(),
            WatchError::TooOld {
                requested: 2,
                oldest: 3
            }
        );
        assert!(cache.watch(Some(3), None, 1).is_ok());
    }

    #[test]
    fn a_future_revision_is_waited_for() {
        let (mut store, mut cache) = setup(10);
        let mut rx = cache.watch(Some(3), None, 10).unwrap();
        for name in ["a", "b", "c"] {
            cache.apply(&store.create(name, pod("default", name)).unwrap());
        }
        let revisions: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|d| d.event.revision)
            .collect();
        assert_eq!(revisions, vec![4]);
    }

    #[test]
    fn an_event_is_serialized_once_as_a_watch_line() {
        let (mut store, mut cache) = setup(10);
        let mut rx1 = cache.watch(Some(1), None, 10).unwrap();
        let mut rx2 = cache.watch(Some(1), None, 10).unwrap();
        cache.apply(&store.create("a", pod("default", "a")).unwrap());
        let (a, b) = (rx1.try_recv().unwrap(), rx2.try_recv().unwrap());
        let line = a.event.line();
        assert_eq!(line.as_ptr(), b.event.line().as_ptr());
        let parsed: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(parsed["type"], "ADDED");
        assert_eq!(parsed["object"]["metadata"]["resourceVersion"], "2");
        assert!(line.ends_with(b"\n"));
    }
}
