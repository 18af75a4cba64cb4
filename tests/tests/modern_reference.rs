//! client-go v0.36.4's dynamic informer against a v1.36 apiserver: what it
//! requests and what its handler is told, in the cases watchlife's bridge
//! is compared with it. Each test runs its own cluster and its own informer.
//!
//! Seen on this server (the assertions below hold it to that):
//! - by default client-go streams the initial list: its first request is a
//!   WATCH with `sendInitialEvents=true`, `resourceVersionMatch=NotOlderThan`
//!   and `allowWatchBookmarks=true`; each object comes as OnAdd with
//!   isInInitialList, and the informer syncs at the bookmark that ends them;
//! - a server without WatchList answers that request 422, and client-go
//!   falls back to `LIST ?limit=500&resourceVersion=0` and a plain WATCH;
//! - with `KUBE_FEATURE_WatchListClient=false`, client-go LISTs then WATCHes;
//! - after a crash during which an object is deleted in etcd and etcd is
//!   compacted, an informer that had watched for a while re-WATCHes from its
//!   last resourceVersion: refused or reset while the apiserver is down,
//!   429 while the resource's watch cache fills, then a 200 stream whose
//!   one event is an ERROR 410 ("too old resource version"); about a second
//!   later a streaming relist from that resourceVersion brings OnDelete with
//!   DeletedFinalStateUnknown for the deleted object and OnUpdate (same
//!   resourceVersion) for the others. (Had its watch ended within a second
//!   of starting, with no event, client-go would have called it "very
//!   short" and gone straight to the streaming relist.)

use serde_json::json;
use std::time::{Duration, Instant};
use watchlife_protocol::Callback;
use watchlife_tests::modern_cluster::reference::{
    self, Line, Reference, Request, RequestKind, Trace,
};
use watchlife_tests::modern_cluster::{self, ModernCluster, NAMESPACE, Options};

/// How long the informer may take to start, list and sync on 2 busy cores.
const SYNC: Duration = Duration::from_secs(30);

/// How long a handler call may take to follow a write.
const EVENT: Duration = Duration::from_secs(10);

/// How long the informer may take to notice a deletion it missed: its
/// re-WATCHes fail for a few seconds while the apiserver restarts, about a
/// second apart here, but client-go's backoff grows to tens of seconds
/// when failures go on (up to 30 s between tries).
const RELIST: Duration = Duration::from_secs(60);

/// Longer than client-go's "very short watch" (a watch that ends within a
/// second of its start with no event is treated as an error).
const PAST_A_VERY_SHORT_WATCH: Duration = Duration::from_millis(1500);

/// Starts the reference informer on the cluster's widgets, its stderr in
/// the cluster's directory.
fn start_reference(cluster: &ModernCluster, options: &reference::Options) -> Reference {
    Reference::start(
        cluster.kubeconfig(),
        options,
        Trace::new(Instant::now()),
        &cluster.dir().join("client-go.log"),
    )
}

/// Creates the widgets `names` and returns their resourceVersions in order.
async fn create_widgets(cluster: &ModernCluster, names: &[&str]) -> Vec<String> {
    let mut rvs = Vec::new();
    for name in names {
        rvs.push(
            cluster
                .create_widget(NAMESPACE, name, json!({"size": 1}))
                .await,
        );
    }
    rvs
}

/// Waits for HasSynced and returns the resourceVersion it came at.
async fn synced(trace: &Trace) -> String {
    trace
        .wait_for("synced", SYNC, |lines| {
            lines.iter().any(|l| matches!(l, Line::Synced { .. }))
        })
        .await;
    trace.synced().expect("it synced")
}

/// The OnAdd calls so far: (key, rv, isInInitialList), sorted by key.
fn adds(trace: &Trace) -> Vec<(String, String, bool)> {
    let mut adds: Vec<_> = trace
        .calls()
        .into_iter()
        .filter(|(call, _)| call.callback == Callback::OnAdd)
        .map(|(call, initial)| (call.key, call.rv, initial))
        .collect();
    adds.sort();
    adds
}

fn key(name: &str) -> String {
    format!("{NAMESPACE}/{name}")
}

/// `request` is a LIST of the widgets that asks for a page of 500 from the
/// watch cache (`resourceVersion=0`), client-go's first LIST.
fn assert_cache_list(request: &Request, trace: &Trace) {
    assert_eq!(request.kind(), RequestKind::List, "{}", trace.render());
    assert_eq!(
        request.query,
        "limit=500&resourceVersion=0",
        "{}",
        trace.render()
    );
}

/// `request` is a plain WATCH of the widgets from `rv`, with bookmarks.
fn assert_plain_watch(request: &Request, rv: &str, trace: &Trace) {
    assert_eq!(request.kind(), RequestKind::Watch, "{}", trace.render());
    assert_eq!(
        request.param("resourceVersion"),
        Some(rv),
        "{}",
        trace.render()
    );
    assert_eq!(
        request.param("allowWatchBookmarks"),
        Some("true"),
        "{}",
        trace.render()
    );
    assert_eq!(
        request.param("sendInitialEvents"),
        None,
        "{}",
        trace.render()
    );
}

#[tokio::test]
async fn watch_list_streams_the_initial_objects_then_watches_on() {
    let cluster = ModernCluster::start(Options::default()).await;
    eprintln!("package versions: {:?}", modern_cluster::package_versions());
    let rvs = create_widgets(&cluster, &["a", "b", "c"]).await;
    let client_go = start_reference(&cluster, &reference::Options::default());
    let trace = client_go.trace().clone();
    let synced_at = synced(&trace).await;

    let lines = trace.since(Duration::ZERO);
    assert_eq!(
        lines.first(),
        Some(&Line::Start {
            watch_list_client: true
        }),
        "WatchListClient is on by default in client-go v0.36"
    );
    let requests = trace.requests();
    let first = &requests[0];
    assert_eq!(first.method, "GET");
    assert_eq!(first.path, ModernCluster::widgets_path(NAMESPACE));
    assert_eq!(first.kind(), RequestKind::WatchList, "{}", trace.render());
    assert_eq!(first.param("resourceVersionMatch"), Some("NotOlderThan"));
    assert_eq!(first.param("allowWatchBookmarks"), Some("true"));
    // No resourceVersion: the newest state, as of the request.
    assert_eq!(first.param("resourceVersion"), None);
    assert_eq!(
        first.param_names(),
        [
            "allowWatchBookmarks",
            "resourceVersionMatch",
            "sendInitialEvents",
            "timeoutSeconds",
            "watch"
        ],
        "the query, in the order sent"
    );
    assert_eq!(trace.response_code(first.id), Some(200));
    assert_eq!(requests.len(), 1, "one request: {}", trace.render());

    // The stream: one ADDED per widget, then the bookmark that ends them,
    // at the newest widget's revision, where the informer synced.
    let bookmark = lines.iter().find_map(|l| match l {
        Line::WatchEvent(e) if e.initial_events_end => Some(e.clone()),
        _ => None,
    });
    let bookmark =
        bookmark.unwrap_or_else(|| panic!("no initial-events-end bookmark: {}", trace.render()));
    assert_eq!(bookmark.kind, "BOOKMARK");
    assert_eq!(bookmark.rv, rvs[2]);
    assert_eq!(synced_at, rvs[2]);
    assert_eq!(
        adds(&trace),
        [
            (key("a"), rvs[0].clone(), true),
            (key("b"), rvs[1].clone(), true),
            (key("c"), rvs[2].clone(), true),
        ]
    );

    // A widget created afterwards comes on the same stream, not in the
    // initial list.
    let d = cluster.create_widget(NAMESPACE, "d", json!({})).await;
    trace
        .wait_for("told of d", EVENT, |lines| {
            reference::calls(lines)
                .iter()
                .any(|(c, _)| c.key == key("d"))
        })
        .await;
    assert!(
        adds(&trace).contains(&(key("d"), d, false)),
        "{}",
        trace.render()
    );
    assert_eq!(
        trace.requests().len(),
        1,
        "still the first stream: {}",
        trace.render()
    );
}

#[tokio::test]
async fn a_server_without_watch_list_gets_list_then_watch() {
    let cluster = ModernCluster::start(Options::default().feature_gate("WatchList=false")).await;
    let rvs = create_widgets(&cluster, &["a", "b"]).await;
    let client_go = start_reference(&cluster, &reference::Options::default());
    let trace = client_go.trace().clone();
    let synced_at = synced(&trace).await;
    trace
        .wait_for("watching", SYNC, |lines| {
            reference::requests(lines).len() >= 3
        })
        .await;

    let requests = trace.requests();
    assert_eq!(
        requests[0].kind(),
        RequestKind::WatchList,
        "{}",
        trace.render()
    );
    assert_eq!(
        trace.response_code(requests[0].id),
        Some(422),
        "the server refuses the streaming list: {}",
        trace.render()
    );
    assert_cache_list(&requests[1], &trace);
    assert_eq!(trace.response_code(requests[1].id), Some(200));
    assert_eq!(synced_at, rvs[1]);
    assert_plain_watch(&requests[2], &synced_at, &trace);
    assert_eq!(
        adds(&trace),
        [
            (key("a"), rvs[0].clone(), true),
            (key("b"), rvs[1].clone(), true)
        ]
    );
}

#[tokio::test]
async fn a_client_without_watch_list_lists_then_watches() {
    let cluster = ModernCluster::start(Options::default()).await;
    let rvs = create_widgets(&cluster, &["a", "b"]).await;
    let options = reference::Options::default().client_feature("WatchListClient", false);
    let client_go = start_reference(&cluster, &options);
    let trace = client_go.trace().clone();
    let synced_at = synced(&trace).await;
    trace
        .wait_for("watching", SYNC, |lines| {
            reference::requests(lines).len() >= 2
        })
        .await;

    assert_eq!(
        trace.since(Duration::ZERO).first(),
        Some(&Line::Start {
            watch_list_client: false
        })
    );
    let requests = trace.requests();
    assert_cache_list(&requests[0], &trace);
    assert_eq!(synced_at, rvs[1]);
    assert_plain_watch(&requests[1], &synced_at, &trace);
    assert_eq!(requests.len(), 2, "{}", trace.render());
    assert_eq!(
        adds(&trace),
        [
            (key("a"), rvs[0].clone(), true),
            (key("b"), rvs[1].clone(), true)
        ]
    );
}

#[tokio::test]
async fn a_deletion_missed_during_a_crash_comes_as_final_state_unknown() {
    let mut cluster = ModernCluster::start(Options::default()).await;
    let rvs = create_widgets(&cluster, &["a", "b", "c"]).await;
    let client_go = start_reference(&cluster, &reference::Options::default());
    let trace = client_go.trace().clone();
    let synced_at = synced(&trace).await;
    assert_eq!(synced_at, rvs[2]);
    // An informer that has run a while, as a controller's has: a watch that
    // ends sooner, with no event, is "very short" to client-go, which then
    // starts over with a streaming list instead of re-WATCHing.
    tokio::time::sleep(PAST_A_VERY_SHORT_WATCH).await;

    cluster.crash_apiserver();
    let mark = trace.now();
    assert!(cluster.delete_widget_in_etcd(NAMESPACE, "b").await);
    let compacted = cluster.compact_etcd().await;
    assert!(compacted > rvs[2].parse().unwrap());
    cluster.start_apiserver().await;

    trace
        .wait_for("told that b is gone", RELIST, |lines| {
            reference::calls(lines)
                .iter()
                .any(|(c, _)| c.key == key("b") && c.callback == Callback::OnDelete)
        })
        .await;
    let after = trace.since(mark);
    let deletes: Vec<_> = reference::calls(&after)
        .into_iter()
        .filter(|(c, _)| c.callback == Callback::OnDelete)
        .map(|(c, _)| c)
        .collect();
    assert_eq!(deletes.len(), 1, "{}", trace.render());
    assert!(deletes[0].final_state_unknown, "{}", trace.render());
    // The tombstone holds the last state the informer knew.
    assert_eq!(deletes[0].rv, rvs[1]);

    // The survivors: OnUpdate with their unchanged resourceVersions.
    let mut updates: Vec<_> = reference::calls(&after)
        .into_iter()
        .filter(|(c, _)| c.callback == Callback::OnUpdate)
        .map(|(c, _)| (c.key, c.old_rv.unwrap_or_default(), c.rv))
        .collect();
    updates.sort();
    assert_eq!(
        updates,
        [
            (key("a"), rvs[0].clone(), rvs[0].clone()),
            (key("c"), rvs[2].clone(), rvs[2].clone()),
        ],
        "{}",
        trace.render()
    );

    // What led there: WATCHes from the last resourceVersion that failed
    // (410 at the latest), then a streaming relist from it that succeeded.
    let requests = reference::requests(&after);
    let relist = requests
        .iter()
        .find(|r| r.kind() == RequestKind::WatchList)
        .unwrap_or_else(|| panic!("no streaming relist: {}", trace.render()));
    assert_eq!(
        relist.param("resourceVersion"),
        Some(synced_at.as_str()),
        "{}",
        trace.render()
    );
    assert_eq!(relist.param("resourceVersionMatch"), Some("NotOlderThan"));
    assert_eq!(
        trace.response_code(relist.id),
        Some(200),
        "{}",
        trace.render()
    );
    let before: Vec<&Request> = requests.iter().take_while(|r| r.id != relist.id).collect();
    assert!(
        !before.is_empty(),
        "it tried to re-WATCH first: {}",
        trace.render()
    );
    for request in &before {
        assert_plain_watch(request, &synced_at, &trace);
    }
    // The 410 comes as the ERROR event of a 200 stream.
    let expired = after
        .iter()
        .any(|l| matches!(l, Line::WatchEvent(e) if e.kind == "ERROR" && e.code == 410));
    assert!(
        expired,
        "a 410 for the last resourceVersion: {}",
        trace.render()
    );
    eprintln!("client-go's informer around the crash:\n{}", trace.render());
}
