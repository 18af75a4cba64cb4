//! LISTs as the apiserver's Cacher answers them, per release, and a record
//! of who answered.
//!
//! Where a LIST is read is [`watchlife_controlplane::list_cache::plan_for`]'s
//! choice for the control plane's profile. Before a read from the watch
//! cache:
//! - **The Cacher must be ready.** v1.20 waits for it (`c.ready.wait()`,
//!   `Cacher.List`, v1.20.2 `cacher.go`), except that `resourceVersion=0`
//!   goes to the store meanwhile. v1.36 with
//!   `ResilientWatchCacheInitialization` answers 429 with `Retry-After` at
//!   once (`Cacher.GetList`, v0.36.4 `cacher.go`), except that a paged LIST
//!   without selectors goes to the store (`shouldDelegateListOnNotReadyCache`,
//!   `delegator.go`).
//! - **The cache must be fresh enough.** A revision the cache has not reached
//!   is waited for, up to [`BLOCK_TIMEOUT`] (`waitUntilFreshAndBlock`); then
//!   the answer is "Too large resource version". A revision the store itself
//!   has not reached is refused at once: the demo can ask its store for free,
//!   where the apiserver waits its 3 s first. A consistent read (v1.36
//!   `ConsistentListFromCache`) waits for the store's current revision (what
//!   etcd's progress notification tells the cache) for the same bound, then
//!   falls back to the store (`CacheDelegator.GetList`).
//!
//! How the LIST was answered is noted under the client's name
//! ([`crate::watch::client`]), for the client to show.

use std::time::Duration;
use watchlife_controlplane::control_plane::{ConsistentRead, ListAnswer, ServedFrom};
use watchlife_controlplane::list::{ListOptions, ListPlan, ObjectList};
use watchlife_controlplane::list_cache::plan_for;
use watchlife_controlplane::{ApiError, ControlPlane, Gate, ResourceType, Revision};

/// How long a LIST waits for the watch cache to reach the revision asked
/// (`blockTimeout`, 3 s, in the apiserver's `watch_cache.go`, v1.20.2 and
/// v0.36.4): also the bound of a consistent read's wait.
pub const BLOCK_TIMEOUT: Duration = Duration::from_secs(3);

/// How long a v1.20 LIST waits for a Cacher that is not ready: the
/// apiserver waits on the request's context, which its default
/// `--request-timeout` (1 minute) ends.
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// How often a wait looks at the cache.
const POLL: Duration = Duration::from_millis(2);

/// Waits until the watch cache of `rt` has seen `min` (at most `timeout`,
/// and not at all for a revision the store has not reached). Returns
/// whether it has, and how long the wait took on the control plane's clock.
pub async fn wait_until_fresh(
    cp: &ControlPlane,
    rt: ResourceType,
    min: Revision,
    timeout: Duration,
) -> (bool, u64) {
    let started = cp.now();
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if cp.watch_cache_revision(rt) >= min {
            return (true, cp.now().saturating_sub(started));
        }
        if min > cp.revision() || tokio::time::Instant::now() >= deadline {
            return (false, cp.now().saturating_sub(started));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Answers a LIST of `rt` in `namespace`.
pub async fn answer(
    cp: &ControlPlane,
    rt: ResourceType,
    namespace: Option<&str>,
    opts: &ListOptions,
    client: Option<&str>,
) -> Result<ObjectList, ApiError> {
    let profile = cp.profile();
    let mut plan = plan_for(opts, &profile)?;
    let started = cp.now();
    if !matches!(plan, ListPlan::Store { .. }) && cp.cache_ready(rt).is_err() {
        if profile.enabled(Gate::ResilientWatchCacheInitialization) {
            let selectors = !opts.labels.is_empty() || !opts.fields.is_empty();
            if selectors || opts.limit.unwrap_or(0) == 0 {
                let Err(downtime) = cp.cache_ready(rt) else {
                    unreachable!("checked just above, under no await");
                };
                return Err(ApiError::NotReady {
                    retry_after_seconds: watchlife_controlplane::cacher::ready::retry_after_seconds(
                        downtime,
                    ),
                });
            }
            plan = store_plan(opts)?;
        } else if plan == (ListPlan::Cache { min_revision: 0 }) {
            plan = store_plan(opts)?;
        } else {
            let deadline = tokio::time::Instant::now() + READY_TIMEOUT;
            while cp.cache_ready(rt).is_err() && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(POLL).await;
            }
        }
    }
    let mut consistent = None;
    match &plan {
        ListPlan::Cache { min_revision } | ListPlan::CachePage { min_revision, .. } => {
            wait_until_fresh(cp, rt, *min_revision, BLOCK_TIMEOUT).await;
        }
        ListPlan::Snapshot { revision, .. } => {
            wait_until_fresh(cp, rt, *revision, BLOCK_TIMEOUT).await;
        }
        ListPlan::Consistent { .. } => {
            let store_revision = cp.revision();
            let (fresh, waited) = wait_until_fresh(cp, rt, store_revision, BLOCK_TIMEOUT).await;
            consistent = Some(ConsistentRead {
                store_revision,
                waited,
                from_cache: fresh,
            });
        }
        ListPlan::Store { .. } => {}
    }
    let waited = cp.now().saturating_sub(started);
    let (list, served) = cp.list_planned(rt, namespace, opts, plan)?;
    if let Some(client) = client {
        let served = match served {
            ServedFrom::WatchCache { revision, .. } => ServedFrom::WatchCache { revision, waited },
            store => store,
        };
        cp.note_list(
            client,
            ListAnswer {
                asked: opts.resource_version.clone().unwrap_or_default(),
                limit: opts.limit.unwrap_or(0),
                served,
                items: list.items.len() as u64,
                at: cp.now(),
                consistent,
            },
        );
    }
    Ok(list)
}

/// The store's read of `opts`, as v1.20 plans it.
fn store_plan(opts: &ListOptions) -> Result<ListPlan, ApiError> {
    Ok(match watchlife_controlplane::list::plan(opts)? {
        // `resourceVersion=0` from the store: its latest state.
        ListPlan::Cache { .. } => ListPlan::Store {
            revision: None,
            after: None,
            limit: None,
            continued: false,
            min_revision: 0,
        },
        other => other,
    })
}
