//! watchlife against client-go v1.20.2 itself, through faults, on a real
//! kube-apiserver: both list-watch the configmaps of `default` side by side
//! (see `watchlife_tests::differential` for what must be equal), with writes
//! before and after each fault. One cluster per test, so they run in parallel.
//!
//! client-go's Reflector, for reference: LIST rv="0" limit=500 first; WATCH
//! from the list's rv; a WATCH that ends is made again from the last rv; a
//! 410 on the WATCH is one LIST from the last rv with limit=0 (so that the
//! watch cache serves it); on that relist, OnUpdate for each object still
//! there and OnDelete with DeletedFinalStateUnknown for each one gone.

use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use watchlife_tests::differential::Pair;
use watchlife_tests::differential::trace::{Step, Trace};
use watchlife_tests::real_cluster::RealCluster;

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// A short server-side watch timeout, so that watches end during the test,
/// yet well over the second under which client-go calls a watch that
/// brought nothing "very short" and lists again.
const SHORT_WATCH_TIMEOUT_SECONDS: u64 = 4;

/// client-go's Reflector waits at least this long before it tries a failed
/// LIST again (its backoff starts at 800 ms, with jitter that only adds).
const MIN_BACKOFF: Duration = Duration::from_millis(800);

/// How much earlier than sent a LIST may seem to go out: the test stamps
/// each step when it reads it, and a frame can wait a little in the bridge
/// or on the socket while the next one does not.
const READ_DELAY_SLACK: Duration = Duration::from_millis(50);

/// The user with no rights in the RBAC test.
const NOBODY: &str = "nobody";

async fn create(cluster: &RealCluster, name: &str) {
    let reply = cluster
        .client()
        .post(
            CONFIGMAPS,
            &json!({"metadata": {"name": name}, "data": {"v": "0"}}),
        )
        .await;
    assert_eq!(reply.code, 201, "creating {name}: {}", reply.text);
}

/// Changes the data, so that the resourceVersion moves.
async fn update(cluster: &RealCluster, name: &str) {
    static CHANGES: AtomicU64 = AtomicU64::new(1);
    let v = CHANGES.fetch_add(1, Ordering::Relaxed).to_string();
    let reply = cluster
        .client()
        .patch(
            &format!("{CONFIGMAPS}/{name}"),
            "application/merge-patch+json",
            &json!({"data": {"v": v}}),
        )
        .await;
    assert_eq!(reply.code, 200, "updating {name}: {}", reply.text);
}

async fn delete(cluster: &RealCluster, name: &str) {
    let reply = cluster
        .client()
        .delete(&format!("{CONFIGMAPS}/{name}"))
        .await;
    assert_eq!(reply.code, 200, "deleting {name}: {}", reply.text);
}

/// Writes a Secret in another namespace: etcd's revision moves past the
/// last resourceVersion of `default`'s configmaps, which neither side sees
/// (not even in a BOOKMARK: those carry the configmaps watch cache's own).
async fn write_elsewhere(cluster: &RealCluster) {
    let reply = cluster
        .client()
        .post(
            "/api/v1/namespaces/kube-system/secrets",
            &json!({"metadata": {"generateName": "elsewhere-"}}),
        )
        .await;
    assert_eq!(reply.code, 201, "{}", reply.text);
}

/// A cluster with `names` created, and both sides started on it, past their
/// first LIST and WATCH and holding what the cluster holds.
async fn started(names: &[&str], watch_timeout_seconds: Option<u64>) -> (RealCluster, Pair) {
    let cluster = RealCluster::start().await;
    for name in names {
        create(&cluster, name).await;
    }
    let mut pair = Pair::start(&cluster, cluster.kubeconfig(), watch_timeout_seconds).await;
    pair.wait_for("a LIST, then a WATCH", Trace::watching).await;
    pair.converge(&cluster, "the first LIST").await;
    (cluster, pair)
}

/// Everything compared, then the report.
async fn compare_all(cluster: &RealCluster, mut pair: Pair) {
    pair.check_lists();
    pair.check_calls();
    pair.check_watch_rvs();
    pair.check_final_objects(cluster.kubeconfig(), cluster.dir())
        .await;
    pair.finish();
}

#[tokio::test]
async fn a_restart_after_writes_elsewhere_is_a_410_then_one_unpaged_list_from_the_last_rv() {
    let (mut cluster, mut pair) = started(&["a", "b"], None).await;
    update(&cluster, "a").await;
    create(&cluster, "c").await;
    pair.converge(&cluster, "the writes before the restart")
        .await;

    write_elsewhere(&cluster).await;
    let mark = pair.mark();
    cluster.restart_apiserver().await;
    pair.wait_for("a LIST and a WATCH after the restart", |t| {
        t.relisted_since(mark)
    })
    .await;

    create(&cluster, "d").await;
    delete(&cluster, "b").await;
    update(&cluster, "c").await;
    pair.converge(&cluster, "the writes after the restart")
        .await;
    compare_all(&cluster, pair).await;
}

/// DeltaFIFO keeps one entry per key with its deltas in order: changes
/// that come faster than the informer pops reach the handler as that key's
/// calls, each OnUpdate with the object before it; a delete and a create of
/// one name are two objects, not a merged one.
#[tokio::test]
async fn quick_changes_to_one_key_reach_the_handler_one_by_one_in_order() {
    let (cluster, mut pair) = started(&["a"], None).await;
    create(&cluster, "q").await;
    tokio::join!(
        update(&cluster, "q"),
        update(&cluster, "q"),
        update(&cluster, "a")
    );
    pair.converge(&cluster, "three quick changes").await;
    delete(&cluster, "q").await;
    create(&cluster, "q").await;
    update(&cluster, "q").await;
    pair.converge(&cluster, "a delete, a create and an update of one name")
        .await;
    compare_all(&cluster, pair).await;
}

#[tokio::test]
async fn an_outage_that_deletes_in_etcd_and_compacts_ends_in_deleted_final_state_unknown() {
    let (mut cluster, mut pair) = started(&["a", "b", "c"], None).await;
    update(&cluster, "a").await;
    pair.converge(&cluster, "the writes before the outage")
        .await;

    let mark = pair.mark();
    cluster.stop_apiserver();
    let deleted = cluster
        .etcdctl(&["del", "/registry/configmaps/default/b"])
        .await;
    assert_eq!(deleted.trim(), "1", "etcdctl del deletes one key");
    cluster.compact_etcd().await;
    cluster.start_apiserver().await;
    pair.wait_for("a LIST and a WATCH after the outage", |t| {
        t.relisted_since(mark)
    })
    .await;

    create(&cluster, "d").await;
    update(&cluster, "c").await;
    pair.converge(&cluster, "the writes after the outage").await;
    compare_all(&cluster, pair).await;
}

#[tokio::test]
async fn a_watch_that_times_out_is_made_again_from_the_last_rv_with_no_list() {
    let (cluster, mut pair) = started(&["a", "b"], Some(SHORT_WATCH_TIMEOUT_SECONDS)).await;
    let mark = pair.mark();
    pair.wait_for("a WATCH again after the first timed out", |t| {
        t.watched_since(mark)
    })
    .await;
    // One write at a time, each followed by a WATCH again on both sides:
    // a write is never split by a re-WATCH of one side only.
    update(&cluster, "a").await;
    let mark = pair.mark();
    pair.converge(&cluster, "an update").await;
    pair.wait_for("a WATCH again after the update", |t| t.watched_since(mark))
        .await;
    delete(&cluster, "b").await;
    let mark = pair.mark();
    pair.converge(&cluster, "a delete").await;
    pair.wait_for("a WATCH again after the delete", |t| t.watched_since(mark))
        .await;

    // Each side asks for its own timeout: client-go for the one it was
    // given, watchlife for a random one in [N, 2N).
    let n = SHORT_WATCH_TIMEOUT_SECONDS;
    let asked = |t: &Trace| t.watches().into_iter().map(|(_, s)| s).collect::<Vec<_>>();
    let (go, wl) = (asked(&pair.client_go), asked(&pair.watchlife));
    if go.iter().any(|&s| s != n) {
        pair.problem(format!("client-go's WATCHes asked for {go:?} s, not {n}"));
    }
    if wl.iter().any(|&s| !(n..2 * n).contains(&s)) {
        pair.problem(format!(
            "watchlife's WATCHes asked for {wl:?} s, not each in [{n}, {})",
            2 * n
        ));
    }
    compare_all(&cluster, pair).await;
}

#[tokio::test]
async fn a_410_on_the_watch_after_compaction_is_one_list_served_by_the_watch_cache() {
    let (mut cluster, mut pair) = started(&["a", "b"], None).await;
    update(&cluster, "a").await;
    create(&cluster, "c").await;
    pair.converge(&cluster, "the writes before the compaction")
        .await;

    // etcd forgets every revision before now, the last rv of both sides
    // among them; the restarted apiserver's watch cache starts from now.
    write_elsewhere(&cluster).await;
    cluster.compact_etcd().await;
    let mark = pair.mark();
    cluster.restart_apiserver().await;
    pair.wait_for("a LIST and a WATCH after the 410", |t| {
        t.relisted_since(mark)
    })
    .await;

    update(&cluster, "c").await;
    delete(&cluster, "a").await;
    create(&cluster, "d").await;
    pair.converge(&cluster, "the writes after the 410").await;
    compare_all(&cluster, pair).await;
}

#[tokio::test]
async fn a_forbidden_list_is_tried_again_after_a_backoff_until_a_role_allows_it() {
    let cluster = RealCluster::start().await;
    create(&cluster, "a").await;
    create(&cluster, "b").await;
    let nobody = cluster.kubeconfig_acting_as("nobody.kubeconfig", NOBODY, &[]);
    let mut pair = Pair::start(&cluster, &nobody, None).await;
    pair.wait_for("three forbidden LISTs", |t| t.failed_lists(3))
        .await;

    grant_configmap_reading(&cluster, NOBODY).await;
    pair.wait_for("a LIST allowed, then a WATCH", Trace::watching)
        .await;
    pair.converge(&cluster, "the first LIST allowed").await;
    create(&cluster, "c").await;
    delete(&cluster, "a").await;
    pair.converge(&cluster, "the writes after the grant").await;

    let sides = [
        ("client-go", pair.client_go.clone()),
        ("watchlife", pair.watchlife.clone()),
    ];
    for (side, trace) in sides {
        for problem in backoff_problems(&trace) {
            pair.problem(format!("{side}: {problem}"));
        }
    }
    compare_all(&cluster, pair).await;
}

/// Each LIST after a failed one must come at least [`MIN_BACKOFF`] later,
/// and the failures must be the server's refusal.
fn backoff_problems(trace: &Trace) -> Vec<String> {
    let lists = trace.lists();
    let mut problems = Vec::new();
    for pair in lists.windows(2) {
        let gap = pair[1].at.saturating_sub(pair[0].at);
        if pair[0].ok == Some(false) && gap + READ_DELAY_SLACK < MIN_BACKOFF {
            problems.push(format!(
                "a LIST {gap:?} after a failed one, sooner than the {MIN_BACKOFF:?} backoff"
            ));
        }
    }
    for entry in trace.entries() {
        if let Step::ListFailed { error } = entry.step
            && !error.contains("forbidden")
        {
            problems.push(format!("a LIST failed otherwise than forbidden: {error}"));
        }
    }
    problems
}

/// A Role reading configmaps in `default`, bound to `user`.
async fn grant_configmap_reading(cluster: &RealCluster, user: &str) {
    const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1/namespaces/default";
    let client = cluster.client();
    let role = client
        .post(
            &format!("{RBAC}/roles"),
            &json!({
                "metadata": {"name": "configmap-reader"},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}],
            }),
        )
        .await;
    assert_eq!(role.code, 201, "{}", role.text);
    let binding = client
        .post(
            &format!("{RBAC}/rolebindings"),
            &json!({
                "metadata": {"name": "configmap-reader"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "configmap-reader"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
            }),
        )
        .await;
    assert_eq!(binding.code, 201, "{}", binding.text);
}
