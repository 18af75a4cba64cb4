//! LIST requests: where they are served from, and how they are paged.
//!
//! The rules are the apiserver's (API concepts, "Semantics for get and list"):
//!
//! | `resourceVersion` | `resourceVersionMatch` | `limit` | served from | consistency |
//! | --- | --- | --- | --- | --- |
//! | unset | unset | any | the store | the most recent state (a consistent read) |
//! | `"0"` | unset or `NotOlderThan` | ignored | the watch cache | any state, possibly stale |
//! | `N` | unset or `NotOlderThan` | unset | the watch cache | not older than `N` |
//! | `N` | unset | set | the store, at exactly `N` | legacy pagination: `N` is exact |
//! | `N` | `NotOlderThan` | set | the store | the most recent state |
//! | `N` | `Exact` | any | the store, at exactly `N` | exact; 410 Expired once `N` is compacted |
//!
//! A page ends with a continue token that encodes the revision of the first
//! page and the last key returned: every later page is read at that same
//! revision, so the pages together are one consistent snapshot. Once the
//! store compacts that revision, the token has expired (410 Expired) and the
//! client must list again from the start.
//!
//! A revision the store has not reached is answered 504 with the reason
//! `Timeout` and the cause `ResourceVersionTooLarge`, as the apiserver does
//! once it gives up waiting for its cache to catch up.

use crate::api_error::ApiError;
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::Revision;
use base64::Engine;
use serde_json::{Value, json};
use std::sync::Arc;

/// The apiserver's message for a continue token whose revision was compacted.
pub const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.";

/// The apiserver's message for an exact list at a compacted revision.
pub const LIST_EXPIRED: &str = "The resourceVersion for the provided list is too old.";

/// The query parameters of a LIST, parsed.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// `resourceVersion`, as sent.
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`, as sent.
    pub resource_version_match: Option<String>,
    /// `limit`; 0 means no limit.
    pub limit: Option<u64>,
    /// `continue`, as sent.
    pub continue_token: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

/// Where a list is read, decided by [`plan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListPlan {
    /// The watch cache's snapshot, whole, once the cache has seen
    /// `min_revision`.
    Cache { min_revision: Revision },
    /// v1.36: the watch cache, once it has seen `min_revision`, in pages of
    /// `limit` (`NotOlderThan` with a limit; see [`crate::list_cache`]).
    CachePage { min_revision: Revision, limit: u64 },
    /// v1.36 `ConsistentListFromCache`: the watch cache once it has caught
    /// up with the store's current revision, else the store.
    Consistent { limit: Option<u64> },
    /// v1.36 `ListFromCacheSnapshot`: the cache's snapshot at exactly
    /// `revision` while its window reaches back to it, else the store at
    /// `revision` (where it may have expired).
    Snapshot {
        revision: Revision,
        after: Option<String>,
        limit: Option<u64>,
        continued: bool,
    },
    /// The store: at `revision` (the latest when `None`), the keys after
    /// `after`, at most `limit` items.
    Store {
        revision: Option<Revision>,
        after: Option<String>,
        limit: Option<u64>,
        /// The read continues a paged list (its expiry is reported with
        /// [`CONTINUE_EXPIRED`]).
        continued: bool,
        /// The store must have reached this revision (`NotOlderThan`).
        min_revision: Revision,
    },
}

/// The result of a LIST.
#[derive(Debug, Clone)]
pub struct ObjectList {
    pub items: Vec<Arc<Value>>,
    /// The revision the list is consistent with: watch from here to see
    /// exactly the later changes.
    pub resource_version: Revision,
    /// Set when more items remain.
    pub continue_token: Option<String>,
    /// How many items remain after this page, when known (not with a
    /// selector, as in the apiserver).
    pub remaining_item_count: Option<u64>,
}

/// Decides where a list is served from, validating the combination of
/// parameters as the apiserver does (422 for a forbidden combination, 400 for
/// an unparseable value).
pub fn plan(opts: &ListOptions) -> Result<ListPlan, ApiError> {
    let limit = opts.limit.filter(|&l| l > 0);
    let exact = match opts.resource_version_match.as_deref() {
        None | Some("") => None,
        Some("Exact") => Some(true),
        Some("NotOlderThan") => Some(false),
        Some(other) => {
            return Err(invalid(format!(
                "resourceVersionMatch: Unsupported value: {other:?}: supported values: \"Exact\", \"NotOlderThan\""
            )));
        }
    };
    if let Some(token) = opts.continue_token.as_deref().filter(|t| !t.is_empty()) {
        if opts
            .resource_version
            .as_deref()
            .is_some_and(|rv| !rv.is_empty())
        {
            return Err(invalid(
                "resourceVersion: Forbidden: specifying resource version is not allowed when using continue".into(),
            ));
        }
        if exact.is_some() {
            return Err(invalid(
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided".into(),
            ));
        }
        let token = ContinueToken::decode(token)?;
        return Ok(ListPlan::Store {
            revision: Some(token.revision),
            after: Some(token.after),
            limit,
            continued: true,
            min_revision: 0,
        });
    }
    let rv = match opts.resource_version.as_deref() {
        None | Some("") => {
            if exact.is_some() {
                return Err(invalid(
                    "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided".into(),
                ));
            }
            return Ok(ListPlan::Store {
                revision: None,
                after: None,
                limit,
                continued: false,
                min_revision: 0,
            });
        }
        Some(rv) => parse_revision(rv)?,
    };
    Ok(match (rv, exact, limit) {
        (0, Some(true), _) => {
            return Err(invalid(
                "resourceVersionMatch: Forbidden: resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\"".into(),
            ));
        }
        (0, _, _) => ListPlan::Cache { min_revision: 0 },
        (rv, Some(true), limit) | (rv, None, limit @ Some(_)) => ListPlan::Store {
            revision: Some(rv),
            after: None,
            limit,
            continued: false,
            min_revision: 0,
        },
        (rv, _, None) => ListPlan::Cache { min_revision: rv },
        (rv, Some(false), limit) => ListPlan::Store {
            revision: None,
            after: None,
            limit,
            continued: false,
            min_revision: rv,
        },
    })
}

/// Parses a resourceVersion; anything but a whole number an etcd revision
/// can be (an `int64`, not negative) is a 400, as in the apiserver.
pub fn parse_revision(rv: &str) -> Result<Revision, ApiError> {
    match rv.parse::<i64>() {
        Ok(n) if n >= 0 => Ok(n.unsigned_abs()),
        _ => Err(ApiError::BadRequest(format!(
            "invalid resource version {rv:?}: expected a whole number from 0 to {}",
            i64::MAX
        ))),
    }
}

/// Selects and pages `entries` (in key order): the items after `after` that
/// pass the selectors, at most `limit` of them, with a continue token at
/// `revision` when more remain.
pub fn page(
    entries: impl Iterator<Item = (String, Arc<Value>)>,
    opts: &ListOptions,
    revision: Revision,
    after: Option<&str>,
    limit: Option<u64>,
) -> ObjectList {
    let mut selected = entries
        .filter(|(key, _)| after.is_none_or(|a| key.as_str() > a))
        .filter(|(_, obj)| opts.labels.matches(obj) && opts.fields.matches(obj));
    let mut items = Vec::new();
    let mut last_key = None;
    let limit = limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    for (key, obj) in selected.by_ref().take(limit) {
        items.push(obj);
        last_key = Some(key);
    }
    let remaining = selected.count() as u64;
    let continue_token = (remaining > 0)
        .then(|| last_key.map(|after| ContinueToken { revision, after }.encode()))
        .flatten();
    let has_selector = !opts.labels.is_empty() || !opts.fields.is_empty();
    ObjectList {
        items,
        resource_version: revision,
        remaining_item_count: (continue_token.is_some() && !has_selector).then_some(remaining),
        continue_token,
    }
}

/// What a continue token carries: the revision of the list's first page and
/// the last key returned so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContinueToken {
    pub revision: Revision,
    pub after: String,
}

impl ContinueToken {
    /// The opaque form sent to clients: URL-safe base64 of a small JSON object.
    pub fn encode(&self) -> String {
        let json = json!({"rv": self.revision, "start": self.after}).to_string();
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
    }

    /// Reads a token; anything not made by [`ContinueToken::encode`] is a 400.
    pub fn decode(token: &str) -> Result<Self, ApiError> {
        let bad = |why: &str| ApiError::BadRequest(format!("continue key is not valid: {why}"));
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.trim_end_matches('='))
            .map_err(|_| bad("not base64"))?;
        let value: Value = serde_json::from_slice(&bytes).map_err(|_| bad("not JSON"))?;
        let revision = value["rv"].as_u64().ok_or_else(|| bad("no revision"))?;
        let after = value["start"].as_str().ok_or_else(|| bad("no key"))?;
        if revision == 0 {
            return Err(bad("revision 0"));
        }
        Ok(ContinueToken {
            revision,
            after: after.to_string(),
        })
    }
}

fn invalid(detail: String) -> ApiError {
    ApiError::Invalid(format!("ListOptions.meta.k8s.io \"\" is invalid: {detail}"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// List options with a resourceVersion, its match rule and a limit.
    pub(crate) fn opts(
        rv: Option<&str>,
        rv_match: Option<&str>,
        limit: Option<u64>,
    ) -> ListOptions {
        ListOptions {
            resource_version: rv.map(Into::into),
            resource_version_match: rv_match.map(Into::into),
            limit,
            ..ListOptions::default()
        }
    }

    fn store(revision: Option<Revision>, limit: Option<u64>) -> ListPlan {
        ListPlan::Store {
            revision,
            after: None,
            limit,
            continued: false,
            min_revision: 0,
        }
    }

    #[test]
    fn plans_follow_the_api_concepts_table() {
        assert_eq!(plan(&opts(None, None, None)).unwrap(), store(None, None));
        assert_eq!(
            plan(&opts(None, None, Some(5))).unwrap(),
            store(None, Some(5))
        );
        assert_eq!(
            plan(&opts(Some("0"), None, Some(5))).unwrap(),
            ListPlan::Cache { min_revision: 0 }
        );
        assert_eq!(
            plan(&opts(Some("7"), None, None)).unwrap(),
            ListPlan::Cache { min_revision: 7 }
        );
        assert_eq!(
            plan(&opts(Some("7"), Some("NotOlderThan"), None)).unwrap(),
            ListPlan::Cache { min_revision: 7 }
        );
        assert_eq!(
            plan(&opts(Some("7"), None, Some(2))).unwrap(),
            store(Some(7), Some(2))
        );
        assert_eq!(
            plan(&opts(Some("7"), Some("Exact"), None)).unwrap(),
            store(Some(7), None)
        );
        assert_eq!(
            plan(&opts(Some("7"), Some("NotOlderThan"), Some(2))).unwrap(),
            ListPlan::Store {
                revision: None,
                after: None,
                limit: Some(2),
                continued: false,
                min_revision: 7
            }
        );
        assert_eq!(
            plan(&opts(Some("7"), None, Some(0))).unwrap(),
            ListPlan::Cache { min_revision: 7 }
        );
    }

    #[test]
    fn forbidden_combinations_are_invalid() {
        for bad in [
            opts(None, Some("Exact"), None),
            opts(Some("0"), Some("Exact"), None),
            opts(Some("3"), Some("Newest"), None),
        ] {
            assert!(matches!(plan(&bad), Err(ApiError::Invalid(_))), "{bad:?}");
        }
        assert!(matches!(
            plan(&opts(Some("abc"), None, None)),
            Err(ApiError::BadRequest(_))
        ));
        let token = ContinueToken {
            revision: 4,
            after: "k".into(),
        }
        .encode();
        let mut with_rv = opts(Some("4"), None, None);
        with_rv.continue_token = Some(token);
        assert!(matches!(plan(&with_rv), Err(ApiError::Invalid(_))));
    }

    #[test]
    fn continue_tokens_round_trip_and_reject_garbage() {
        let token = ContinueToken {
            revision: 42,
            after: "/registry/pods/default/web-1".into(),
        };
        assert_eq!(ContinueToken::decode(&token.encode()).unwrap(), token);
        for garbage in ["", "!!!", "bm90IGpzb24", "e30"] {
            assert!(matches!(
                ContinueToken::decode(garbage),
                Err(ApiError::BadRequest(_))
            ));
        }
        let mut continued = opts(None, None, Some(1));
        continued.continue_token = Some(token.encode());
        assert_eq!(
            plan(&continued).unwrap(),
            ListPlan::Store {
                revision: Some(42),
                after: Some("/registry/pods/default/web-1".into()),
                limit: Some(1),
                continued: true,
                min_revision: 0
            }
        );
    }

    #[test]
    fn pages_carry_a_token_until_the_end() {
        let entries: Vec<_> = ["a", "b", "c"]
            .iter()
            .map(|k| (k.to_string(), Arc::new(json!({"metadata": {"name": k}}))))
            .collect();
        let o = ListOptions::default();
        let first = page(entries.clone().into_iter(), &o, 9, None, Some(2));
        assert_eq!(first.items.len(), 2);
        assert_eq!(first.remaining_item_count, Some(1));
        let token = ContinueToken::decode(first.continue_token.as_deref().unwrap()).unwrap();
        assert_eq!(
            token,
            ContinueToken {
                revision: 9,
                after: "b".into()
            }
        );
        let second = page(entries.into_iter(), &o, 9, Some("b"), Some(2));
        assert_eq!(second.items.len(), 1);
        assert_eq!(second.continue_token, None);
        assert_eq!(second.remaining_item_count, None);
    }
}
