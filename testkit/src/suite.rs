//! The watch-semantics suite, written against the Kubernetes HTTP API only,
//! so that the same checks run against the demo API and a real
//! kube-apiserver: each check takes a [`Cluster`] (a base URL, an optional
//! bearer token, a namespace to work in) and, where it needs one, a way to
//! compact the store ([`Compact`]). [`watch_semantics_tests!`](crate::watch_semantics_tests)
//! makes one test per check, so every server runs them all.
//!
//! Every check works on ConfigMaps labelled with its own run label, so other
//! writers in the cluster do not disturb it, and opens every watch with a
//! `timeoutSeconds`, so a missing event ends the stream and fails the check
//! instead of hanging it.

use crate::client::{Client, Reply, Stream, summary};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};

/// How long a suite watch may stay open; only reached when an expected event
/// never comes.
pub const WATCH_TIMEOUT_SECONDS: u64 = 30;

/// The cluster under test.
pub struct Cluster {
    pub client: Client,
    pub namespace: String,
    /// The `timeoutSeconds` of the bookmark check's watch: the server must
    /// send the BOOKMARK it waits for before that watch ends. The demo API
    /// sends one every few seconds; a v1.20 kube-apiserver about a minute
    /// after the watch starts or 2 s before its timeout, whichever is sooner.
    pub bookmark_within_seconds: u64,
}

/// What the compaction check needs from a server besides its HTTP API.
pub trait Compact {
    /// Leaves the server unable to serve any revision before this call: the
    /// store compacted at its current revision, and any watch history kept
    /// beside the store forgotten (a kube-apiserver's watch cache serves
    /// watches from old revisions without asking etcd).
    fn compact(&mut self) -> impl Future<Output = ()>;
}

/// A label value unique to one check in this process.
fn run_label(check: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{check}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn rv(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no resourceVersion in {obj}"))
}

impl Cluster {
    fn configmaps(&self) -> String {
        format!("/api/v1/namespaces/{}/configmaps", self.namespace)
    }

    async fn create(&self, label: &str, name: &str) -> Value {
        let reply = self
            .client
            .post(
                &self.configmaps(),
                &json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": name, "labels": {"suite": label}},
                        "data": {"v": "0"}}),
            )
            .await;
        assert_eq!(reply.code, 201, "create {name}: {}", reply.text);
        reply.body
    }

    async fn set(&self, name: &str, value: &str) -> Value {
        let reply = self
            .client
            .patch(
                &format!("{}/{name}", self.configmaps()),
                "application/merge-patch+json",
                &json!({"data": {"v": value}}),
            )
            .await;
        assert_eq!(reply.code, 200, "patch {name}: {}", reply.text);
        reply.body
    }

    async fn remove(&self, name: &str) {
        let reply = self
            .client
            .delete(&format!("{}/{name}", self.configmaps()))
            .await;
        assert_eq!(reply.code, 200, "delete {name}: {}", reply.text);
    }

    async fn list(&self, query: &str) -> Reply {
        self.client
            .get(&format!("{}?{query}", self.configmaps()))
            .await
    }

    async fn watch(&self, query: &str) -> Stream {
        let stream = self
            .client
            .stream(&format!(
                "{}?watch=1&timeoutSeconds={WATCH_TIMEOUT_SECONDS}&{query}",
                self.configmaps()
            ))
            .await;
        assert_eq!(stream.code, 200);
        stream
    }
}

/// Reads changes until the ADDED event of `sentinel`, which the check
/// creates after its last change of interest: everything before it is what
/// the watch delivered, so "exactly these events" is checked without
/// waiting for something not to happen.
async fn until_sentinel(stream: &mut Stream, sentinel: &str) -> Vec<(String, String)> {
    let mut seen = Vec::new();
    loop {
        let event = stream
            .next_change()
            .await
            .unwrap_or_else(|| panic!("the watch ended before {sentinel}; saw {seen:?}"));
        let s = summary(&event);
        if s == ("ADDED".to_string(), sentinel.to_string()) {
            return seen;
        }
        seen.push(s);
    }
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(t, n)| (t.to_string(), n.to_string()))
        .collect()
}

/// LIST, then WATCH from the list's resourceVersion: the watch delivers
/// exactly the changes made after the list, in order, and none before.
pub async fn list_then_watch_sees_exactly_later_changes(c: &Cluster) {
    let label = run_label("lw");
    c.create(&label, &format!("{label}-a")).await;
    let list = c.list(&format!("labelSelector=suite%3D{label}")).await;
    assert_eq!(list.code, 200);
    assert_eq!(list.body["items"].as_array().unwrap().len(), 1);
    let list_rv = list.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    c.create(&label, &format!("{label}-b")).await;
    c.set(&format!("{label}-a"), "1").await;
    let mut w = c
        .watch(&format!(
            "resourceVersion={list_rv}&labelSelector=suite%3D{label}"
        ))
        .await;
    c.remove(&format!("{label}-b")).await;
    c.create(&label, &format!("{label}-end")).await;
    let seen = until_sentinel(&mut w, &format!("{label}-end")).await;
    assert_eq!(
        seen,
        pairs(&[
            ("ADDED", &format!("{label}-b")),
            ("MODIFIED", &format!("{label}-a")),
            ("DELETED", &format!("{label}-b")),
        ])
    );
}

/// A watch without a resourceVersion, or from "0", starts with a synthetic
/// ADDED event for every existing object, then the changes. A LIST without
/// a resourceVersion is a consistent read: it sees every write before it.
pub async fn rv_unset_and_zero(c: &Cluster) {
    let label = run_label("rv");
    let a = c.create(&label, &format!("{label}-a")).await;
    let fresh = c.list(&format!("labelSelector=suite%3D{label}")).await;
    assert_eq!(
        fresh.body["items"].as_array().unwrap().len(),
        1,
        "a consistent read"
    );
    let list_rv: u64 = fresh.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(list_rv >= rv(&a));
    let cached = c
        .list(&format!("resourceVersion=0&labelSelector=suite%3D{label}"))
        .await;
    assert_eq!(cached.code, 200);
    for query in ["", "resourceVersion=0&"] {
        let mut w = c
            .watch(&format!("{query}labelSelector=suite%3D{label}"))
            .await;
        let first = w.next_change().await.expect("an initial event");
        assert_eq!(
            summary(&first),
            ("ADDED".into(), format!("{label}-a")),
            "{query}"
        );
        assert_eq!(rv(&first["object"]), rv(&a));
    }
}

/// With `allowWatchBookmarks`, a watch learns of revisions its selection
/// never shows it: after a change outside its label selector it gets only
/// BOOKMARK events, each carrying just a kind and a resourceVersion, never
/// older than the one before, until one is at or past that change. (A v1.20
/// apiserver sends a bookmark only at a revision newer than the watch has
/// seen, so without the change outside a quiet watch may get none.)
pub async fn bookmarks(c: &Cluster) {
    let label = run_label("bm");
    let a = c.create(&label, &format!("{label}-a")).await;
    let mut w = c
        .client
        .stream(&format!(
            "{}?watch=1&allowWatchBookmarks=true&timeoutSeconds={}&resourceVersion={}&labelSelector=suite%3D{label}",
            c.configmaps(),
            c.bookmark_within_seconds,
            rv(&a)
        ))
        .await;
    assert_eq!(w.code, 200);
    let outside = c
        .create(&format!("{label}-other"), &format!("{label}-outside"))
        .await;
    let mut last = rv(&a);
    while last < rv(&outside) {
        let event = w.next().await.unwrap_or_else(|| {
            panic!(
                "the watch timed out before a bookmark at or past {}; the last was at {last}",
                rv(&outside)
            )
        });
        assert_eq!(event["type"], "BOOKMARK", "{event}");
        assert_eq!(event["object"]["kind"], "ConfigMap");
        assert!(event["object"].get("data").is_none(), "{event}");
        let at = rv(&event["object"]);
        assert!(at >= last, "a bookmark at {at} after {last}");
        last = at;
    }
}

/// After compaction: a watch from a compacted resourceVersion is answered
/// 200 with one ERROR event carrying a 410 Expired Status; a paged list's
/// continue token and an exact list at that revision are answered HTTP 410.
/// The client relists and watches again from the new list, and sees the
/// later changes.
pub async fn compaction_expires_old_revisions(c: &Cluster, server: &mut impl Compact) {
    let label = run_label("gone");
    for i in 0..3 {
        c.create(&label, &format!("{label}-{i}")).await;
    }
    let first = c
        .list(&format!("limit=1&labelSelector=suite%3D{label}"))
        .await;
    let token = first.body["metadata"]["continue"]
        .as_str()
        .expect("a continue token")
        .to_string();
    let old_rv = first.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    c.set(&format!("{label}-0"), "1").await;
    server.compact().await;

    let mut w = c
        .watch(&format!(
            "resourceVersion={old_rv}&labelSelector=suite%3D{label}"
        ))
        .await;
    let error = w.next().await.expect("an ERROR event");
    assert_eq!(error["type"], "ERROR");
    assert_eq!(error["object"]["kind"], "Status");
    assert_eq!(error["object"]["code"], 410);
    assert_eq!(error["object"]["reason"], "Expired");
    assert!(w.next().await.is_none(), "the stream ends after the error");

    let expired = c
        .list(&format!(
            "limit=1&continue={token}&labelSelector=suite%3D{label}"
        ))
        .await;
    assert_eq!(expired.code, 410, "{}", expired.text);
    assert_eq!(expired.body["reason"], "Expired");
    let exact = c
        .list(&format!(
            "resourceVersion={old_rv}&resourceVersionMatch=Exact&labelSelector=suite%3D{label}"
        ))
        .await;
    assert_eq!(exact.code, 410, "{}", exact.text);

    // Relist, then watch from the new list's revision.
    let relist = c.list(&format!("labelSelector=suite%3D{label}")).await;
    assert_eq!(relist.body["items"].as_array().unwrap().len(), 3);
    let new_rv = relist.body["metadata"]["resourceVersion"].as_str().unwrap();
    let mut w = c
        .watch(&format!(
            "resourceVersion={new_rv}&labelSelector=suite%3D{label}"
        ))
        .await;
    c.set(&format!("{label}-1"), "1").await;
    c.create(&label, &format!("{label}-end")).await;
    let seen = until_sentinel(&mut w, &format!("{label}-end")).await;
    assert_eq!(seen, pairs(&[("MODIFIED", &format!("{label}-1"))]));
}

/// Label and field selectors narrow lists and watches; an object that
/// leaves a watch's selection is seen as DELETED, one that enters as ADDED.
pub async fn selectors(c: &Cluster) {
    let label = run_label("sel");
    let (a, b) = (format!("{label}-a"), format!("{label}-b"));
    c.create(&label, &a).await;
    c.create(&label, &b).await;
    let by_name = c
        .list(&format!(
            "labelSelector=suite%3D{label}&fieldSelector=metadata.name%3D{a}"
        ))
        .await;
    let names: Vec<_> = by_name.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, vec![a.clone()]);
    let not_b = c
        .list(&format!(
            "labelSelector=suite%3D{label}&fieldSelector=metadata.name!%3D{b}"
        ))
        .await;
    assert_eq!(not_b.body["items"].as_array().unwrap().len(), 1);
    let set_based = c
        .list(&format!(
            "labelSelector=suite%20in%20({label},other),!missing"
        ))
        .await;
    assert_eq!(set_based.body["items"].as_array().unwrap().len(), 2);

    let rv = by_name.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap();
    let mut w = c
        .watch(&format!(
            "resourceVersion={rv}&labelSelector=suite%3D{label},tier%3Dfront"
        ))
        .await;
    let relabel = |name: String, tier: &'static str| {
        let client = c.client.clone();
        let path = format!("{}/{name}", c.configmaps());
        async move {
            let r = client
                .patch(
                    &path,
                    "application/merge-patch+json",
                    &json!({"metadata": {"labels": {"tier": tier}}}),
                )
                .await;
            assert_eq!(r.code, 200, "{}", r.text);
        }
    };
    relabel(a.clone(), "front").await;
    relabel(a.clone(), "back").await;
    relabel(b.clone(), "front").await;
    let end = format!("{label}-end");
    let r = c
        .client
        .post(
            &c.configmaps(),
            &json!({"metadata": {"name": end, "labels": {"suite": label, "tier": "front"}}}),
        )
        .await;
    assert_eq!(r.code, 201);
    let seen = until_sentinel(&mut w, &end).await;
    assert_eq!(
        seen,
        pairs(&[("ADDED", &a), ("DELETED", &a), ("ADDED", &b)])
    );
}

/// Optimistic concurrency: an update carrying a stale resourceVersion is a
/// 409 Conflict Status, and the object keeps the newer write.
pub async fn conflict(c: &Cluster) {
    let label = run_label("cas");
    let name = format!("{label}-a");
    let v1 = c.create(&label, &name).await;
    c.set(&name, "newer").await;
    let mut stale = v1.clone();
    stale["data"]["v"] = "stale".into();
    let reply = c
        .client
        .put(&format!("{}/{name}", c.configmaps()), &stale)
        .await;
    assert_eq!(reply.code, 409, "{}", reply.text);
    assert_eq!(reply.body["kind"], "Status");
    assert_eq!(reply.body["reason"], "Conflict");
    assert_eq!(reply.body["details"]["name"], name.as_str());
    let now = c.client.get(&format!("{}/{name}", c.configmaps())).await;
    assert_eq!(now.body["data"]["v"], "newer");
}

/// `limit` and `continue` page a list; every page is read at the first
/// page's revision, so together they are one snapshot even while writes go on.
pub async fn limit_and_continue(c: &Cluster) {
    let label = run_label("page");
    for i in 0..5 {
        c.create(&label, &format!("{label}-{i}")).await;
    }
    let mut names = Vec::new();
    let mut token: Option<String> = None;
    let mut revisions = Vec::new();
    let mut pages = 0;
    loop {
        let query = match &token {
            None => format!("limit=2&labelSelector=suite%3D{label}"),
            Some(t) => format!("limit=2&continue={t}&labelSelector=suite%3D{label}"),
        };
        let page = c.list(&query).await;
        assert_eq!(page.code, 200, "{}", page.text);
        pages += 1;
        if pages == 1 {
            // A write between pages is not in the snapshot.
            c.create(&label, &format!("{label}-9-late")).await;
        }
        revisions.push(page.body["metadata"]["resourceVersion"].clone());
        for item in page.body["items"].as_array().unwrap() {
            names.push(item["metadata"]["name"].as_str().unwrap().to_string());
        }
        match page.body["metadata"]["continue"].as_str() {
            Some(t) if !t.is_empty() => token = Some(t.to_string()),
            _ => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(
        names,
        (0..5).map(|i| format!("{label}-{i}")).collect::<Vec<_>>()
    );
    assert!(
        revisions.iter().all(|r| *r == revisions[0]),
        "{revisions:?}"
    );
}

/// Defines one `#[tokio::test]` per check of this suite, in the calling test
/// file. `$start` is an expression (evaluated once per test) whose future
/// yields `(server, Cluster)`: the server is kept alive for the test, and
/// must implement [`Compact`].
#[macro_export]
macro_rules! watch_semantics_tests {
    ($start:expr) => {
        $crate::watch_semantics_tests!(@checks $start;
            list_then_watch_sees_exactly_later_changes,
            rv_unset_and_zero,
            bookmarks,
            selectors,
            conflict,
            limit_and_continue,
        );

        #[tokio::test]
        async fn compaction_expires_old_revisions() {
            let (mut server, cluster) = $start.await;
            $crate::suite::compaction_expires_old_revisions(&cluster, &mut server).await;
        }
    };
    (@checks $start:expr; $($check:ident,)*) => {
        $(
            #[tokio::test]
            async fn $check() {
                let (_server, cluster) = $start.await;
                $crate::suite::$check(&cluster).await;
            }
        )*
    };
}
