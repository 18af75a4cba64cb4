//! The watch-semantics suite against the demo API, in process.
//!
//! The same checks (`watchlife_testkit::suite`) run against a real
//! kube-apiserver in `tests/tests/real_cluster_semantics.rs`.

mod support;

use serde_json::json;
use watchlife_controlplane::cacher::watcher::DEMO_BOOKMARK_FREQUENCY;
use watchlife_testkit::client::Client;
use watchlife_testkit::suite::{Cluster, Compact};

impl Compact for support::Server {
    /// The demo keeps no watch history beside its store: compacting the
    /// store is all.
    async fn compact(&mut self) {
        self.cp.compact();
    }
}

async fn demo() -> (support::Server, Cluster) {
    let server = support::start().await;
    let cluster = Cluster {
        client: Client::new(&server.base, None),
        namespace: "default".into(),
        // One bookmark period and a margin; the watch ends at this timeout
        // only if no bookmark came.
        bookmark_within_seconds: DEMO_BOOKMARK_FREQUENCY / 1_000_000 * 3,
    };
    (server, cluster)
}

watchlife_testkit::watch_semantics_tests!(demo());

#[tokio::test]
async fn a_watch_list_streams_the_state_then_the_initial_events_end_bookmark() {
    let server = support::start().await;
    let c = Client::new(&server.base, None);
    for name in ["a", "b"] {
        c.post(
            "/api/v1/namespaces/default/configmaps",
            &json!({"metadata": {"name": name}}),
        )
        .await;
    }
    let mut w = c
        .stream(
            "/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true\
             &resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=2",
        )
        .await;
    let mut events = Vec::new();
    while let Some(e) = w.next().await {
        events.push(e);
    }
    let types: Vec<_> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["ADDED", "ADDED", "BOOKMARK"], "{events:?}");
    let end = &events[2]["object"]["metadata"];
    assert_eq!(end["annotations"]["k8s.io/initial-events-end"], "true");
    let rv: u64 = end["resourceVersion"].as_str().unwrap().parse().unwrap();
    assert!(rv >= server.cp.revision() - 1, "the cache caught up first");
}

#[tokio::test]
async fn a_watch_list_is_refused_with_the_gate_off_and_ignored_by_v1_20() {
    let mut off = watchlife_controlplane::Profile::default();
    off.set(watchlife_controlplane::Gate::WatchList, false)
        .unwrap();
    let server = support::start_profile(off).await;
    let query = "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan";
    let refused = support::raw(
        &server.base,
        &format!(
            "GET /api/v1/namespaces/default/configmaps?{query} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        ),
    )
    .await;
    assert_eq!(refused.code, 422, "{}", refused.body);
    assert!(
        refused.body.contains(
            "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"
        ),
        "{}",
        refused.body
    );
}
