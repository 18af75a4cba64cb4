//! Which LISTs a v1.36 server answers from its watch cache.
//!
//! [`crate::list::plan`] decides as v1.20's Cacher does (`Cacher.List`,
//! v1.20.2 `cacher.go`): only `resourceVersion="0"` and `N` without a limit
//! go to the cache. The v0.36.4 apiserver's `delegator.ShouldDelegateList`
//! (`storage/cacher/delegator/interface.go`, with `CacheDelegator.GetList`
//! in `delegator.go`) sends more there:
//!
//! | request | v1.36 | gate |
//! | --- | --- | --- |
//! | `resourceVersion=""`, paged or not | the cache once it has caught up with the store's current revision, else the store (`ShouldDelegateConsistentRead`, `waitAndListConsistent`) | `ConsistentListFromCache` |
//! | `Exact` at `N`, legacy `N` with a limit, a continue token | the cache's snapshot at `N` if its window still reaches back (`shouldDelegateExactRV`, `waitAndListExactRV`), else the store | `ListFromCacheSnapshot` |
//! | `NotOlderThan` `N` with a limit | the cache, in pages (`ShouldDelegateList`: never delegated) | none |
//!
//! With a gate off, its requests go where v1.20 sends them.

use crate::api_error::ApiError;
use crate::list::{ListOptions, ListPlan, plan};
use watchlife_informer::profile::{Gate, Profile, Release};

/// Where a LIST is read by a server that behaves as `profile`.
pub fn plan_for(opts: &ListOptions, profile: &Profile) -> Result<ListPlan, ApiError> {
    let legacy = plan(opts)?;
    if profile.release() == Release::V1_20 {
        return Ok(legacy);
    }
    let consistent_read = opts.resource_version.as_deref().is_none_or(str::is_empty)
        && opts.continue_token.as_deref().is_none_or(str::is_empty);
    Ok(match legacy {
        ListPlan::Store { limit, .. } if consistent_read => {
            if profile.enabled(Gate::ConsistentListFromCache) {
                ListPlan::Consistent { limit }
            } else {
                legacy
            }
        }
        ListPlan::Store {
            revision: Some(revision),
            after,
            limit,
            continued,
            ..
        } if profile.enabled(Gate::ListFromCacheSnapshot) => ListPlan::Snapshot {
            revision,
            after,
            limit,
            continued,
        },
        exact @ ListPlan::Store {
            revision: Some(_), ..
        } => exact,
        // `NotOlderThan` with a limit.
        ListPlan::Store {
            revision: None,
            limit: Some(limit),
            min_revision,
            ..
        } => ListPlan::CachePage {
            min_revision,
            limit,
        },
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::list::tests::opts;

    #[test]
    fn v1_36_sends_consistent_exact_and_paged_lists_to_the_cache() {
        let p = Profile::default();
        assert_eq!(
            plan_for(&opts(None, None, None), &p).unwrap(),
            ListPlan::Consistent { limit: None }
        );
        assert_eq!(
            plan_for(&opts(None, None, Some(2)), &p).unwrap(),
            ListPlan::Consistent { limit: Some(2) }
        );
        assert!(matches!(
            plan_for(&opts(Some("7"), Some("Exact"), None), &p).unwrap(),
            ListPlan::Snapshot { revision: 7, .. }
        ));
        assert!(matches!(
            plan_for(&opts(Some("7"), None, Some(2)), &p).unwrap(),
            ListPlan::Snapshot { revision: 7, .. }
        ));
        assert_eq!(
            plan_for(&opts(Some("7"), Some("NotOlderThan"), Some(2)), &p).unwrap(),
            ListPlan::CachePage {
                min_revision: 7,
                limit: 2
            }
        );
        assert_eq!(
            plan_for(&opts(Some("0"), None, Some(2)), &p).unwrap(),
            ListPlan::Cache { min_revision: 0 }
        );
    }

    #[test]
    fn v1_20_and_gates_off_keep_the_legacy_routes() {
        let old = Profile::new(Release::V1_20);
        let mut off = Profile::default();
        off.set(Gate::ListFromCacheSnapshot, false).unwrap();
        for (rv, m, limit) in [(None, None, None), (Some("7"), Some("Exact"), None)] {
            let o = opts(rv, m, limit);
            assert_eq!(plan_for(&o, &old).unwrap(), plan(&o).unwrap());
        }
        let exact = opts(Some("7"), Some("Exact"), None);
        assert_eq!(plan_for(&exact, &off).unwrap(), plan(&exact).unwrap());
    }
}
