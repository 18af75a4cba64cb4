//! watchlife `--kubernetes 1.36` against client-go v0.36.4 itself, on a
//! v0.36.4 apiserver and etcd 3.5: both list-watch the widgets of
//! `default` side by side (see `watchlife_tests::differential::modern` for
//! what must be equal), through writes and faults. One cluster per test.
//!
//! client-go v0.36.4, for reference (`tools/cache/reflector.go`): a
//! streaming list first (`sendInitialEvents=true`), its objects as OnAdd
//! with isInInitialList, synced at the initial-events-end bookmark; the same
//! stream goes on as the watch; a broken watch is made again from the last
//! resourceVersion; 429 and "connection refused" wait and try again; a 410
//! ends the cycle, and the next streams from the last resourceVersion; a
//! server without WatchList (422) makes each cycle fall back to LIST then
//! WATCH; `KUBE_FEATURE_WatchListClient=false` lists then watches.

use serde_json::json;
use std::time::Duration;
use watchlife_tests::differential::modern::ModernPair;
use watchlife_tests::modern_cluster::reference;
use watchlife_tests::modern_cluster::{ModernCluster, NAMESPACE, Options};

/// Longer than client-go's "very short watch" (a watch that ends within a
/// second of its start with no event is an error, which would turn the
/// crash below into a different path), with room for the bridge's start.
const WATCHED_FOR_A_WHILE: Duration = Duration::from_millis(3000);

/// How long the graceful restart may take before it is a kill.
const GRACE: Duration = Duration::from_secs(10);

/// A cluster with widgets a, b and c.
async fn cluster_with_widgets(options: Options) -> ModernCluster {
    let cluster = ModernCluster::start(options).await;
    for name in ["a", "b", "c"] {
        cluster
            .create_widget(NAMESPACE, name, json!({"size": 1}))
            .await;
    }
    cluster
}

/// Some writes both sides must follow: one new, one changed, one gone.
async fn write(cluster: &ModernCluster, new: &str, changed: &str, gone: &str) {
    cluster
        .create_widget(NAMESPACE, new, json!({"size": 2}))
        .await;
    cluster
        .update_widget(NAMESPACE, changed, json!({"size": 3}))
        .await;
    cluster.delete_widget(NAMESPACE, gone).await;
}

fn check(mut pair: ModernPair) {
    pair.check_requests();
    pair.check_calls();
    pair.finish();
}

/// After a restart: the lists served, not every failed try (see
/// `ModernPair::check_lists_served`).
fn check_after_restart(mut pair: ModernPair) {
    pair.check_lists_served();
    pair.check_calls();
    pair.finish();
}

#[tokio::test]
async fn a_streaming_list_then_the_same_stream_as_the_watch() {
    let cluster = cluster_with_widgets(Options::default()).await;
    let mut pair = ModernPair::start(&cluster, &reference::Options::default(), &[], &[]).await;
    pair.converge(&cluster, "the initial list").await;
    write(&cluster, "d", "a", "b").await;
    pair.converge(&cluster, "the writes").await;
    check(pair);
}

#[tokio::test]
async fn a_graceful_restart_rewatches_from_the_last_resource_version() {
    let mut cluster = cluster_with_widgets(Options::default()).await;
    let mut pair = ModernPair::start(&cluster, &reference::Options::default(), &[], &[]).await;
    pair.converge(&cluster, "the initial list").await;
    tokio::time::sleep(WATCHED_FOR_A_WHILE).await;
    cluster.restart_apiserver_gracefully(GRACE).await;
    write(&cluster, "d", "c", "a").await;
    pair.converge(&cluster, "the writes after the restart")
        .await;
    // Whether a side re-watches in time or meets the server's first moments
    // (a reset TLS handshake, a 404 before the custom resource is served
    // again) and relists depends on when its retry lands, for client-go as
    // for watchlife: only what both end up holding is compared here. The
    // crash below, where compaction makes both relist, compares the rest.
    pair.finish();
}

#[tokio::test]
async fn a_deletion_missed_in_a_crash_and_compaction_comes_as_final_state_unknown() {
    let mut cluster = cluster_with_widgets(Options::default()).await;
    let mut pair = ModernPair::start(&cluster, &reference::Options::default(), &[], &[]).await;
    pair.converge(&cluster, "the initial list").await;
    tokio::time::sleep(WATCHED_FOR_A_WHILE).await;
    cluster.crash_apiserver();
    assert!(cluster.delete_widget_in_etcd(NAMESPACE, "b").await);
    cluster.compact_etcd().await;
    cluster.start_apiserver().await;
    pair.converge(&cluster, "the relist after the crash").await;
    check_after_restart(pair);
}

#[tokio::test]
async fn a_server_without_watch_list_gets_list_then_watch_from_both() {
    let cluster = cluster_with_widgets(Options::default().feature_gate("WatchList=false")).await;
    let mut pair = ModernPair::start(&cluster, &reference::Options::default(), &[], &[]).await;
    pair.converge(&cluster, "the fallback LIST").await;
    write(&cluster, "d", "a", "c").await;
    pair.converge(&cluster, "the writes").await;
    check(pair);
}

#[tokio::test]
async fn with_client_gos_own_variable_both_list_then_watch() {
    let cluster = cluster_with_widgets(Options::default()).await;
    let gate = [("KUBE_FEATURE_WatchListClient", "false")];
    let options = reference::Options::default().client_feature("WatchListClient", false);
    let mut pair = ModernPair::start(&cluster, &options, &[], &gate).await;
    pair.converge(&cluster, "the LIST").await;
    write(&cluster, "d", "b", "a").await;
    pair.converge(&cluster, "the writes").await;
    check(pair);
}
