//! The control plane: a store and one Cacher per resource type, behind one
//! lock, with the object rules of the apiserver (names, namespaces, uids,
//! resourceVersions, optimistic concurrency).
//!
//! A write only commits to the store. How the change reaches watchers
//! depends on how the control plane runs:
//! - **staged** ([`ControlPlane::staged`]): each server-side stage of each
//!   type (the Cacher's Reflector, the dispatcher) is a task of its own that
//!   the host runs ([`stages`]), so the queues between them fill and drain
//!   as an apiserver's do;
//! - **inline** ([`ControlPlane::new`]): every stage runs, in order, within
//!   the write's call, and the dispatcher never blocks (a full buffer closes
//!   its watcher at once). Tests of the object rules use it: they read what a
//!   write did without a runtime.

mod compaction;
mod deletion;
mod quota;
mod requests;
pub mod stages;
mod streams;
mod watchers;

pub use deletion::{DEFAULT_GRACE_PERIOD_SECONDS, Deletion};
pub use requests::{COMPACTION_INTERVAL_MICROS, WATCH_CACHE_MAX_CAPACITY};
pub use streams::{ConsistentRead, ListAnswer, ServedFrom, StreamRecord, WatchAnswer};
pub use watchers::{SLOW_WATCHER_BUFFER, SLOW_WATCHER_NAME};

pub use crate::api_error::ApiError;
use crate::cacher::watcher::WatchOptions;
use crate::cacher::{Cacher, Progress};
use crate::clock::Clock;
use crate::ledger::StageLedger;
use crate::limits::{Limits, show_bytes};
use crate::object;
use crate::resource::{self, ResourceType};
use crate::store::{Revision, Store, StoreError, StoreEvent, StoreQuota};
use crate::validation;
use crate::watch_cache::{Delivery, WatchError, WindowBounds};
use serde_json::Value;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::mpsc;
use watchlife_informer::profile::Profile;
use watchlife_protocol::Micros;

/// Events each watch cache keeps at least: the apiserver's default watch cache
/// size (`--default-watch-cache-size=100`), the lower bound of its window
/// (which grows up to [`WATCH_CACHE_MAX_CAPACITY`] under bursts).
pub const WATCH_CACHE_CAPACITY: usize = 100;

struct State {
    store: Store,
    cachers: Vec<Cacher>,
    /// Whether every stage runs within the write's call (see the module doc).
    inline: bool,
    /// What each named watch stream was sent and when (see [`streams`]).
    streams: streams::Streams,
    next_uid: u64,
    /// Stage times of recent changes, by revision.
    ledger: StageLedger,
    /// Announces each new revision to whoever waits for changes.
    revisions: tokio::sync::watch::Sender<Revision>,
    /// Counts the events dispatched, for whoever waits for deliveries.
    dispatches: tokio::sync::watch::Sender<u64>,
    /// Receivers of watchers made slow on purpose: kept, never read.
    stalled: Vec<mpsc::Receiver<Delivery>>,
    /// When the next periodic compaction is due.
    compactor: requests::Compactor,
    /// Objects counted for the quotas.
    usage: quota::Usage,
    /// The Kubernetes release (and feature gates) the server behaves as.
    profile: Profile,
}

/// The embedded control plane. Cheap to clone: clones share one state.
#[derive(Clone)]
pub struct ControlPlane {
    state: Arc<Mutex<State>>,
    /// Wakes the stage tasks of a staged control plane, one set per type.
    wakers: Arc<Vec<stages::Wakers>>,
    clock: Clock,
    limits: Limits,
}

impl ControlPlane {
    /// An empty control plane with the `default` namespace, within the
    /// demo's [`Limits::DEMO`].
    pub fn new(clock: Clock) -> Self {
        ControlPlane::with_limits(clock, Limits::DEMO)
    }

    /// [`ControlPlane::new`] within other limits (a benchmark's
    /// [`Limits::UNBOUNDED`]).
    pub fn with_limits(clock: Clock, limits: Limits) -> Self {
        ControlPlane::with_profile(clock, limits, Profile::default())
    }

    /// [`ControlPlane::with_limits`] whose server behaves as `profile`'s
    /// Kubernetes release and feature gates (see [`ControlPlane::profile`]).
    pub fn with_profile(clock: Clock, limits: Limits, profile: Profile) -> Self {
        ControlPlane::build(
            clock,
            limits,
            true,
            crate::cacher::watcher::DEMO_BOOKMARK_FREQUENCY,
            profile,
        )
    }

    /// A control plane whose server-side stages run as tasks of their own,
    /// which the caller must start with [`ControlPlane::stage_tasks`]: until
    /// then, writes commit and no watcher hears of them. Bookmarks come every
    /// `bookmark_frequency` (see [`crate::cacher::watcher`]).
    /// Its server behaves as [`Profile::default()`] (1.36, every gate on).
    pub fn staged(clock: Clock, limits: Limits, bookmark_frequency: Micros) -> Self {
        ControlPlane::staged_with_profile(clock, limits, bookmark_frequency, Profile::default())
    }

    /// [`ControlPlane::staged`] whose server behaves as `profile`.
    pub fn staged_with_profile(
        clock: Clock,
        limits: Limits,
        bookmark_frequency: Micros,
        profile: Profile,
    ) -> Self {
        ControlPlane::build(clock, limits, false, bookmark_frequency, profile)
    }

    fn build(
        clock: Clock,
        limits: Limits,
        inline: bool,
        bookmark_frequency: Micros,
        profile: Profile,
    ) -> Self {
        let store = Store::with_quota(
            clock.clone(),
            StoreQuota {
                max_value_bytes: limits.max_object_bytes,
                max_value_weight: limits.max_object_weight,
                max_live_bytes: limits.store_quota_bytes,
                max_history_bytes: limits.history_quota_bytes,
            },
        );
        let bounds = WindowBounds {
            min: WATCH_CACHE_CAPACITY,
            max: WATCH_CACHE_MAX_CAPACITY,
            max_bytes: limits.watch_cache_bytes,
        };
        let cachers = resource::ALL
            .into_iter()
            .map(|r| {
                Cacher::new(
                    r,
                    bounds,
                    store.revision(),
                    bookmark_frequency,
                    clock.clone(),
                )
            })
            .collect();
        let compactor = requests::Compactor {
            last_at: clock.now(),
            pending: store.revision(),
        };
        let cp = ControlPlane {
            state: Arc::new(Mutex::new(State {
                revisions: tokio::sync::watch::Sender::new(store.revision()),
                dispatches: tokio::sync::watch::Sender::new(0),
                store,
                cachers,
                inline,
                streams: streams::Streams::default(),
                next_uid: 1,
                ledger: StageLedger::default(),
                stalled: Vec::new(),
                compactor,
                usage: quota::Usage::default(),
                profile,
            })),
            wakers: Arc::new(
                resource::ALL
                    .iter()
                    .map(|_| stages::Wakers::default())
                    .collect(),
            ),
            clock,
            limits,
        };
        // Every Cacher lists the (empty) store before the first write, as an
        // apiserver's Cachers are ready before it serves.
        cp.lock().pump_all();
        cp.create(
            resource::NAMESPACES,
            serde_json::json!({"metadata": {"name": "default"}}),
        )
        .expect("a fresh store has no namespaces");
        cp
    }

    /// The control plane's clock.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The bounds it enforces.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The Kubernetes release and feature gates its server behaves as:
    /// chosen when it is built, [`Profile::default()`] unless told.
    pub fn profile(&self) -> Profile {
        self.lock().profile
    }

    /// The store's latest revision.
    pub fn revision(&self) -> Revision {
        self.lock().store.revision()
    }

    /// Creates an object. Sets kind, apiVersion, namespace (`default` when
    /// namespaced and unset), uid and creationTimestamp; the store sets the
    /// resourceVersion. Refused when invalid (see [`crate::validation`]) or
    /// over a quota (see [`crate::limits`]).
    pub fn create(&self, rt: ResourceType, mut obj: Value) -> Result<Arc<Value>, ApiError> {
        let name = object::name(&obj).to_string();
        if name.is_empty() {
            return Err(ApiError::Invalid(format!(
                "{}.{} is invalid: metadata.name: Required value: name is required",
                rt.kind, rt.group
            )));
        }
        validation::validate(rt, &obj, &self.limits)?;
        let namespace = rt
            .namespaced
            .then(|| object::namespace(&obj).unwrap_or("default").to_string());
        let mut state = self.lock();
        state
            .usage
            .admit(rt, namespace.as_deref(), &name, &self.limits)?;
        let uid = state.next_uid;
        state.next_uid += 1;
        set_type_meta(&mut obj, rt);
        let meta = object::metadata_mut(&mut obj);
        match &namespace {
            Some(ns) => meta.insert("namespace".into(), ns.clone().into()),
            None => meta.remove("namespace"),
        };
        meta.insert(
            "uid".into(),
            format!("00000000-0000-4000-8000-{uid:012}").into(),
        );
        meta.insert(
            "creationTimestamp".into(),
            crate::time::rfc3339(self.clock.now()).into(),
        );
        let key = rt.key(namespace.as_deref(), &name);
        let event = state
            .store
            .create(&key, obj)
            .map_err(|e| api_error(rt, &name, e))?;
        Ok(state.publish(rt, event))
    }

    /// Replaces an object. When the new object carries a resourceVersion, it
    /// must be the current one (409 Conflict otherwise). Refused when invalid
    /// or when it would grow the store past its quota.
    pub fn update(&self, rt: ResourceType, mut obj: Value) -> Result<Arc<Value>, ApiError> {
        validation::validate(rt, &obj, &self.limits)?;
        let name = object::name(&obj).to_string();
        let namespace = rt
            .namespaced
            .then(|| object::namespace(&obj).unwrap_or("default").to_string());
        let expected = match object::resource_version(&obj) {
            None | Some("") => None,
            Some(rv) => Some(rv.parse::<Revision>().map_err(|_| {
                ApiError::Invalid(format!("metadata.resourceVersion: Invalid value: {rv:?}"))
            })?),
        };
        let key = rt.key(namespace.as_deref(), &name);
        let mut state = self.lock();
        let current = state.store.get(&key).ok_or_else(|| ApiError::NotFound {
            kind: rt.plural.into(),
            name: name.clone(),
        })?;
        set_type_meta(&mut obj, rt);
        // uid and creationTimestamp are the server's, whatever the client sent.
        for field in ["uid", "creationTimestamp", "namespace"] {
            if let Some(v) = object::field(&current, &["metadata", field]) {
                object::metadata_mut(&mut obj).insert(field.into(), v.clone());
            }
        }
        if unchanged(&current, &obj, expected) {
            return Ok(current);
        }
        let event = state
            .store
            .update(&key, obj, expected)
            .map_err(|e| api_error(rt, &name, e))?;
        Ok(state.publish(rt, event))
    }

    /// Reads an object, changes it with `change`, and writes it back.
    pub fn modify(
        &self,
        rt: ResourceType,
        namespace: Option<&str>,
        name: &str,
        change: impl FnOnce(&mut Value),
    ) -> Result<Arc<Value>, ApiError> {
        let mut obj = (*self.get(rt, namespace, name)?).clone();
        change(&mut obj);
        self.update(rt, obj)
    }

    /// Deletes an object; the DELETED event carries its last state.
    pub fn delete(
        &self,
        rt: ResourceType,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Arc<Value>, ApiError> {
        let key = rt.key(namespace, name);
        let mut state = self.lock();
        let event = state
            .store
            .delete(&key, None)
            .map_err(|e| api_error(rt, name, e))?;
        Ok(state.publish(rt, event))
    }

    /// Reads one object.
    pub fn get(
        &self,
        rt: ResourceType,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Arc<Value>, ApiError> {
        self.lock()
            .store
            .get(&rt.key(namespace, name))
            .ok_or_else(|| ApiError::NotFound {
                kind: rt.plural.into(),
                name: name.into(),
            })
    }

    /// Lists the current objects of a type (in one namespace, or all) and the
    /// revision the list is consistent with.
    pub fn list(&self, rt: ResourceType, namespace: Option<&str>) -> (Vec<Arc<Value>>, Revision) {
        let state = self.lock();
        let prefix = match namespace.filter(|_| rt.namespaced) {
            Some(ns) => format!("{}{ns}/", rt.key_prefix()),
            None => rt.key_prefix(),
        };
        (state.store.list(&prefix).collect(), state.store.revision())
    }

    /// Watches a type through its Cacher (see [`Cacher::watch`]).
    pub fn watch(
        &self,
        rt: ResourceType,
        from: Option<Revision>,
        namespace: Option<String>,
    ) -> Result<mpsc::Receiver<Delivery>, ApiError> {
        self.watch_named("", rt, from, namespace)
    }

    /// [`ControlPlane::watch`] for a named watcher (`scheduler`, `bridge`): the
    /// name is how [`ControlPlane::watchers`] lists it.
    pub fn watch_named(
        &self,
        name: &str,
        rt: ResourceType,
        from: Option<Revision>,
        namespace: Option<String>,
    ) -> Result<mpsc::Receiver<Delivery>, ApiError> {
        let mut options = WatchOptions::named(name, from);
        options.filter = crate::watch_cache::WatchFilter::namespace(namespace);
        self.watch_opts(rt, options).map(|(_, rx)| rx)
    }

    /// Starts a watch with every option a client may give (see
    /// [`WatchOptions`]). A revision older than the cache's window fails
    /// with [`ApiError::Gone`], worded as the apiserver words it; a Cacher
    /// that is (re)initializing with [`ApiError::NotReady`] (a v1.20 server
    /// waits instead: its HTTP layer tries again, see
    /// `watchlife_demo_apiserver::watch`).
    pub fn watch_opts(
        &self,
        rt: ResourceType,
        options: WatchOptions,
    ) -> Result<(crate::cacher::watcher::WatcherId, mpsc::Receiver<Delivery>), ApiError> {
        self.lock()
            .cacher_mut(rt)
            .watch(options)
            .map_err(api_watch_error)
    }

    /// Compacts the store's history up to its current revision.
    ///
    /// The watch caches' windows are trimmed to the same revision, so that a
    /// watch from a compacted resourceVersion is refused (410) at once. (The
    /// apiserver's Cacher keeps its own window whatever etcd compacts; the
    /// demo ties the two so that a compaction is visible to every client.)
    pub fn compact(&self) -> Revision {
        let mut state = self.lock();
        let revision = state.store.revision();
        state.compact_all(revision);
        revision
    }

    /// Closes every watch of every type.
    pub fn drop_watchers(&self) {
        for cacher in &mut self.lock().cachers {
            cacher.drop_watchers();
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the store half-written
        // (each write is one commit), so a poisoned lock is still consistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl State {
    /// A committed change: counted for the quotas and announced to whoever
    /// waits for new revisions (the Cachers' Reflectors among them). Inline,
    /// every stage then runs at once.
    fn publish(&mut self, rt: ResourceType, event: StoreEvent) -> Arc<Value> {
        self.usage.record(rt, &event);
        self.revisions.send_replace(event.revision);
        if self.inline {
            self.pump_all();
        }
        event.object
    }

    /// Runs every stage of every type until none can move: the inline
    /// schedule. The dispatcher's budget is never waited for here: a watcher
    /// that cannot take an event is closed once the budget is spent, and
    /// inline no time passes.
    pub(crate) fn pump_all(&mut self) {
        for at in 0..self.cachers.len() {
            loop {
                let reflected = self.cachers[at].reflect(&self.store);
                let mut dispatched = false;
                loop {
                    let (progress, event) = self.cachers[at].dispatch();
                    if let Some(event) = event {
                        self.ledger.record(self.cachers[at].resource(), &event);
                        self.dispatches.send_modify(|n| *n += 1);
                    }
                    match progress {
                        Progress::Moved => dispatched = true,
                        Progress::Blocked { .. } => {
                            self.cachers[at].close_blocked();
                            dispatched = true;
                        }
                        Progress::Idle { .. } => break,
                    }
                }
                if reflected != Progress::Moved && !dispatched {
                    break;
                }
            }
        }
    }

    fn cacher_mut(&mut self, rt: ResourceType) -> &mut Cacher {
        self.cachers
            .iter_mut()
            .find(|c| c.resource() == rt)
            .expect("a Cacher exists for every served type")
    }
}

/// A watch that could not start, as the client is told.
pub(crate) fn api_watch_error(e: WatchError) -> ApiError {
    match e {
        WatchError::TooOld { .. } => ApiError::Gone(e.to_string()),
        WatchError::NotReady { downtime } => ApiError::NotReady {
            retry_after_seconds: crate::cacher::ready::retry_after_seconds(downtime),
        },
    }
}

/// Whether writing `new` over `current` would store the same object: then
/// kube-apiserver writes nothing (its etcd store compares the encoded
/// object, resourceVersion aside, and returns the stored one), so there is
/// no new revision and no event. A precondition on another revision is
/// still a conflict, checked by the write.
fn unchanged(current: &Value, new: &Value, expected: Option<Revision>) -> bool {
    let current_revision = object::resource_version(current).and_then(|rv| rv.parse().ok());
    if expected.is_some_and(|rv| Some(rv) != current_revision) {
        return false;
    }
    let without_revision = |obj: &Value| {
        let mut obj = obj.clone();
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("resourceVersion");
        }
        obj
    };
    without_revision(current) == without_revision(new)
}

fn set_type_meta(obj: &mut Value, rt: ResourceType) {
    object::metadata_mut(obj);
    let map = obj.as_object_mut().expect("metadata_mut made an object");
    map.insert("kind".into(), rt.kind.into());
    map.insert("apiVersion".into(), rt.api_version().into());
}

fn api_error(rt: ResourceType, name: &str, e: StoreError) -> ApiError {
    let (kind, name) = (rt.plural.to_string(), name.to_string());
    match e {
        StoreError::AlreadyExists { .. } => ApiError::AlreadyExists { kind, name },
        StoreError::NotFound { .. } => ApiError::NotFound { kind, name },
        StoreError::Conflict { .. } => ApiError::Conflict { kind, name },
        StoreError::Compacted { .. } | StoreError::FutureRevision { .. } => {
            ApiError::Gone(e.to_string())
        }
        StoreError::TooLarge {
            size,
            limit,
            in_memory,
            ..
        } => {
            let (size, limit) = (show_bytes(size), show_bytes(limit));
            let why = if in_memory {
                format!(
                    "the object would take {size} in memory once parsed; the demo holds objects of at most {limit} each"
                )
            } else {
                format!(
                    "the object is {size} as JSON; the demo stores objects of at most {limit} (the limit on a ConfigMap's data)"
                )
            };
            ApiError::Invalid(format!(
                "{} \"{name}\" is invalid: {why}",
                validation::kind_group(rt)
            ))
        }
        StoreError::NoSpace {
            used, grow, quota, ..
        } => ApiError::Forbidden(format!(
            "{kind} \"{name}\" is forbidden: exceeded quota: the demo's store holds at most {} of objects in memory (its etcd quota); it holds {} and this write adds {}",
            show_bytes(quota),
            show_bytes(used),
            show_bytes(grow)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::{CONFIGMAPS, PODS};
    use serde_json::json;
    use watchlife_protocol::EventType;

    fn cp() -> ControlPlane {
        ControlPlane::new(Clock::new(|| 1_000_000))
    }

    #[test]
    fn create_fills_server_fields() {
        let cp = cp();
        let pod = cp.create(PODS, json!({"metadata": {"name": "p"}})).unwrap();
        assert_eq!(pod["kind"], "Pod");
        assert_eq!(pod["apiVersion"], "v1");
        assert_eq!(pod["metadata"]["namespace"], "default");
        assert_eq!(pod["metadata"]["creationTimestamp"], "1970-01-01T00:00:01Z");
        assert_eq!(
            object::resource_version(&pod),
            Some(cp.revision().to_string().as_str())
        );
        assert!(matches!(
            cp.create(PODS, json!({"metadata": {}})),
            Err(ApiError::Invalid(_))
        ));
    }

    #[test]
    fn update_with_stale_resource_version_conflicts() {
        let cp = cp();
        let v1 = cp
            .create(CONFIGMAPS, json!({"metadata": {"name": "c"}}))
            .unwrap();
        let mut changed = (*v1).clone();
        changed["data"] = json!({"k": "v"});
        cp.update(CONFIGMAPS, changed).unwrap();
        // Stale, even with nothing to change.
        assert!(matches!(
            cp.update(CONFIGMAPS, (*v1).clone()),
            Err(ApiError::Conflict { .. })
        ));
    }

    #[test]
    fn an_update_that_changes_nothing_writes_nothing() {
        let cp = cp();
        let v1 = cp
            .create(
                CONFIGMAPS,
                json!({"metadata": {"name": "c"}, "data": {"k": "v"}}),
            )
            .unwrap();
        let (_, rv) = cp.list(CONFIGMAPS, None);
        let mut rx = cp.watch(CONFIGMAPS, Some(rv), None).unwrap();
        let same = cp.update(CONFIGMAPS, (*v1).clone()).unwrap();
        assert_eq!(same, v1, "the stored object, its revision unchanged");
        let mut unversioned = (*v1).clone();
        unversioned["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("resourceVersion");
        assert_eq!(cp.update(CONFIGMAPS, unversioned).unwrap(), v1);
        assert!(rx.try_recv().is_err(), "no event");
        let mut changed = (*v1).clone();
        changed["data"]["k"] = json!("w");
        let v2 = cp.update(CONFIGMAPS, changed).unwrap();
        assert_ne!(object::resource_version(&v2), object::resource_version(&v1));
        assert!(rx.try_recv().is_ok(), "a change is an event");
    }

    #[test]
    fn list_then_watch_from_its_revision_sees_exactly_later_changes() {
        let cp = cp();
        cp.create(PODS, json!({"metadata": {"name": "before"}}))
            .unwrap();
        let (items, rv) = cp.list(PODS, None);
        assert_eq!(items.len(), 1);
        let mut rx = cp.watch(PODS, Some(rv), None).unwrap();
        cp.create(CONFIGMAPS, json!({"metadata": {"name": "other"}}))
            .unwrap();
        cp.modify(PODS, Some("default"), "before", |p| {
            p["status"] = json!({"phase": "Running"})
        })
        .unwrap();
        cp.delete(PODS, Some("default"), "before").unwrap();
        let seen: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|d| d.event.event_type)
            .collect();
        assert_eq!(seen, vec![EventType::Modified, EventType::Deleted]);
    }

    #[test]
    fn dropped_watchers_see_their_channel_close() {
        let cp = cp();
        let mut rx = cp.watch(PODS, None, None).unwrap();
        cp.drop_watchers();
        assert!(matches!(
            rx.try_recv(),
            Err(mpsc::error::TryRecvError::Disconnected)
        ));
    }
}
