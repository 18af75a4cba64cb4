//! The demo API's query parameters, fuzzed: whatever a client writes in a
//! query string, reading it never panics, and it ends in parameters within
//! their bounds or a 400 that says which.

mod support;

use proptest::prelude::*;
use watchlife_controlplane::resource::PODS;
use watchlife_demo_apiserver::params::{self, MAX_WATCH_TIMEOUT};

/// Values a hostile or careless client sends: numbers at and past every
/// integer's edge, signs, exponents, selectors' operators, non-ASCII, empty.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        Just("18446744073709551616".to_string()),
        Just("9223372036854775808".to_string()),
        Just("1e99".to_string()),
        Just("-0".to_string()),
        "[a-z=!,()\\. ]{0,40}",
        "\\PC{0,24}",
        Just(String::new()),
    ]
}

fn query() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        (
            proptest::sample::select(support::QUERY_NAMES.to_vec()),
            value(),
        ),
        0..8,
    )
    .prop_map(|pairs| {
        let mut q = form_urlencoded::Serializer::new(String::new());
        for (name, value) in pairs {
            q.append_pair(name, &value);
        }
        q.finish()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn any_query_is_read_within_bounds_or_refused_with_400(q in query(), watch_prefix in any::<bool>()) {
        let pairs = params::pairs(Some(&q));
        match params::collection(&pairs, PODS, watch_prefix) {
            Ok(p) => {
                prop_assert!(p.timeout <= MAX_WATCH_TIMEOUT);
                prop_assert!(p.list.limit.is_none_or(|l| l <= i64::MAX as u64));
            }
            Err(status) => {
                prop_assert_eq!(status.code, 400);
                prop_assert!(!status.message.is_empty());
            }
        }
        match params::grace_period(&pairs) {
            Ok(g) => prop_assert!(g.is_none_or(|g| g <= i64::MAX as u64)),
            Err(status) => prop_assert_eq!(status.code, 400),
        }
    }

    #[test]
    fn raw_query_bytes_never_panic(raw in "\\PC{0,200}") {
        let pairs = params::pairs(Some(&raw));
        let _ = params::collection(&pairs, PODS, false);
        let _ = params::grace_period(&pairs);
    }
}
