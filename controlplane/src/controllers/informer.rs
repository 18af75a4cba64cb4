//! The informer of the demo's controllers: the one Reflector state machine
//! of the informer crate, driven against the control plane in-process, and
//! a shared informer whose single listener is the owning controller.
//!
//! IO-free and pull-driven: [`Informer::poll`] performs whatever the
//! Reflector asks that is due (LIST, WATCH, or the end of a backoff wait),
//! drains what the watch has delivered, and returns the notifications; the
//! owning controller hands them to its handlers. A relist after 410 Gone
//! therefore waits client-go's backoff (0.8–1.6 s), as a real controller's.

use super::owner::controller_uid;
use crate::control_plane::{ApiError, ControlPlane};
use crate::resource::ResourceType;
use crate::watch_cache::{Delivery, WatchFilter};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::{self, error::TryRecvError};
use watchlife_informer::fifo::DeltaType;
use watchlife_informer::indexer::Indexer;
use watchlife_informer::reflector::{self, Effect, Failure, Request, Step, WatchEnd};
use watchlife_informer::shared_informer::{Kind, SharedInformer};
use watchlife_protocol::{EventType, Micros};

pub use watchlife_informer::indexer::key_of;

/// Requests one poll may start before giving up until the next poll. A
/// re-watch normally succeeds at once and a relist always does; the bound
/// only stops a control plane that closes every watch at once (drop every
/// watch, pressed repeatedly) from keeping one poll busy.
pub const STARTS_PER_POLL: usize = 4;

/// The index of objects by the uid of the controller managing them, as
/// client-go's indexer keeps one: a controller asks for its own objects on
/// every sync, and a pass over the whole cache each time would cost as much
/// as the cache is large.
const BY_CONTROLLER: &str = "controller";

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
    pub lists: u64,
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
    reflector: reflector::Reflector,
    /// What the Reflector asked for last.
    request: Request,
    /// When the wait asked for ends.
    wait_until: Micros,
    watch: Option<mpsc::Receiver<Delivery>>,
    /// Items of the LIST being read, until the Reflector says to use them.
    pages: Vec<Arc<Value>>,
    shared: SharedInformer<(), Arc<Value>>,
    listener: usize,
    started: bool,
}

impl std::fmt::Debug for Informer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Informer")
            .field("resource", &self.resource.plural)
            .field("name", &self.name)
            .field("request", &self.request)
            .field("objects", &self.shared.indexer().len())
            .finish()
    }
}

impl Informer {
    /// An informer on every object of `rt`, whose watch the watch cache lists
    /// under `name`.
    pub fn new(rt: ResourceType, name: impl Into<String>) -> Self {
        let name = name.into();
        let indexer = Indexer::<Arc<Value>>::default().with_index(BY_CONTROLLER, |o| {
            controller_uid(o).map(String::from).into_iter().collect()
        });
        let mut shared = SharedInformer::new(indexer);
        let listener = shared.add_listener(name.clone(), false);
        // Jitter that differs between informers, and is the same every run.
        let seed = name.bytes().fold(rt.plural.len() as u64, |h, b| {
            h.wrapping_mul(31).wrapping_add(b as u64)
        });
        Informer {
            resource: rt,
            name,
            filter: WatchFilter::default(),
            reflector: reflector::Reflector::new(reflector::Config::default(), seed),
            request: Request::Wait(Duration::ZERO),
            wait_until: 0,
            watch: None,
            pages: Vec::new(),
            shared,
            listener,
            started: false,
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
        self.shared.has_synced()
    }

    pub fn stats(&self) -> InformerStats {
        let s = self.reflector.stats();
        InformerStats {
            lists: s.lists,
            watches: s.watches,
            events: s.events,
        }
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
        (matches!(self.request, Request::Wait(_)) && self.watch.is_none())
            .then_some(self.wait_until)
    }

    /// Brings the cache up to date with what the control plane has delivered
    /// and returns what changed. Lists first, re-watches when a watch ends,
    /// and relists after the backoff when the watch cache answers 410 Gone.
    pub fn poll(&mut self, cp: &ControlPlane) -> Vec<Notification> {
        let now = cp.clock().now();
        if !self.started {
            self.started = true;
            let step = self.reflector.start(now);
            self.take(step, now);
        }
        let mut starts = 0;
        loop {
            if let Some(rx) = &mut self.watch {
                match rx.try_recv() {
                    Ok(delivery) => {
                        self.delivered(delivery, now);
                        continue;
                    }
                    Err(TryRecvError::Empty) => break,
                    // The cache closed the watch (too slow, or every watch was
                    // dropped).
                    Err(TryRecvError::Disconnected) => {
                        self.watch = None;
                        let step = self.reflector.watch_ended(WatchEnd::Closed, now);
                        self.take(step, now);
                        continue;
                    }
                }
            }
            if starts == STARTS_PER_POLL {
                break;
            }
            starts += 1;
            let step = match self.request.clone() {
                Request::Wait(_) if now < self.wait_until => break,
                Request::Wait(_) => self.reflector.waited(now),
                Request::List { .. } => {
                    let (items, revision) = cp.list(self.resource, None);
                    let items: Vec<_> = items.into_iter().filter(|o| self.selects(o)).collect();
                    let count = items.len() as u64;
                    self.pages = items;
                    self.reflector
                        .list_page(count, &revision.to_string(), None, now)
                }
                Request::Watch {
                    resource_version, ..
                } => self.start_watch(cp, &resource_version, now),
            };
            self.take(step, now);
        }
        self.notifications()
    }

    fn start_watch(&mut self, cp: &ControlPlane, from: &str, now: Micros) -> Step {
        let from = from.parse().unwrap_or(0);
        match cp.watch_with(&self.name, self.resource, Some(from), self.filter.clone()) {
            Ok(rx) => {
                self.watch = Some(rx);
                // Nothing to ask until the watch delivers or ends.
                Step {
                    effects: Vec::new(),
                    request: Request::Wait(Duration::MAX),
                }
            }
            // Too old for the watch cache's window: as the apiserver's 410
            // ERROR event on the watch.
            Err(ApiError::Gone(message)) => self
                .reflector
                .watch_ended(WatchEnd::Failed(Failure::Expired(message)), now),
            Err(e) => self
                .reflector
                .watch_failed(Failure::Other(e.to_string()), now),
        }
    }

    /// Carries out the Reflector's effects and remembers its request.
    fn take(&mut self, step: Step, now: Micros) {
        for effect in step.effects {
            match effect {
                Effect::Report(_) => {}
                Effect::DiscardPages => self.pages.clear(),
                Effect::Replace { .. } => {
                    self.shared.queue_list(std::mem::take(&mut self.pages));
                }
            }
        }
        if let Request::Wait(delay) = step.request {
            let delay = delay.as_micros().min(Micros::MAX as u128) as Micros;
            self.wait_until = now.saturating_add(delay);
        }
        self.request = step.request;
    }

    fn delivered(&mut self, delivery: Delivery, now: Micros) {
        let event = &delivery.event;
        let rv = event.revision.to_string();
        let kind = match event.event_type {
            EventType::Bookmark => {
                self.reflector.watch_event(&rv, true);
                return;
            }
            EventType::Error => {
                self.watch = None;
                let failure = Failure::Other("the watch cache ended the watch".into());
                let step = self.reflector.watch_ended(WatchEnd::Failed(failure), now);
                self.take(step, now);
                return;
            }
            EventType::Deleted => DeltaType::Deleted,
            _ if !self.selects(&event.object) => {
                self.reflector.watch_event(&rv, false);
                if self.get(&key_of(&event.object)).is_some() {
                    self.shared
                        .queue_delta(DeltaType::Deleted, event.object.clone());
                }
                return;
            }
            EventType::Added => DeltaType::Added,
            EventType::Modified => DeltaType::Updated,
        };
        self.reflector.watch_event(&rv, false);
        self.shared.queue_delta(kind, event.object.clone());
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

    fn selects(&self, obj: &Value) -> bool {
        self.filter.matches(obj)
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
        let (cp, now) = control_plane();
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
        assert!(
            informer.poll(&cp).is_empty(),
            "410 Gone: the relist waits for the backoff"
        );
        assert!(informer.next_wake().is_some());
        after_backoff(&now);
        assert_eq!(names(&informer.poll(&cp)), vec!["~a", "-b"]);
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
