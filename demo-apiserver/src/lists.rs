//! LISTs as the apiserver's Cacher answers them, and a record of who
//! answered.
//!
//! Where a LIST is read is [`watchlife_controlplane::list::plan`]'s choice
//! (`resourceVersion=0` from the watch cache, `""` from the store...). A
//! revision the watch cache has not reached yet is waited for, up to
//! [`BLOCK_TIMEOUT`], as `waitUntilFreshAndBlock` waits; then the answer is
//! "Too large resource version". A revision the store itself has not reached
//! is refused at once: the demo can ask its store for free, where the
//! apiserver waits its 3 s first. How the LIST was answered is noted under
//! the client's name ([`crate::watch::client`]), for the client to show.

use std::time::Duration;
use watchlife_controlplane::control_plane::{ListAnswer, ServedFrom};
use watchlife_controlplane::list::{self, ListOptions, ListPlan, ObjectList};
use watchlife_controlplane::{ApiError, ControlPlane, ResourceType};

/// How long a LIST waits for the watch cache to reach the revision asked
/// (`blockTimeout`, 3 s, in the apiserver's `watch_cache.go`).
pub const BLOCK_TIMEOUT: Duration = Duration::from_secs(3);

/// How often the wait looks at the cache's revision.
const FRESHNESS_POLL: Duration = Duration::from_millis(2);

/// Answers a LIST of `rt` in `namespace`.
pub async fn answer(
    cp: &ControlPlane,
    rt: ResourceType,
    namespace: Option<&str>,
    opts: &ListOptions,
    client: Option<&str>,
) -> Result<ObjectList, ApiError> {
    let plan = list::plan(opts)?;
    let started = cp.now();
    if let ListPlan::Cache { min_revision } = plan {
        let deadline = tokio::time::Instant::now() + BLOCK_TIMEOUT;
        while cp.watch_cache_revision(rt) < min_revision
            && min_revision <= cp.revision()
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(FRESHNESS_POLL).await;
        }
    }
    let waited = cp.now().saturating_sub(started);
    let list = cp.list_with(rt, namespace, opts)?;
    if let Some(client) = client {
        let served = match plan {
            ListPlan::Cache { .. } => ServedFrom::WatchCache {
                revision: list.resource_version,
                waited,
            },
            ListPlan::Store { .. } => ServedFrom::Store {
                revision: list.resource_version,
            },
        };
        cp.note_list(
            client,
            ListAnswer {
                asked: opts.resource_version.clone().unwrap_or_default(),
                limit: opts.limit.unwrap_or(0),
                served,
                items: list.items.len() as u64,
                at: cp.now(),
            },
        );
    }
    Ok(list)
}
