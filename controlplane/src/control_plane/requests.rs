//! The apiserver's read paths and housekeeping: LIST with its parameters,
//! WATCH with a selection, the watch cache's window, and periodic compaction.

use super::ServedFrom;
use super::{ControlPlane, State};
use crate::api_error::ApiError;
use crate::cacher::watcher::WatchOptions;
use crate::list::{self, ListOptions, ListPlan, ObjectList};
use crate::list_cache;
use crate::object;
use crate::resource::ResourceType;
use crate::store::{Revision, StoreError};
use crate::watch_cache::{Delivery, WatchFilter};
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::mpsc;
use watchlife_protocol::Micros;

/// Events a watch cache's window may grow to under a burst of writes; its
/// lower bound is [`super::WATCH_CACHE_CAPACITY`]. The apiserver's upper
/// bound is 100 × 1024, sized for a server's memory; the demo's events (each
/// with its object and its encoded line, some 13 KB) would take over a GB at
/// that size, so the demo's window stops at a tenth of it, still far more
/// than its story ever needs.
pub const WATCH_CACHE_MAX_CAPACITY: usize = 10 * 1024;

/// How often [`ControlPlane::tick`] compacts the store: the apiserver's
/// default `--etcd-compaction-interval` (5 minutes). Each compaction drops the
/// history older than the revision seen at the previous one, so between five
/// and ten minutes of history are kept, as etcd behind an apiserver keeps.
pub const COMPACTION_INTERVAL_MICROS: Micros = 5 * 60 * 1_000_000;

/// When the next periodic compaction happens and to which revision.
pub(super) struct Compactor {
    pub(super) last_at: Micros,
    /// The revision seen at the last compaction; the next compacts up to it.
    pub(super) pending: Revision,
}

impl State {
    /// Compacts the store and trims every watch cache's window to the same
    /// revision.
    pub(super) fn compact_all(&mut self, revision: Revision) {
        self.store.compact(revision);
        let compacted = self.store.compacted();
        for cacher in &mut self.cachers {
            cacher.cache_mut().compact(compacted);
        }
    }
}

impl ControlPlane {
    /// Runs the periodic compaction when it is due; IO-free, so the caller
    /// calls it every few seconds from whatever timer it has. Every
    /// [`COMPACTION_INTERVAL_MICROS`] it compacts up to the revision the store
    /// had one interval earlier. Returns the revision compacted to, if any.
    pub fn tick(&self) -> Option<Revision> {
        let now = self.clock.now();
        let mut state = self.lock();
        if now.saturating_sub(state.compactor.last_at) < COMPACTION_INTERVAL_MICROS {
            return None;
        }
        let target = state.compactor.pending;
        state.compactor = Compactor {
            last_at: now,
            pending: state.store.revision(),
        };
        (target > state.store.compacted()).then(|| {
            state.compact_all(target);
            target
        })
    }

    /// The revision up to which the store's history has been compacted.
    pub fn compacted(&self) -> Revision {
        self.lock().store.compacted()
    }

    /// A LIST with the apiserver's parameters: where it is served from and how
    /// it is paged is decided by [`list_cache::plan_for`] for this control
    /// plane's profile (see [`crate::list`], [`crate::list_cache`]). Nothing
    /// waits here: a consistent read the cache has not caught up with is read
    /// from the store.
    pub fn list_with(
        &self,
        rt: ResourceType,
        namespace: Option<&str>,
        opts: &ListOptions,
    ) -> Result<ObjectList, ApiError> {
        let plan = list_cache::plan_for(opts, &self.profile())?;
        self.list_planned(rt, namespace, opts, plan)
            .map(|(list, _)| list)
    }

    /// Reads a LIST as `plan` says, and says who answered (`waited` is left
    /// 0 for the caller to fill). A [`ListPlan::Consistent`] read is served
    /// by the cache only if it has reached the store's current revision,
    /// else by the store (the caller waits first, see
    /// `watchlife_demo_apiserver::lists`); a [`ListPlan::Snapshot`] by the
    /// store when the cache's window no longer reaches its revision
    /// (`CacheDelegator.GetList` falls back on `ResourceExpired`, v0.36.4
    /// `delegator.go`).
    pub fn list_planned(
        &self,
        rt: ResourceType,
        namespace: Option<&str>,
        opts: &ListOptions,
        plan: ListPlan,
    ) -> Result<(ObjectList, ServedFrom), ApiError> {
        let namespace = namespace.filter(|_| rt.namespaced);
        let prefix = match namespace {
            Some(ns) => format!("{}{ns}/", rt.key_prefix()),
            None => rt.key_prefix(),
        };
        // Read under the lock; page once it is released.
        let read = read(&mut self.lock(), rt, namespace, &prefix, plan)?;
        let after = read.after.as_deref();
        let page = list::page(
            read.entries.into_iter(),
            opts,
            read.revision,
            after,
            read.limit,
        );
        Ok((page, read.served))
    }

    /// Whether the Cacher of `rt` may serve: `Err` with how long it has not
    /// been (see [`crate::cacher::ready`]).
    pub fn cache_ready(&self, rt: ResourceType) -> Result<(), Micros> {
        self.lock().cacher_mut(rt).check_ready()
    }

    /// Watches a type through its Cacher with a selection, as a watcher
    /// named `name` (see [`ControlPlane::watch_opts`]).
    pub fn watch_with(
        &self,
        name: &str,
        rt: ResourceType,
        from: Option<Revision>,
        filter: WatchFilter,
    ) -> Result<mpsc::Receiver<Delivery>, ApiError> {
        let mut options = WatchOptions::named(name, from);
        options.filter = filter;
        self.watch_opts(rt, options).map(|(_, rx)| rx)
    }

    /// The latest revision the watch cache of `rt` has seen.
    pub fn watch_cache_revision(&self, rt: ResourceType) -> Revision {
        self.lock().cacher_mut(rt).cache().revision()
    }

    /// The watch cache window of `rt`: (events held, capacity, the revision
    /// after which it holds every change).
    pub fn watch_cache_window(&self, rt: ResourceType) -> (usize, usize, Revision) {
        let mut state = self.lock();
        let cache = state.cacher_mut(rt).cache();
        (cache.len(), cache.capacity(), cache.window_start())
    }
}

/// What a LIST read, to be paged: entries after `after`, at most `limit`.
struct Read {
    entries: Vec<(String, Arc<Value>)>,
    revision: Revision,
    after: Option<String>,
    limit: Option<u64>,
    served: ServedFrom,
}

impl Read {
    /// A read of the watch cache at `revision`.
    fn cached(
        entries: Vec<(String, Arc<Value>)>,
        revision: Revision,
        after: Option<String>,
        limit: Option<u64>,
    ) -> Self {
        let served = ServedFrom::WatchCache {
            revision,
            waited: 0,
        };
        Read {
            entries,
            revision,
            after,
            limit,
            served,
        }
    }
}

/// A read the store serves: the fields of [`ListPlan::Store`].
struct StoreRead {
    revision: Option<Revision>,
    after: Option<String>,
    limit: Option<u64>,
    continued: bool,
    min_revision: Revision,
}

/// Reads what `plan` asks of `rt` under `prefix` (and `namespace`): from the
/// watch cache when the plan and the cache allow it, else from the store
/// (see [`ControlPlane::list_planned`]).
fn read(
    state: &mut State,
    rt: ResourceType,
    namespace: Option<&str>,
    prefix: &str,
    plan: ListPlan,
) -> Result<Read, ApiError> {
    let current = state.store.revision();
    let cache = state.cacher_mut(rt).cache();
    let reached = |min_revision| match min_revision > cache.revision() {
        true => Err(too_large(min_revision, current)),
        false => Ok(()),
    };
    let store_read = match plan {
        ListPlan::Cache { min_revision } => {
            reached(min_revision)?;
            let (items, revision) = cache.list();
            let entries = items
                .into_iter()
                .filter(|o| namespace.is_none_or(|ns| object::namespace(o) == Some(ns)))
                .map(|o| (String::new(), o))
                .collect();
            return Ok(Read::cached(entries, revision, None, None));
        }
        ListPlan::CachePage {
            min_revision,
            limit,
        } => {
            reached(min_revision)?;
            let (entries, revision) = (cache.entries(prefix), cache.revision());
            return Ok(Read::cached(entries, revision, None, Some(limit)));
        }
        ListPlan::Consistent { limit } if cache.revision() >= current => {
            let (entries, revision) = (cache.entries(prefix), cache.revision());
            return Ok(Read::cached(entries, revision, None, limit));
        }
        ListPlan::Consistent { limit } => StoreRead {
            revision: None,
            after: None,
            limit,
            continued: false,
            min_revision: 0,
        },
        ListPlan::Snapshot {
            revision,
            after,
            limit,
            continued,
        } => match cache.snapshot_at(prefix, revision) {
            Some(entries) => return Ok(Read::cached(entries, revision, after, limit)),
            None => StoreRead {
                revision: Some(revision),
                after,
                limit,
                continued,
                min_revision: 0,
            },
        },
        ListPlan::Store {
            revision,
            after,
            limit,
            continued,
            min_revision,
        } => StoreRead {
            revision,
            after,
            limit,
            continued,
            min_revision,
        },
    };
    read_store(state, prefix, store_read)
}

/// Reads the store under `prefix`, at its current revision or the one asked.
fn read_store(state: &State, prefix: &str, read: StoreRead) -> Result<Read, ApiError> {
    let current = state.store.revision();
    if read.min_revision > current {
        return Err(too_large(read.min_revision, current));
    }
    let (entries, revision): (Vec<_>, Revision) = match read.revision {
        None => (
            state
                .store
                .entries(prefix)
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            current,
        ),
        Some(at) => match state.store.entries_at(prefix, at) {
            Ok(entries) => (entries.into_iter().collect(), at),
            Err(StoreError::FutureRevision { .. }) => return Err(too_large(at, current)),
            Err(_) => {
                let message = if read.continued {
                    list::CONTINUE_EXPIRED
                } else {
                    list::LIST_EXPIRED
                };
                return Err(ApiError::Gone(message.into()));
            }
        },
    };
    Ok(Read {
        entries,
        revision,
        after: read.after,
        limit: read.limit,
        served: ServedFrom::Store { revision },
    })
}

/// 504: `requested` is a revision the store (at `current`) has not reached.
fn too_large(requested: Revision, current: Revision) -> ApiError {
    ApiError::TooLargeResourceVersion { requested, current }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Clock;
    use crate::list::tests::opts;
    use crate::resource::{CONFIGMAPS, PODS};
    use crate::selector::LabelSelector;
    use serde_json::json;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    fn names(list: &ObjectList) -> Vec<String> {
        list.items
            .iter()
            .map(|o| object::name(o).to_string())
            .collect()
    }

    #[test]
    fn paged_lists_are_one_snapshot_until_compacted() {
        let cp = ControlPlane::new(Clock::new(|| 0));
        for name in ["a", "b", "c"] {
            cp.create(CONFIGMAPS, json!({"metadata": {"name": name}}))
                .unwrap();
        }
        let first = cp
            .list_with(CONFIGMAPS, None, &opts(None, None, Some(2)))
            .unwrap();
        assert_eq!(names(&first), ["a", "b"]);
        cp.create(CONFIGMAPS, json!({"metadata": {"name": "aa"}}))
            .unwrap();
        cp.delete(CONFIGMAPS, Some("default"), "c").unwrap();
        let mut next = opts(None, None, Some(2));
        next.continue_token = first.continue_token.clone();
        let second = cp.list_with(CONFIGMAPS, None, &next).unwrap();
        assert_eq!(names(&second), ["c"], "read at the first page's revision");
        assert_eq!(second.resource_version, first.resource_version);
        cp.compact();
        assert_eq!(
            cp.list_with(CONFIGMAPS, None, &next).unwrap_err(),
            ApiError::Gone(list::CONTINUE_EXPIRED.into())
        );
        let exact = opts(
            Some(&first.resource_version.to_string()),
            Some("Exact"),
            None,
        );
        assert_eq!(
            cp.list_with(CONFIGMAPS, None, &exact).unwrap_err(),
            ApiError::Gone(list::LIST_EXPIRED.into())
        );
    }

    #[test]
    fn cached_and_consistent_lists_and_a_future_revision() {
        let cp = ControlPlane::new(Clock::new(|| 0));
        let mut o = opts(Some("0"), None, Some(1));
        o.labels = LabelSelector::parse("app=web").unwrap();
        cp.create(
            PODS,
            json!({"metadata": {"name": "w", "labels": {"app": "web"}}}),
        )
        .unwrap();
        cp.create(PODS, json!({"metadata": {"name": "x"}})).unwrap();
        cp.create(
            PODS,
            json!({"metadata": {"name": "y", "labels": {"app": "web"}}}),
        )
        .unwrap();
        let cached = cp.list_with(PODS, Some("default"), &o).unwrap();
        assert_eq!(names(&cached), ["w", "y"], "RV 0 ignores the limit");
        assert_eq!(cached.continue_token, None);
        assert_eq!(cached.resource_version, cp.revision());
        let future = opts(Some(&(cp.revision() + 5).to_string()), None, None);
        assert!(matches!(
            cp.list_with(PODS, None, &future),
            Err(ApiError::TooLargeResourceVersion { .. })
        ));
        assert_eq!(
            cp.list_with(PODS, Some("other"), &opts(None, None, None))
                .unwrap()
                .items
                .len(),
            0
        );
    }

    #[test]
    fn tick_compacts_to_the_revision_of_the_previous_interval() {
        let now = Arc::new(AtomicU64::new(0));
        let clock = {
            let now = now.clone();
            Clock::new(move || now.load(Ordering::Relaxed))
        };
        let cp = ControlPlane::new(clock);
        cp.create(PODS, json!({"metadata": {"name": "a"}})).unwrap();
        assert_eq!(cp.tick(), None, "not due yet");
        now.store(COMPACTION_INTERVAL_MICROS, Ordering::Relaxed);
        let seen = cp.revision();
        // The first interval compacts up to the revision at start (nothing new).
        assert_eq!(cp.tick(), Some(1));
        cp.create(PODS, json!({"metadata": {"name": "b"}})).unwrap();
        now.store(2 * COMPACTION_INTERVAL_MICROS, Ordering::Relaxed);
        assert_eq!(cp.tick(), Some(seen));
        assert_eq!(cp.compacted(), seen);
        assert!(matches!(
            cp.watch_with("t", PODS, Some(seen - 1), WatchFilter::default()),
            Err(ApiError::Gone(_))
        ));
        assert!(
            cp.watch_with("t", PODS, Some(seen), WatchFilter::default())
                .is_ok()
        );
    }
}
