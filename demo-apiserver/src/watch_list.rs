//! `sendInitialEvents`: the streaming list (WatchList) of v1.36, and how
//! each release checks the options of a LIST or a WATCH that carries it.
//!
//! v1.20 knows no such parameter and ignores it; its watch refuses any
//! `resourceVersionMatch`. v1.36 checks them as apimachinery's
//! `ValidateListOptions` / `validateWatchOptions`
//! (`apis/meta/internalversion/validation/validation.go`, called from
//! `ListResource` in `endpoints/handlers/get.go`, v0.36.4): a 422 naming
//! every broken rule. It does not require `allowWatchBookmarks`: without
//! it the initial events simply end with no bookmark
//! (`isListWatchRequest`, `cacher.go`).

use crate::params::{self, CollectionParams};
use watchlife_controlplane::status::Status;
use watchlife_controlplane::{Profile, Release};

/// `resourceVersionMatch=NotOlderThan`, the only match a watch may give.
const NOT_OLDER_THAN: &str = "NotOlderThan";

/// The `sendInitialEvents` a request asks for, once its options pass the
/// checks of `profile`'s release: `None` when it gives none (or when v1.20
/// ignores it).
pub fn check(
    pairs: &[(String, String)],
    params: &CollectionParams,
    profile: &Profile,
) -> Result<Option<bool>, Status> {
    let rv_match = params.list.resource_version_match.as_deref();
    if profile.release() == Release::V1_20 {
        if params.watch && rv_match.is_some() {
            return Err(invalid(vec![
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch"
                    .into(),
            ]));
        }
        return Ok(None);
    }
    let send = params::value(pairs, "sendInitialEvents")
        .filter(|v| !v.is_empty())
        .map(|_| params::parse_bool(pairs, "sendInitialEvents"))
        .transpose()?;
    let mut errors = Vec::new();
    if !params.watch {
        if send.is_some() {
            errors.push(
                "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list".into(),
            );
        }
        return if errors.is_empty() {
            Ok(None)
        } else {
            Err(invalid(errors))
        };
    }
    if send.is_some() {
        if rv_match != Some(NOT_OLDER_THAN) {
            errors.push(format!(
                "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to {NOT_OLDER_THAN}"
            ));
        }
        if !profile.enabled(watchlife_controlplane::Gate::WatchList) {
            errors.push(
                "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"
                    .into(),
            );
        }
    }
    if let Some(m) = rv_match {
        if send.is_none() {
            errors.push("resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided".into());
        }
        if m != NOT_OLDER_THAN {
            errors.push(format!(
                "resourceVersionMatch: Unsupported value: {m:?}: supported values: \"{NOT_OLDER_THAN}\""
            ));
        }
        if params.list.continue_token.is_some() {
            errors.push("resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided".into());
        }
    }
    if errors.is_empty() {
        Ok(send)
    } else {
        Err(invalid(errors))
    }
}

/// A 422 as `errors.NewInvalid` words it: one error as is, several as a
/// bracketed list.
fn invalid(errors: Vec<String>) -> Status {
    let detail = match errors.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    Status::new(
        422,
        "Invalid",
        format!("ListOptions.meta.k8s.io \"\" is invalid: {detail}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use watchlife_controlplane::Gate;
    use watchlife_controlplane::resource::PODS;

    fn checked(query: &str, profile: &Profile) -> Result<Option<bool>, Status> {
        let pairs = params::pairs(Some(query));
        let p = params::collection(&pairs, PODS, false).unwrap();
        check(&pairs, &p, profile)
    }

    #[test]
    fn a_watch_list_needs_not_older_than_and_the_gate() {
        let on = Profile::default();
        let ok = "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan";
        assert_eq!(checked(ok, &on).unwrap(), Some(true));
        let no_match = checked("watch=1&sendInitialEvents=true", &on).unwrap_err();
        assert_eq!(no_match.code, 422);
        assert!(
            no_match.message.ends_with(
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
            ),
            "{}",
            no_match.message
        );
        let mut off = Profile::default();
        off.set(Gate::WatchList, false).unwrap();
        let refused = checked(ok, &off).unwrap_err();
        assert_eq!(
            refused.message,
            "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"
        );
        assert_eq!(
            checked(
                "watch=1&resourceVersionMatch=Exact&sendInitialEvents=false",
                &on
            )
            .unwrap_err()
            .message,
            "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"]"
        );
        assert_eq!(
            checked("sendInitialEvents=true", &on).unwrap_err().code,
            422
        );
    }

    #[test]
    fn v1_20_ignores_it_and_refuses_a_match_on_a_watch() {
        let old = Profile::new(Release::V1_20);
        assert_eq!(
            checked("watch=1&sendInitialEvents=true", &old).unwrap(),
            None
        );
        let refused = checked(
            "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
            &old,
        )
        .unwrap_err();
        assert!(
            refused
                .message
                .ends_with("resourceVersionMatch is forbidden for watch")
        );
    }
}
