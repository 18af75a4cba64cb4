//! Query parameters of list, watch and delete requests.

use std::time::Duration;
use watchlife_controlplane::ResourceType;
use watchlife_controlplane::list::ListOptions;
use watchlife_controlplane::selector::{FieldSelector, LabelSelector};
use watchlife_controlplane::status::Status;

/// The apiserver's `--min-request-timeout` (1800 s): a watch without
/// `timeoutSeconds` lasts between one and two times it (see
/// [`default_watch_timeout`]).
pub const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(1800);

/// A watch's lifetime when the client gives no `timeoutSeconds`: a random
/// time from [`DEFAULT_WATCH_TIMEOUT`] up to twice it, as `ListResource`
/// (`endpoints/handlers/get.go`, v1.20.2 and v0.36.4) picks
/// `minRequestTimeout × (1 + rand)`, so that watches opened together do not
/// all end, and re-watch, together.
pub fn default_watch_timeout() -> Duration {
    use std::hash::{BuildHasher, Hasher};
    // Each `RandomState` is freshly keyed: a random 64-bit number without a
    // generator to keep.
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let fraction = (random >> 11) as f64 / (1u64 << 53) as f64;
    DEFAULT_WATCH_TIMEOUT.mul_f64(1.0 + fraction)
}

/// The longest a watch lasts, whatever `timeoutSeconds` asks: a day. Longer
/// ones are taken as a day; clients re-watch when a watch ends, as they must
/// anyway.
pub const MAX_WATCH_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// The parameters of a GET on a collection (list or watch).
#[derive(Debug, Clone)]
pub struct CollectionParams {
    pub watch: bool,
    pub list: ListOptions,
    pub timeout: Duration,
    pub allow_bookmarks: bool,
}

/// The query string as (name, value) pairs. When a name is repeated, the
/// last value counts.
pub fn pairs(query: Option<&str>) -> Vec<(String, String)> {
    form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// The last value a query parameter was given, if any.
pub fn value<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    get(pairs, name)
}

fn get<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// A boolean as Go's `strconv.ParseBool` reads it.
pub fn parse_bool(pairs: &[(String, String)], name: &str) -> Result<bool, Status> {
    match get(pairs, name) {
        None | Some("") => Ok(false),
        Some("1" | "t" | "T" | "true" | "TRUE" | "True") => Ok(true),
        Some("0" | "f" | "F" | "false" | "FALSE" | "False") => Ok(false),
        Some(other) => Err(Status::bad_request(format!(
            "invalid value for {name}: {:?} is not a boolean",
            shorten(other)
        ))),
    }
}

/// A count or a number of seconds, as Kubernetes' `int64` fields take
/// them: a whole number from 0 to `i64::MAX`, or a 400. Values that big are
/// bounded where they are used (see [`MAX_WATCH_TIMEOUT`]).
fn parse_u64(pairs: &[(String, String)], name: &str) -> Result<Option<u64>, Status> {
    get(pairs, name)
        .filter(|v| !v.is_empty())
        .map(|v| match v.parse::<i64>() {
            Ok(n) if n >= 0 => Ok(n.unsigned_abs()),
            _ => Err(Status::bad_request(format!(
                "invalid value for {name}: {:?} is not a whole number from 0 to {}",
                shorten(v),
                i64::MAX
            ))),
        })
        .transpose()
}

/// A value quoted back in a message, cut to a readable length.
fn shorten(value: &str) -> String {
    const SHOWN: usize = 64;
    match value.char_indices().nth(SHOWN) {
        Some((at, _)) => format!("{}…", &value[..at]),
        None => value.to_string(),
    }
}

/// Reads the parameters of a GET on a collection of `rt`. Selectors that do
/// not parse are a 400, as in the apiserver.
pub fn collection(
    pairs: &[(String, String)],
    rt: ResourceType,
    watch_prefix: bool,
) -> Result<CollectionParams, Status> {
    let labels = LabelSelector::parse(get(pairs, "labelSelector").unwrap_or(""))
        .map_err(|e| Status::bad_request(e.to_string()))?;
    let fields = FieldSelector::parse(get(pairs, "fieldSelector").unwrap_or(""), rt)
        .map_err(|e| Status::bad_request(e.to_string()))?;
    let text = |name| get(pairs, name).filter(|v| !v.is_empty()).map(String::from);
    let list = ListOptions {
        resource_version: text("resourceVersion"),
        resource_version_match: text("resourceVersionMatch"),
        limit: parse_u64(pairs, "limit")?,
        continue_token: text("continue"),
        labels,
        fields,
    };
    let timeout = parse_u64(pairs, "timeoutSeconds")?
        .filter(|&s| s > 0)
        .map_or_else(default_watch_timeout, Duration::from_secs)
        .min(MAX_WATCH_TIMEOUT);
    Ok(CollectionParams {
        watch: watch_prefix || parse_bool(pairs, "watch")?,
        list,
        timeout,
        allow_bookmarks: parse_bool(pairs, "allowWatchBookmarks")?,
    })
}

/// `gracePeriodSeconds` from the query, when given.
pub fn grace_period(pairs: &[(String, String)]) -> Result<Option<u64>, Status> {
    parse_u64(pairs, "gracePeriodSeconds")
}

#[cfg(test)]
mod tests {
    use super::*;
    use watchlife_controlplane::resource::{CONFIGMAPS, PODS};

    #[test]
    fn reads_list_and_watch_parameters() {
        let p = pairs(Some(
            "watch=1&resourceVersion=12&labelSelector=app%3Dweb&fieldSelector=spec.nodeName%3Dn1&timeoutSeconds=5&allowWatchBookmarks=true&limit=3",
        ));
        let c = collection(&p, PODS, false).unwrap();
        assert!(c.watch && c.allow_bookmarks);
        assert_eq!(c.list.resource_version.as_deref(), Some("12"));
        assert_eq!(c.list.limit, Some(3));
        assert_eq!(c.timeout, Duration::from_secs(5));
        assert_eq!(c.list.labels, LabelSelector::parse("app=web").unwrap());
        assert!(!c.list.fields.is_empty());
    }

    #[test]
    fn bad_values_are_bad_requests() {
        for q in [
            "watch=maybe",
            "limit=-1",
            "limit=18446744073709551615",
            "labelSelector=a%20b",
            "timeoutSeconds=soon",
            "timeoutSeconds=18446744073709551615",
            "timeoutSeconds=1e9",
        ] {
            let err = collection(&pairs(Some(q)), PODS, false).unwrap_err();
            assert_eq!(err.code, 400, "{q}");
        }
        let err = collection(
            &pairs(Some("fieldSelector=spec.nodeName%3Dn")),
            CONFIGMAPS,
            false,
        )
        .unwrap_err();
        assert_eq!(err.message, "field label not supported: spec.nodeName");
    }

    #[test]
    fn a_watch_without_timeout_lasts_a_random_30_to_60_minutes() {
        let timeouts: Vec<_> = (0..64)
            .map(|_| {
                collection(&pairs(Some("watch=1")), PODS, false)
                    .unwrap()
                    .timeout
            })
            .collect();
        let (min, max) = (Duration::from_secs(1800), Duration::from_secs(3600));
        assert!(
            timeouts.iter().all(|t| *t >= min && *t < max),
            "{timeouts:?}"
        );
        assert!(
            timeouts.iter().any(|t| *t != timeouts[0]),
            "spread, not one value: {timeouts:?}"
        );
    }

    #[test]
    fn long_timeouts_are_held_to_a_day() {
        let huge = format!("watch=1&timeoutSeconds={}", i64::MAX);
        let c = collection(&pairs(Some(&huge)), PODS, false).unwrap();
        assert_eq!(c.timeout, MAX_WATCH_TIMEOUT);
        let long = "x".repeat(10_000);
        let err = collection(&pairs(Some(&format!("limit={long}"))), PODS, false).unwrap_err();
        assert!(err.message.len() < 300, "{}", err.message);
    }
}
