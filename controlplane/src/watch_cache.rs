//! The watch cache of one resource type, modelled on the apiserver's
//! `watchCache`: a sliding window (a ring) of recent events and a snapshot of
//! the current objects that serves lists.
//!
//! It is one stage of the Cacher ([`crate::cacher`]): the Cacher's Reflector
//! feeds it from the store's watch ([`WatchCache::process`]), and what it
//! holds is what a new watch replays ([`WatchCache::since`]). Handing events
//! to watchers is the dispatcher's job, not the cache's.
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
//! sent to ([`CachedEvent::line`]). So is the synthetic ADDED event of each
//! current object that a watch from "any" starts with: it is made once and
//! shared by every such watch, which then costs a pointer per object.

use crate::clock::Clock;
use crate::resource::ResourceType;
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::{Change, Revision, StoreEvent};
use bytes::Bytes;
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, OnceLock};
use watchlife_protocol::{EventType, Micros};

/// The annotation of the BOOKMARK that ends a WatchList's initial events
/// (`metav1.InitialEventsAnnotationKey`).
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";

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

/// When a change passed the server's stages before any watcher: measured,
/// each stamped by the stage itself as it happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangeTimes {
    /// When the store committed it.
    pub committed_at: Micros,
    /// When the Cacher's Reflector read it from the store's watch.
    pub reflected_at: Micros,
    /// When it entered the watch cache's window (and, right after, the
    /// `incoming` queue).
    pub cached_at: Micros,
    /// Events in `incoming` once it was queued, itself included.
    pub incoming_depth: u32,
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
    /// The stage times of the change; `None` for a synthetic ADDED event
    /// made for a watch from "any": it is no change, and nothing about it was
    /// committed or cached at a time worth showing.
    pub times: Option<ChangeTimes>,
    /// When the dispatcher took it from `incoming`, once it has.
    dispatched_at: OnceLock<Micros>,
    line: OnceLock<Bytes>,
}

impl CachedEvent {
    /// An event; its wire form is made on first use of [`CachedEvent::line`].
    pub fn new(
        event_type: EventType,
        key: String,
        revision: Revision,
        object: Arc<Value>,
        size: usize,
        prev: Option<Arc<Value>>,
        times: Option<ChangeTimes>,
    ) -> Self {
        CachedEvent {
            event_type,
            key,
            revision,
            object,
            size,
            prev,
            times,
            dispatched_at: OnceLock::new(),
            line: OnceLock::new(),
        }
    }

    /// A BOOKMARK at `revision`: an object of the watched kind that carries
    /// only its resourceVersion, as the apiserver sends it.
    pub fn bookmark(rt: ResourceType, revision: Revision) -> Self {
        let metadata = serde_json::json!({"resourceVersion": revision.to_string()});
        CachedEvent::bookmark_with_metadata(rt, revision, metadata)
    }

    /// The BOOKMARK that ends a WatchList's initial events: at `revision`,
    /// its object annotated [`INITIAL_EVENTS_END_ANNOTATION`]` = "true"`, as
    /// `cacheWatcher.convertToWatchEvent` marks it (v0.36.4
    /// `cache_watcher.go`).
    pub fn initial_events_end(rt: ResourceType, revision: Revision) -> Self {
        let metadata = serde_json::json!({
            "resourceVersion": revision.to_string(),
            "annotations": {INITIAL_EVENTS_END_ANNOTATION: "true"},
        });
        CachedEvent::bookmark_with_metadata(rt, revision, metadata)
    }

    /// A BOOKMARK at `revision` whose object is of the watched kind and has
    /// only `metadata`: no store key, no weight, no previous state and no
    /// stage times (a bookmark is no change).
    fn bookmark_with_metadata(rt: ResourceType, revision: Revision, metadata: Value) -> Self {
        let object = serde_json::json!({
            "kind": rt.kind,
            "apiVersion": rt.api_version(),
            "metadata": metadata,
        });
        CachedEvent::new(
            EventType::Bookmark,
            String::new(),
            revision,
            Arc::new(object),
            0,
            None,
            None,
        )
    }

    /// When the dispatcher took the event from `incoming`; `None` before it
    /// has, and for events that never pass it (synthetic, bookmarks).
    pub fn dispatched_at(&self) -> Option<Micros> {
        self.dispatched_at.get().copied()
    }

    /// Stamps the dispatch; only the first stamp counts.
    pub(crate) fn mark_dispatched(&self, at: Micros) {
        let _ = self.dispatched_at.set(at);
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
        let retyped = CachedEvent::new(
            event_type,
            self.key.clone(),
            self.revision,
            object,
            self.size,
            self.prev.clone(),
            self.times,
        );
        if let Some(at) = self.dispatched_at() {
            retyped.mark_dispatched(at);
        }
        retyped
    }
}

/// How a watcher came to be sent an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Dispatched live, from `incoming`, as the change happened.
    Live,
    /// Replayed from the window to a watch that started from an older
    /// resourceVersion.
    Replayed,
    /// A synthetic ADDED event for a current object, sent to a watch from
    /// "any" (resourceVersion 0 or none).
    Synthetic,
    /// A BOOKMARK.
    Bookmark,
}

/// One event handed to one watcher: put in its buffer, waiting for its
/// writer.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub event: Arc<CachedEvent>,
    pub origin: Origin,
    /// When it was put in this watcher's buffer.
    pub buffered_at: Micros,
    /// Events in the buffer once it was put there, itself included.
    pub buffer_depth: u32,
}

/// What a new watch starts with: each event and how it comes to be sent.
pub type Backlog = Vec<(Arc<CachedEvent>, Origin)>;

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
    /// The Cacher is (re)initializing: it has not been ready for
    /// `downtime` µs (see [`crate::cacher::ready`]).
    #[error("{}", crate::cacher::ready::NOT_READY_MESSAGE)]
    NotReady { downtime: Micros },
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
    pub(crate) fn view(&self, event: &Arc<CachedEvent>) -> Option<Arc<CachedEvent>> {
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

/// A current object as the cache holds it.
struct Current {
    object: Arc<Value>,
    size: usize,
    /// Its synthetic ADDED event for watches from "any", made on first use.
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

    /// The object's synthetic ADDED event, shared by every watch from "any"
    /// until the object changes; `fallback` is its revision when the object
    /// names none.
    fn added(&self, key: &str, fallback: Revision) -> Arc<CachedEvent> {
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
                    None,
                ))
            })
            .clone()
    }
}

/// The watch cache of one resource type.
pub struct WatchCache {
    resource: ResourceType,
    ring: VecDeque<Arc<CachedEvent>>,
    /// The weights of the ring's objects, summed.
    ring_bytes: usize,
    capacity: usize,
    bounds: WindowBounds,
    /// The ring holds every change after this revision.
    window_start: Revision,
    /// The revision of the last LIST that replaced the cache.
    list_revision: Revision,
    /// Whether an event has left the ring since that LIST
    /// (`removedEventSinceRelist`).
    removed_since_relist: bool,
    /// The store's compaction the window was trimmed to (the demo's tie of
    /// the two, see [`WatchCache::compact`]).
    compacted: Revision,
    /// Latest store revision the cache has seen.
    revision: Revision,
    objects: BTreeMap<String, Current>,
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
        let mut cache = WatchCache {
            resource,
            ring: VecDeque::with_capacity(min),
            ring_bytes: 0,
            capacity: min,
            bounds,
            window_start: revision,
            list_revision: revision,
            removed_since_relist: false,
            compacted: 0,
            revision,
            objects: BTreeMap::new(),
            clock,
        };
        cache.replace(objects, revision);
        cache
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

    /// Current objects held.
    pub fn object_count(&self) -> usize {
        self.objects.len()
    }

    /// Replaces the snapshot with a LIST's result at `revision`, as the
    /// apiserver's `watchCache.Replace`: the window restarts empty at that
    /// revision, so a watch from before it is too old.
    pub fn replace(
        &mut self,
        objects: impl IntoIterator<Item = (String, Arc<Value>)>,
        revision: Revision,
    ) {
        self.objects = objects
            .into_iter()
            .map(|(key, object)| {
                let size = crate::object::weight(&object);
                (key, Current::new(object, size))
            })
            .collect();
        self.ring.clear();
        self.ring_bytes = 0;
        self.window_start = revision;
        self.list_revision = revision;
        self.removed_since_relist = false;
        self.revision = revision;
    }

    /// Takes one change from the store's watch: updates the snapshot and
    /// appends to the ring (resizing it, or evicting the oldest when full).
    /// `reflected_at` is when the Cacher's Reflector read it; `incoming_depth`
    /// what `incoming` will hold once the event is queued there.
    pub fn process(
        &mut self,
        change: &StoreEvent,
        reflected_at: Micros,
        incoming_depth: u32,
    ) -> Arc<CachedEvent> {
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
        let now = self.clock.now().max(reflected_at);
        let event = Arc::new(CachedEvent::new(
            event_type,
            change.key.clone(),
            change.revision,
            change.object.clone(),
            change.size,
            change.prev.clone(),
            Some(ChangeTimes {
                committed_at: change.committed_at,
                reflected_at,
                cached_at: now,
                incoming_depth,
            }),
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
        event
    }

    /// Notes that the store moved on without touching this type (what etcd's
    /// progress notification tells the Cacher), so a later watch from that
    /// revision is served from the window.
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
        self.compacted = self.compacted.max(revision.min(self.revision));
    }

    /// The oldest resourceVersion a watch may start from; below it a watch
    /// is too old. As `getAllEventsSinceLocked` (`watch_cache.go`, v1.20.2
    /// `GetAllEventsSinceThreadUnsafe` and v0.36.4): with nothing removed
    /// from the ring since the last LIST, the LIST's revision; else one
    /// below the oldest event held (`resourceVersion < oldest-1` is too
    /// old), even when the revisions between were another type's. Never
    /// below the store's compaction (the demo's tie).
    pub fn oldest_watchable(&self) -> Revision {
        let apiserver = if !self.removed_since_relist {
            self.list_revision
        } else {
            // A ring emptied by the demo's compaction: the window's start.
            self.ring
                .front()
                .map_or(self.window_start, |e| e.revision.saturating_sub(1))
        };
        apiserver.max(self.compacted)
    }

    /// The current objects and the revision they are consistent with.
    pub fn list(&self) -> (Vec<Arc<Value>>, Revision) {
        (
            self.objects.values().map(|c| c.object.clone()).collect(),
            self.revision,
        )
    }

    /// The current objects under `prefix` with their store keys, in key
    /// order.
    pub fn entries(&self, prefix: &str) -> Vec<(String, Arc<Value>)> {
        self.objects
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, c)| (k.clone(), c.object.clone()))
            .collect()
    }

    /// The oldest revision the cache still has a snapshot of. The v0.36.4
    /// watch cache keeps one per event and one at its LIST
    /// (`w.snapshots.Add`), drops those older than the oldest event once the
    /// ring is full (`RemoveLess(oldestRV)`) and those the store compacted
    /// (`watchCache.Compact`).
    pub fn snapshot_floor(&self) -> Revision {
        let kept = if !self.removed_since_relist {
            self.list_revision
        } else {
            self.ring.front().map_or(self.revision, |e| e.revision)
        };
        kept.max(self.compacted)
    }

    /// The objects under `prefix` as they were at `revision`, in key order,
    /// while the cache has a snapshot at or below it
    /// (`snapshots.GetLessOrEqual`, `waitAndListExactRV`, v0.36.4
    /// `watch_cache.go`); `None` when `revision` is older than
    /// [`WatchCache::snapshot_floor`] or newer than the cache.
    ///
    /// The demo keeps no copies: it undoes, newest first, the ring's events
    /// after `revision` on the current objects, which gives the same state.
    pub fn snapshot_at(
        &self,
        prefix: &str,
        revision: Revision,
    ) -> Option<Vec<(String, Arc<Value>)>> {
        if revision < self.snapshot_floor() || revision > self.revision {
            return None;
        }
        let mut state: BTreeMap<String, Arc<Value>> = self.entries(prefix).into_iter().collect();
        for event in self.ring.iter().rev().take_while(|e| e.revision > revision) {
            if !event.key.starts_with(prefix) {
                continue;
            }
            match event.event_type {
                EventType::Added => {
                    state.remove(&event.key);
                }
                EventType::Modified => {
                    if let Some(prev) = &event.prev {
                        state.insert(event.key.clone(), prev.clone());
                    }
                }
                EventType::Deleted => {
                    let before = event.prev.as_ref().unwrap_or(&event.object);
                    state.insert(event.key.clone(), before.clone());
                }
                _ => {}
            }
        }
        Some(state.into_iter().collect())
    }

    /// The weights of the window's objects, summed.
    pub fn window_bytes(&self) -> usize {
        self.ring_bytes
    }

    /// What a new watch from `from` starts with, as the apiserver's
    /// `GetAllEventsSinceThreadUnsafe`, and the revision after which it is
    /// sent live events.
    ///
    /// `None` (or 0) means "any": a synthetic ADDED event for every current
    /// object in `filter`, then the events after the cache's revision. A
    /// revision older than the window fails with [`WatchError::TooOld`]; a
    /// newer one is waited for (nothing replayed).
    pub fn since(
        &self,
        from: Option<Revision>,
        filter: &WatchFilter,
    ) -> Result<(Backlog, Revision), WatchError> {
        match from.filter(|&r| r > 0) {
            None => Ok((
                self.objects
                    .iter()
                    .filter(|(_, current)| filter.matches(&current.object))
                    .map(|(key, current)| (current.added(key, self.revision), Origin::Synthetic))
                    .collect(),
                self.revision,
            )),
            Some(from) if from < self.oldest_watchable() => Err(WatchError::TooOld {
                requested: from,
                oldest: self.oldest_watchable(),
            }),
            Some(from) => {
                let replayed: Vec<_> = self
                    .ring
                    .iter()
                    .filter(|e| e.revision > from)
                    .filter_map(|e| filter.view(e))
                    .map(|e| (e, Origin::Replayed))
                    .collect();
                let after = replayed.last().map_or(from, |(e, _)| e.revision.max(from));
                Ok((replayed, after))
            }
        }
    }

    /// Resizes a full window before an event is added (see the module doc).
    fn resize(&mut self, now: Micros) {
        if self.ring.len() < self.capacity {
            return;
        }
        let age = |e: &Arc<CachedEvent>| now.saturating_sub(e.times.map_or(now, |t| t.cached_at));
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
            self.removed_since_relist = true;
            self.ring_bytes = self.ring_bytes.saturating_sub(evicted.size);
            self.window_start = self.window_start.max(evicted.revision);
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

    fn add(cache: &mut WatchCache, change: StoreEvent) -> Arc<CachedEvent> {
        cache.process(&change, 0, 1)
    }

    /// Creates a pod named each of `names`, in order, and feeds the cache
    /// each creation.
    fn create_pods(store: &mut Store, cache: &mut WatchCache, names: &[&str]) {
        for &name in names {
            add(cache, store.create(name, pod("default", name)).unwrap());
        }
    }

    /// Asserts that a watch from `too_old` fails with `message` and that one
    /// from the next revision starts.
    fn assert_too_old_up_to(cache: &WatchCache, too_old: Revision, message: &str) {
        let all = WatchFilter::default();
        assert_eq!(
            cache.since(Some(too_old), &all).unwrap_err().to_string(),
            message
        );
        assert!(cache.since(Some(too_old + 1), &all).is_ok());
    }

    fn replay(
        cache: &WatchCache,
        from: Option<Revision>,
        filter: &WatchFilter,
    ) -> Vec<(EventType, Revision, Origin)> {
        let (events, _) = cache.since(from, filter).unwrap();
        events
            .into_iter()
            .map(|(e, o)| (e.event_type, e.revision, o))
            .collect()
    }

    #[test]
    fn a_watch_from_a_revision_replays_the_window_after_it() {
        let (mut store, mut cache) = setup(10);
        add(&mut cache, store.create("a", pod("default", "a")).unwrap());
        let after_a = store.revision();
        add(
            &mut cache,
            store.update("a", pod("default", "a"), None).unwrap(),
        );
        add(&mut cache, store.delete("a", None).unwrap());
        assert_eq!(
            replay(&cache, Some(after_a), &WatchFilter::default()),
            vec![
                (EventType::Modified, 3, Origin::Replayed),
                (EventType::Deleted, 4, Origin::Replayed)
            ]
        );
        let (_, after) = cache.since(Some(after_a), &WatchFilter::default()).unwrap();
        assert_eq!(after, 4, "live events start after the last replayed");
    }

    #[test]
    fn a_watch_from_any_starts_with_synthetic_added_events_without_times() {
        let (mut store, mut cache) = setup(10);
        add(&mut cache, store.create("a", pod("default", "a")).unwrap());
        add(
            &mut cache,
            store.update("a", pod("default", "a"), None).unwrap(),
        );
        let (events, after) = cache.since(None, &WatchFilter::default()).unwrap();
        assert_eq!(events.len(), 1);
        let (event, origin) = &events[0];
        assert_eq!(
            (event.event_type, event.revision, *origin),
            (EventType::Added, 3, Origin::Synthetic)
        );
        assert!(event.times.is_none(), "no invented commit time");
        assert_eq!(after, 3);
    }

    #[test]
    fn revision_older_than_the_window_is_too_old() {
        let (mut store, mut cache) = setup(2);
        create_pods(&mut store, &mut cache, &["a", "b", "c"]);
        let all = WatchFilter::default();
        assert_eq!(
            cache.since(Some(1), &all).unwrap_err(),
            WatchError::TooOld {
                requested: 1,
                oldest: 2
            }
        );
        assert_too_old_up_to(&cache, 1, "too old resource version: 1 (2)");
    }

    #[test]
    fn too_old_is_below_one_less_than_the_oldest_event_held() {
        // getAllEventsSinceLocked: `resourceVersion < oldest-1` is too old,
        // whatever type the revisions between were.
        let (mut store, mut cache) = setup(2);
        add(&mut cache, store.create("a", pod("default", "a")).unwrap());
        store.create("other", pod("default", "x")).unwrap();
        add(&mut cache, store.create("b", pod("default", "b")).unwrap());
        add(&mut cache, store.create("c", pod("default", "c")).unwrap());
        // a (2) left the ring; the oldest held is b (4).
        assert_too_old_up_to(&cache, 2, "too old resource version: 2 (3)");
    }

    #[test]
    fn a_snapshot_is_the_state_at_a_revision_while_the_window_reaches_it() {
        let (mut store, mut cache) = setup(3);
        add(
            &mut cache,
            store.create("/p/a", pod("default", "a")).unwrap(),
        );
        let after_a = store.revision();
        add(
            &mut cache,
            store.create("/p/b", pod("default", "b")).unwrap(),
        );
        add(
            &mut cache,
            store.update("/p/a", pod("default", "a2"), None).unwrap(),
        );
        add(&mut cache, store.delete("/p/b", None).unwrap());
        let names = |entries: Vec<(String, Arc<Value>)>| -> Vec<String> {
            entries
                .iter()
                .map(|(_, o)| o["metadata"]["name"].as_str().unwrap().to_string())
                .collect()
        };
        // a (2) left the ring: snapshots from b (3) on.
        assert_eq!(cache.snapshot_floor(), after_a + 1);
        assert_eq!(cache.snapshot_at("/p/", after_a), None);
        assert_eq!(
            names(cache.snapshot_at("/p/", after_a + 1).unwrap()),
            ["a", "b"]
        );
        assert_eq!(
            names(cache.snapshot_at("/p/", after_a + 2).unwrap()),
            ["a2", "b"]
        );
        assert_eq!(
            names(cache.snapshot_at("/p/", cache.revision()).unwrap()),
            ["a2"]
        );
        assert_eq!(cache.snapshot_at("/p/", cache.revision() + 1), None);
    }

    #[test]
    fn a_selector_turns_entering_and_leaving_into_added_and_deleted() {
        let (mut store, mut cache) = setup(10);
        let filter = WatchFilter {
            labels: LabelSelector::parse("app=web").unwrap(),
            ..WatchFilter::default()
        };
        let labelled = |app: &str| json!({"metadata": {"namespace": "d", "name": "a", "labels": {"app": app}}});
        add(&mut cache, store.create("a", labelled("db")).unwrap());
        add(
            &mut cache,
            store.update("a", labelled("web"), None).unwrap(),
        );
        add(
            &mut cache,
            store.update("a", labelled("web"), None).unwrap(),
        );
        add(&mut cache, store.update("a", labelled("db"), None).unwrap());
        let (events, _) = cache.since(Some(1), &filter).unwrap();
        let seen: Vec<_> = events
            .iter()
            .map(|(e, _)| {
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
            add(&mut cache, store.create(&name, pod("d", &name)).unwrap());
        }
        // A burst (every event fresh): 4 -> 8 -> 16, then capped.
        assert_eq!((cache.capacity(), cache.len()), (16, 16));
        assert_eq!(cache.window_start(), 5);
        now.store(EVENT_FRESH_MICROS * 2, std::sync::atomic::Ordering::Relaxed);
        add(&mut cache, store.create("late", pod("d", "late")).unwrap());
        // Idle: even the newest quarter was stale, so the window halved.
        assert_eq!((cache.capacity(), cache.len()), (8, 8));
        assert!(matches!(
            cache.since(Some(5), &WatchFilter::default()),
            Err(WatchError::TooOld { .. })
        ));
    }

    #[test]
    fn compaction_trims_the_window_and_a_list_restarts_it() {
        let (mut store, mut cache) = setup(10);
        create_pods(&mut store, &mut cache, &["a", "b", "c"]);
        cache.compact(3);
        assert_eq!(cache.len(), 1);
        let all = WatchFilter::default();
        assert!(cache.since(Some(2), &all).is_err());
        assert!(cache.since(Some(3), &all).is_ok());
        cache.replace([("x".to_string(), Arc::new(pod("default", "x")))], 9);
        assert_eq!(
            (cache.len(), cache.revision(), cache.object_count()),
            (0, 9, 1)
        );
        assert!(cache.since(Some(4), &all).is_err());
    }

    #[test]
    fn each_change_carries_its_stage_times() {
        let (mut store, mut cache) = setup(10);
        let change = store.create("a", pod("default", "a")).unwrap();
        let event = cache.process(&change, 5, 3);
        let times = event.times.unwrap();
        assert_eq!(
            (times.committed_at, times.reflected_at, times.incoming_depth),
            (0, 5, 3)
        );
        assert!(times.cached_at >= times.reflected_at);
        assert_eq!(event.dispatched_at(), None);
        event.mark_dispatched(9);
        event.mark_dispatched(10);
        assert_eq!(event.dispatched_at(), Some(9), "the first stamp counts");
    }

    #[test]
    fn an_event_is_serialized_once_as_a_watch_line() {
        let (mut store, mut cache) = setup(10);
        let event = add(&mut cache, store.create("a", pod("default", "a")).unwrap());
        let line = event.line();
        assert_eq!(line.as_ptr(), event.line().as_ptr());
        let parsed: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(parsed["type"], "ADDED");
        assert_eq!(parsed["object"]["metadata"]["resourceVersion"], "2");
        assert!(line.ends_with(b"\n"));
        let bookmark: serde_json::Value =
            serde_json::from_slice(&CachedEvent::bookmark(PODS, 7).line()).unwrap();
        assert_eq!(bookmark["type"], "BOOKMARK");
        assert_eq!(bookmark["object"]["metadata"]["resourceVersion"], "7");
        assert_eq!(bookmark["object"]["kind"], "Pod");
    }
}
