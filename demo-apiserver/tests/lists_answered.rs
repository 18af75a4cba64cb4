//! Who answers a LIST, as kube-apiserver's Cacher decides, on the demo API
//! with its stages running as tasks: `rv="0"` the watch cache at its
//! revision, `rv=""` a consistent read from the store, `rv=N` the watch
//! cache once it has caught up to N ("Too large resource version" for a
//! revision the store has not reached). A client that names itself finds
//! each answer noted.

mod support;

use serde_json::json;
use watchlife_controlplane::control_plane::ServedFrom;
use watchlife_controlplane::resource::CONFIGMAPS;
use watchlife_controlplane::{Profile, Release};
use watchlife_testkit::client::Client;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

async fn list(base: &str, query: &str) -> support::Raw {
    support::raw(
        base,
        &format!(
            "GET {CMS}?{query} HTTP/1.1\r\nHost: localhost\r\nx-watchlife-client: lister\r\nConnection: close\r\n\r\n"
        ),
    )
    .await
}

#[tokio::test]
async fn each_list_is_answered_by_whom_the_apiserver_would_ask() {
    // v1.20's routes (v1.36 reads `rv=""` from the cache: see below).
    let server = support::start_profile(Profile::new(Release::V1_20)).await;
    let c = Client::new(&server.base, None);
    for i in 0..3 {
        c.post(CMS, &json!({"metadata": {"name": format!("c{i}")}}))
            .await;
    }
    let written = server.cp.revision();

    let cached = list(&server.base, "resourceVersion=0&limit=1").await;
    assert_eq!(cached.code, 200, "{}", cached.body);
    let answer = server.cp.last_list("lister").unwrap();
    assert_eq!(answer.asked, "0");
    assert!(
        matches!(answer.served, ServedFrom::WatchCache { .. }),
        "{answer:?}"
    );
    assert_eq!(answer.items, 3, "rv=0 ignores the limit");

    let consistent = list(&server.base, "limit=2").await;
    assert_eq!(consistent.code, 200);
    let answer = server.cp.last_list("lister").unwrap();
    assert_eq!(answer.served, ServedFrom::Store { revision: written });
    assert_eq!(answer.items, 2);

    // A revision just written: answered by the cache, at or past it.
    let fresh = list(&server.base, &format!("resourceVersion={written}")).await;
    assert_eq!(fresh.code, 200);
    let answer = server.cp.last_list("lister").unwrap();
    let ServedFrom::WatchCache { revision, .. } = answer.served else {
        panic!("the watch cache answers rv=N: {answer:?}")
    };
    assert!(revision >= written);
    assert!(server.cp.watch_cache_revision(CONFIGMAPS) >= written);

    // A revision the store has not reached: refused at once (the apiserver,
    // which cannot ask etcd cheaply, waits its 3 s first).
    let future = list(&server.base, &format!("resourceVersion={}", written + 100)).await;
    assert_eq!(future.code, 504, "{}", future.body);
    assert!(
        future.body.contains("Too large resource version"),
        "{}",
        future.body
    );
}

#[tokio::test]
async fn v1_36_reads_consistent_lists_from_the_cache_once_it_caught_up() {
    let server = support::start().await;
    let c = Client::new(&server.base, None);
    for i in 0..3 {
        c.post(CMS, &json!({"metadata": {"name": format!("c{i}")}}))
            .await;
    }
    let written = server.cp.revision();
    let consistent = list(&server.base, "limit=2").await;
    assert_eq!(consistent.code, 200, "{}", consistent.body);
    let answer = server.cp.last_list("lister").unwrap();
    let ServedFrom::WatchCache { revision, .. } = answer.served else {
        panic!("ConsistentListFromCache: {answer:?}")
    };
    assert!(revision >= written);
    let read = answer.consistent.expect("a consistent read is recorded");
    assert!(
        read.from_cache && read.store_revision >= written,
        "{read:?}"
    );
    assert!(read.waited < 3_000_000, "{read:?}");
    assert_eq!(answer.items, 2);
    // The next page: the cache's snapshot at the first page's revision.
    // The body may come in chunks: the token is read from its text.
    let token = consistent
        .body
        .split_once("\"continue\":\"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(token, _)| token.to_string())
        .expect("a continue token");
    let next = list(&server.base, &format!("limit=2&continue={token}")).await;
    assert_eq!(next.code, 200, "{}", next.body);
    let answer = server.cp.last_list("lister").unwrap();
    assert_eq!(
        answer.served,
        ServedFrom::WatchCache {
            revision,
            waited: answer_waited(&answer.served)
        }
    );
    assert_eq!(answer.items, 1);
}

fn answer_waited(served: &ServedFrom) -> u64 {
    match served {
        ServedFrom::WatchCache { waited, .. } => *waited,
        ServedFrom::Store { .. } => 0,
    }
}

#[tokio::test]
async fn a_list_or_watch_while_the_cache_relists_gets_429_then_succeeds() {
    let server = support::start().await;
    server.cp.break_store_watch(CONFIGMAPS);
    let refused = list(&server.base, "").await;
    assert_eq!(refused.code, 429, "{}", refused.body);
    assert!(
        refused
            .head
            .to_ascii_lowercase()
            .contains("\r\nretry-after: 1"),
        "{}",
        refused.head
    );
    assert!(
        refused.body.contains("storage is (re)initializing"),
        "{}",
        refused.body
    );
    let watch = list(&server.base, "watch=1&timeoutSeconds=1").await;
    assert_eq!(watch.code, 429, "{}", watch.body);
    // A paged LIST without selectors goes to the store meanwhile.
    let paged = list(&server.base, "limit=1").await;
    assert_eq!(paged.code, 200, "{}", paged.body);
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(list(&server.base, "").await.code, 200);
}

#[tokio::test]
async fn v1_20_waits_for_the_relist_instead() {
    let server = support::start_profile(Profile::new(Release::V1_20)).await;
    server.cp.break_store_watch(CONFIGMAPS);
    let started = std::time::Instant::now();
    let answered = list(&server.base, "resourceVersion=1").await;
    assert_eq!(answered.code, 200, "{}", answered.body);
    assert!(started.elapsed() >= std::time::Duration::from_millis(800));
}

/// A watch refused with 410 started nothing: the answer of the client's
/// earlier watch does not stand for it.
#[tokio::test]
async fn a_watch_refused_with_410_leaves_no_answer_behind() {
    let server = support::start().await;
    let c = Client::new(&server.base, None);
    c.post(CMS, &json!({"metadata": {"name": "a"}})).await;
    let from = server.cp.revision();
    let watch = |rv: u64| {
        let request = format!(
            "GET {CMS}?watch=1&resourceVersion={rv}&timeoutSeconds=1 HTTP/1.1\r\nHost: localhost\r\nx-watchlife-client: lister\r\nConnection: close\r\n\r\n"
        );
        let base = server.base.clone();
        async move { support::raw(&base, &request).await }
    };
    assert_eq!(watch(from).await.code, 200);
    assert!(
        server.cp.last_watch("lister").is_some(),
        "the watch is noted"
    );
    c.post(CMS, &json!({"metadata": {"name": "b"}})).await;
    server.cp.compact();
    let refused = watch(from).await;
    assert!(refused.body.contains("\"code\":410"), "{}", refused.body);
    assert!(
        server.cp.last_watch("lister").is_none(),
        "{:?}",
        server.cp.last_watch("lister")
    );
}
