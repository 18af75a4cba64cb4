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
    let server = support::start().await;
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
