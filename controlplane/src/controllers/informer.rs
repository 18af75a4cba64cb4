//! The informer of the demo's controllers: the informer crate's one
//! list-watch driver ([`watchlife_informer::list_watch`]) against the control
//! plane in-process, and a shared informer whose single listener is the
//! owning controller.
//!
//! IO-free and pull-driven: [`Informer::poll`] runs the driver until it
//! waits (for the watch to deliver, or for a backoff to end), feeds what it
//! delivered to the shared informer, and returns the notifications; the
//! owning controller hands them to its handlers. A relist after 410 Gone
//! therefore waits client-go's backoff (0.8–1.6 s), as a real controller's.

use super::owner::controller_uid;
use crate::api_error::ApiError;
use crate::cacher::watcher::WatchOptions;
use crate::control_plane::ControlPlane;
use crate::resource::ResourceType;
use crate::watch_cache::{Delivery, WatchFilter};
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::sync::mpsc;
use watchlife_informer::fifo::DeltaType;
use watchlife_informer::indexer::Indexer;
use watchlife_informer::list_watch::{
    self, ListRequest, Listed, ListerWatcher, Page, Sink, Timer, WatchItem, WatchRequest,
    WatchStream,
};
use watchlife_informer::profile::Gate;
use watchlife_informer::reflector::{self, Failure, ReflectorState};
use watchlife_informer::shared_informer::{Kind, QueueModel, SharedInformer};
use watchlife_informer::{EventType, Micros};
use watchlife_protocol::EventType as CacheEventType;

pub use watchlife_informer::object::key_of;

/// The index of objects by the uid of the controller managing them, as
/// client-go's indexer keeps one: a controller asks for its own objects on
/// every sync, and a pass over the whole cache each time would cost as much
/// as the cache is large.
const BY_CONTROLLER: &str = "controller";

/// The time given to the queue: the controllers' informers are not drawn,
/// so nothing of theirs is stamped.
const UNTIMED: Micros = 0;

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

/// Counts a viewer may show of one informer's life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InformerStats {
    /// Lists asked for: LISTs, and (1.36) streaming lists.
    pub lists: u64,
    /// WATCH requests, streaming lists included.
    pub watches: u64,
    pub events: u64,
}

/// A Reflector and its shared informer for one resource.
///
/// Contract, as client-go's shared informer gives it:
/// - Notifications of one object come in the order of its changes, each
///   exactly once, for as long as the watch lasts; over a relist the
///   informer reports the difference (adds for new objects, updates for
///   changed ones, deletions for vanished ones).
/// - The cache is updated before the notification is returned: a handler that
///   reads the cache sees the object at least as new as the notification.
/// - Reads of the cache are as fresh as the last poll, never fresher.
pub struct Informer {
    resource: ResourceType,
    name: String,
    /// The selection the watch asks the server for (namespace, labels,
    /// fields); the list is narrowed to the same.
    filter: WatchFilter,
    /// The rules followed; the control plane's release's until set.
    config: Option<reflector::Config>,
    seed: u64,
    /// What the driver delivered since the last poll.
    feed: Arc<Mutex<Feed>>,
    /// The driver, once the first poll started it.
    driver: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    shared: SharedInformer<(), Arc<Value>>,
    listener: usize,
}

impl std::fmt::Debug for Informer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Informer")
            .field("resource", &self.resource.plural)
            .field("name", &self.name)
            .field("objects", &self.shared.indexer().len())
            .finish()
    }
}

impl Informer {
    /// An informer on every object of `rt`, whose watch the watch cache lists
    /// under `name`, with the rules of the control plane's release (read at
    /// the first poll; see [`Informer::with_config`] for others).
    pub fn new(rt: ResourceType, name: impl Into<String>) -> Self {
        let name = name.into();
        let indexer = Indexer::<Arc<Value>>::default().with_index(BY_CONTROLLER, |o| {
            controller_uid(o).map(String::from).into_iter().collect()
        });
        let mut shared = SharedInformer::with_queue(indexer, QueueModel::default());
        let listener = shared.add_listener(name.clone(), false);
        // Jitter that differs between informers, and is the same every run.
        let seed = name.bytes().fold(rt.plural.len() as u64, |h, b| {
            h.wrapping_mul(31).wrapping_add(b as u64)
        });
        Informer {
            resource: rt,
            name,
            filter: WatchFilter::default(),
            config: None,
            seed,
            feed: Arc::default(),
            driver: None,
            shared,
            listener,
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

    /// Follows `config`'s rules (its release's Reflector and queue). Only
    /// before the first poll.
    pub fn with_config(mut self, config: reflector::Config) -> Self {
        self.follow(config);
        self
    }

    /// Takes `config`'s rules, and the queue of its release.
    fn follow(&mut self, config: reflector::Config) {
        let indexer = Indexer::<Arc<Value>>::default().with_index(BY_CONTROLLER, |o| {
            controller_uid(o).map(String::from).into_iter().collect()
        });
        self.shared = SharedInformer::with_queue(indexer, QueueModel::of(&config.profile));
        self.listener = self.shared.add_listener(self.name.clone(), false);
        self.config = Some(config);
    }

    pub fn resource(&self) -> ResourceType {
        self.resource
    }

    /// True once the first list is in the cache (client-go's `HasSynced`).
    pub fn has_synced(&self) -> bool {
        self.shared.has_synced()
    }

    pub fn stats(&self) -> InformerStats {
        self.lock_feed().stats
    }

    /// The cached object under `key` (`namespace/name`, or `name`).
    pub fn get(&self, key: &str) -> Option<&Arc<Value>> {
        self.shared.indexer().get(key)
    }

    /// Every cached object, in key order.
    pub fn list(&self) -> impl Iterator<Item = &Arc<Value>> {
        let indexer = self.shared.indexer();
        let mut keys: Vec<&str> = indexer.keys().collect();
        keys.sort_unstable();
        keys.into_iter().filter_map(|k| indexer.get(k))
    }

    /// The cached objects whose managing controller has uid `owner`, in key
    /// order.
    pub fn controlled_by<'a>(&'a self, owner: &str) -> impl Iterator<Item = &'a Arc<Value>> {
        self.shared.indexer().by_index(BY_CONTROLLER, owner)
    }

    /// When the informer next has something to do by itself (the end of a
    /// backoff wait), if it is waiting for one.
    pub fn next_wake(&self) -> Option<Micros> {
        self.lock_feed().wake_at
    }

    /// Brings the cache up to date with what the control plane has delivered
    /// and returns what changed: runs the driver until it waits (it lists
    /// first, re-watches when a watch ends, and relists after the backoff
    /// when the watch cache answers 410 Gone).
    pub fn poll(&mut self, cp: &ControlPlane) -> Vec<Notification> {
        if self.config.is_none() {
            self.follow(reflector::Config::for_profile(cp.profile()));
        }
        let config = self.config.clone().unwrap_or_default();
        let driver = self.driver.get_or_insert_with(|| {
            let lw = InProcess {
                cp: cp.clone(),
                resource: self.resource,
                name: self.name.clone(),
                filter: self.filter.clone(),
            };
            let feed = self.feed.clone();
            let seed = self.seed;
            Box::pin(async move {
                let timer = PollTimer {
                    cp: lw.cp.clone(),
                    feed: feed.clone(),
                };
                let mut sink = FeedSink(feed);
                list_watch::run(&lw, &mut sink, &timer, config, seed).await
            })
        });
        // Nothing wakes this future: each poll looks again.
        let _ = driver
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()));
        let fed = std::mem::take(&mut self.lock_feed().items);
        for item in fed {
            match item {
                Fed::Replace(objects) => {
                    self.shared.queue_list(objects, UNTIMED);
                }
                Fed::Resync => {
                    self.shared.queue_resync(UNTIMED);
                }
                Fed::Delta(event_type, object) => self.delta(event_type, object),
            }
        }
        self.notifications()
    }

    /// One watch event, narrowed to the selection: an object that no longer
    /// matches leaves the cache.
    fn delta(&mut self, event_type: EventType, object: Arc<Value>) {
        let kind = match event_type {
            EventType::Deleted => DeltaType::Deleted,
            _ if !self.filter.matches(&object) => {
                if self.get(&key_of(&object)).is_some() {
                    self.shared.queue_delta(DeltaType::Deleted, object);
                }
                return;
            }
            EventType::Added => DeltaType::Added,
            _ => DeltaType::Updated,
        };
        self.shared.queue_delta(kind, object);
    }

    /// HandleDeltas on everything queued; the listener's notifications.
    fn notifications(&mut self) -> Vec<Notification> {
        while self.shared.process_one().is_some() {}
        std::iter::from_fn(|| self.shared.pop(self.listener))
            .filter_map(|n| match n.kind {
                Kind::Add => Some(Notification::Added(n.object)),
                // A relisted object whose resourceVersion did not change:
                // a resync, which these controllers do not take.
                Kind::Update if n.resync => None,
                Kind::Update => Some(Notification::Updated {
                    old: n.old.unwrap_or_else(|| n.object.clone()),
                    new: n.object,
                }),
                Kind::Delete => Some(Notification::Deleted(n.object)),
            })
            .collect()
    }

    fn lock_feed(&self) -> std::sync::MutexGuard<'_, Feed> {
        self.feed.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What the driver delivered, waiting for the next poll.
#[derive(Debug, Default)]
struct Feed {
    items: Vec<Fed>,
    stats: InformerStats,
    /// When the driver's wait ends, while it waits.
    wake_at: Option<Micros>,
}

#[derive(Debug)]
enum Fed {
    Replace(Vec<Arc<Value>>),
    Delta(EventType, Arc<Value>),
    Resync,
}

/// The control plane, listed and watched in-process.
struct InProcess {
    cp: ControlPlane,
    resource: ResourceType,
    name: String,
    filter: WatchFilter,
}

impl ListerWatcher for InProcess {
    type Object = Arc<Value>;
    type Stream<'a> = InProcessWatch;

    /// The whole list at once, at the store's revision (the control plane
    /// pages nothing for its own controllers).
    async fn list(&self, _request: ListRequest<'_>) -> Result<Page<Arc<Value>>, Failure> {
        let (items, revision) = self.cp.list(self.resource, None);
        Ok(Page {
            items: items
                .into_iter()
                .filter(|o| self.filter.matches(o))
                .collect(),
            resource_version: revision.to_string(),
            continue_token: None,
        })
    }

    async fn watch(&self, request: WatchRequest<'_>) -> Result<InProcessWatch, Failure> {
        let mut options = WatchOptions::named(
            self.name.clone(),
            Some(request.resource_version.parse().unwrap_or(0)),
        );
        options.filter = self.filter.clone();
        options.bookmarks = true;
        if request.send_initial_events {
            // A streaming list, which the control plane's own release must
            // serve (1.36 with WatchList); in-process there is no request to
            // refuse, so it is refused here as the apiserver would.
            if !self.cp.profile().enabled(Gate::WatchList) {
                return Err(Failure::Other(
                    "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled (422)".into(),
                ));
            }
            options.initial_events = Some(true);
            options.initial_events_end = true;
        }
        match self.cp.watch_opts(self.resource, options) {
            Ok((_, rx)) => Ok(InProcessWatch(rx)),
            // Too old for the watch cache's window: the apiserver's 410.
            Err(ApiError::Gone(message)) => Err(Failure::Expired(message)),
            Err(e) => Err(Failure::Other(e.to_string())),
        }
    }
}

/// A watch on the control plane's watch cache.
struct InProcessWatch(mpsc::Receiver<Delivery>);

impl WatchStream<Arc<Value>> for InProcessWatch {
    async fn next(&mut self) -> Option<Result<WatchItem<Arc<Value>>, Failure>> {
        // The cache closes the channel when it drops the watch (too slow,
        // or every watch was dropped).
        let delivery = self.0.recv().await?;
        let event = &delivery.event;
        let object = event.object.clone();
        Some(Ok(match event.event_type {
            CacheEventType::Bookmark => WatchItem::Bookmark {
                resource_version: event.revision.to_string(),
                initial_events_end: object["metadata"]["annotations"]
                    [reflector::INITIAL_EVENTS_END]
                    == "true",
            },
            CacheEventType::Error => {
                return Some(Err(Failure::Other(
                    "the watch cache ended the watch".into(),
                )));
            }
            CacheEventType::Added => WatchItem::Added(object),
            CacheEventType::Modified => WatchItem::Modified(object),
            CacheEventType::Deleted => WatchItem::Deleted(object),
        }))
    }
}

/// Delivers into the feed the next poll reads.
struct FeedSink(Arc<Mutex<Feed>>);

impl FeedSink {
    fn feed(&self) -> std::sync::MutexGuard<'_, Feed> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Sink<Arc<Value>> for FeedSink {
    fn report(&mut self, state: ReflectorState) {
        let stats = &mut self.feed().stats;
        match state {
            ReflectorState::ListStarted { .. } => stats.lists += 1,
            ReflectorState::WatchStarted { .. } => stats.watches += 1,
            ReflectorState::StreamingListStarted { .. } => {
                stats.lists += 1;
                stats.watches += 1;
            }
            _ => {}
        }
    }

    fn replace(&mut self, objects: Vec<Listed<Arc<Value>>>, _rv: &str, _at: Micros) {
        let objects = objects.into_iter().map(|listed| listed.object).collect();
        self.feed().items.push(Fed::Replace(objects));
    }

    fn delta(&mut self, event_type: EventType, object: Arc<Value>, _at: Micros) {
        let mut feed = self.feed();
        feed.stats.events += 1;
        feed.items.push(Fed::Delta(event_type, object));
    }

    fn marker(&mut self, event_type: EventType, _rv: &str, _at: Micros) {
        if event_type == EventType::Bookmark {
            self.feed().stats.events += 1;
        }
    }

    fn resync(&mut self) {
        self.feed().items.push(Fed::Resync);
    }
}

/// The control plane's clock; a wait ends at the first poll past its end.
struct PollTimer {
    cp: ControlPlane,
    feed: Arc<Mutex<Feed>>,
}

impl Timer for PollTimer {
    fn now(&self) -> Micros {
        self.cp.clock().now()
    }

    async fn sleep(&self, duration: Duration) {
        let until = self
            .now()
            .saturating_add(duration.as_micros().min(Micros::MAX as u128) as Micros);
        let set = |at| {
            self.feed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .wake_at = at
        };
        set(Some(until));
        std::future::poll_fn(|_| {
            if self.now() >= until {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
        set(None);
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
    use std::sync::atomic::{AtomicU64, Ordering};
    use watchlife_informer::profile::{Profile, Release};

    /// A control plane whose clock the test moves.
    fn control_plane() -> (ControlPlane, Arc<AtomicU64>) {
        let now = Arc::new(AtomicU64::new(1_000_000));
        let read = now.clone();
        (
            ControlPlane::new(Clock::new(move || read.load(Ordering::Relaxed))),
            now,
        )
    }

    /// Past any backoff the Reflector may be waiting out.
    fn after_backoff(now: &AtomicU64) {
        now.fetch_add(60_000_000, Ordering::Relaxed);
    }

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
        // A relist applies the deletions last in v1.20's DeltaFIFO, first in
        // v0.36's atomic RealFIFO.
        for (release, relist) in [
            (Release::V1_20, ["~a", "-b"]),
            (Release::V1_36, ["-b", "~a"]),
        ] {
            survives_dropped_watches_and_compaction(release, relist);
        }
    }

    fn survives_dropped_watches_and_compaction(release: Release, relist: [&str; 2]) {
        let (cp, now) = control_plane();
        cp.create(PODS, json!({"metadata": {"name": "a"}})).unwrap();
        let config = reflector::Config::for_profile(Profile::new(release));
        let mut informer = Informer::new(PODS, "test").with_config(config);
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
        assert!(
            informer.poll(&cp).is_empty(),
            "410 Gone: the relist waits for the backoff"
        );
        assert!(informer.next_wake().is_some());
        after_backoff(&now);
        assert_eq!(names(&informer.poll(&cp)), relist, "{release}");
        assert_eq!(informer.stats().lists, 2, "relisted after 410 Gone");
        assert_eq!(informer.list().count(), 1);
    }

    #[test]
    fn a_selector_turns_leaving_into_deletion_and_entering_into_addition() {
        let (cp, _) = control_plane();
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
        let (cp, now) = control_plane();
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
        after_backoff(&now);
        informer.poll(&cp);
        assert_eq!(informer.stats().lists, 2, "relisted");
        assert_eq!(controlled(&informer, "rs-1"), vec!["d"]);
        assert_eq!(controlled(&informer, "rs-2"), vec!["b"]);
    }
}
