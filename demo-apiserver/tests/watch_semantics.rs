//! The watch-semantics suite against the demo API, in process.
//!
//! The same checks (in `suite/`) take a base URL and a token, to run against
//! a real kube-apiserver too.

mod suite;
mod support;

use suite::Cluster;
use watchlife_demo_apiserver::watch::BOOKMARK_INTERVAL;

async fn demo() -> (support::Server, Cluster) {
    let server = support::start().await;
    let cluster = Cluster {
        client: support::Client::new(&server.base, None),
        namespace: "default".into(),
        // One bookmark period and a margin; the watch ends at this timeout
        // only if no bookmark came.
        bookmark_within_seconds: BOOKMARK_INTERVAL.as_secs() * 3,
    };
    (server, cluster)
}

#[tokio::test]
async fn list_then_watch_sees_exactly_later_changes() {
    let (_server, c) = demo().await;
    suite::list_then_watch_sees_exactly_later_changes(&c).await;
}

#[tokio::test]
async fn rv_unset_and_zero() {
    let (_server, c) = demo().await;
    suite::rv_unset_and_zero(&c).await;
}

#[tokio::test]
async fn bookmarks() {
    let (_server, c) = demo().await;
    suite::bookmarks(&c).await;
}

#[tokio::test]
async fn compaction_expires_old_revisions() {
    let (server, c) = demo().await;
    let cp = server.cp.clone();
    suite::compaction_expires_old_revisions(&c, &move || {
        cp.compact();
    })
    .await;
}

#[tokio::test]
async fn selectors() {
    let (_server, c) = demo().await;
    suite::selectors(&c).await;
}

#[tokio::test]
async fn conflict() {
    let (_server, c) = demo().await;
    suite::conflict(&c).await;
}

#[tokio::test]
async fn limit_and_continue() {
    let (_server, c) = demo().await;
    suite::limit_and_continue(&c).await;
}
