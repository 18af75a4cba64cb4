//! Headless Chromium loads the app from a running bridge, shows live events,
//! and picks the stream up again when the bridge comes back.

use watchlife_tests::bridge::Bridge;
use watchlife_tests::browser::Browser;

#[tokio::test]
async fn the_page_shows_live_watch_events() {
    let bridge = Bridge::start(&["--demo", "--demo-rate", "4"]).await;
    let browser = Browser::open_connected(1280, 800, &bridge.url()).await;
    assert_eq!(browser.text("#source").await, "embedded demo control plane");
    // Live watch events about objects (not the initial list, and not a
    // BOOKMARK or an ERROR, which name no object) arrive and are drawn.
    let live = "tr.event-row[data-initial=false]:is([data-type=ADDED],[data-type=MODIFIED],[data-type=DELETED])";
    browser
        .wait_until(
            "three live events are listed",
            &format!("document.querySelectorAll('{live}').length >= 3"),
        )
        .await;
    // One read of the whole row: the log redraws its rows as events arrive,
    // so an element found earlier may be gone by the next question.
    let row = browser
        .eval(
            &format!(
                "(r => ({{kind: r.querySelector('.kind').textContent, name: r.querySelector('.name').textContent, \
                 rv: r.dataset.rv, type: r.dataset.type}}))(document.querySelector('{live}'))"
            ),
        )
        .await;
    let field = |key: &str| row[key].as_str().unwrap_or_default().to_string();
    let (kind, name, rv, event_type) = (field("kind"), field("name"), field("rv"), field("type"));
    assert!(
        ["Pod", "ConfigMap", "Deployment", "ReplicaSet"].contains(&kind.as_str()),
        "kind {kind}"
    );
    assert!(name.starts_with("default/web"), "namespace/name {name}");
    assert!(rv.parse::<u64>().unwrap() > 1, "resourceVersion {rv}");
    assert!(["ADDED", "MODIFIED", "DELETED"].contains(&event_type.as_str()));
    // The Reflector's state is drawn.
    browser
        .wait_until(
            "the pods Reflector is watching",
            "[...document.querySelectorAll('.reflector[data-key=pods] .line-words')].some(e => /^(WATCH rv=\"[0-9]+\"|BOOKMARK [0-9]+)/.test(e.textContent))",
        )
        .await;

    browser.screenshot_for_docs("live.png").await;
    browser.close().await;
}

#[tokio::test]
async fn the_page_reconnects_when_the_bridge_comes_back() {
    let mut bridge = Bridge::start(&["--demo", "--demo-rate", "4"]).await;
    let browser = Browser::open_connected(1024, 700, &bridge.url()).await;
    // The count read below is the event log's, redrawn only where it can
    // be seen.
    browser
        .eval("document.querySelector('.event-log').scrollIntoView() || true")
        .await;
    let addr = bridge.addr;
    bridge.kill();
    browser
        .wait_until(
            "reconnecting is shown",
            "document.querySelector('#link[data-link=reconnecting]')",
        )
        .await;
    let received = "Number(document.querySelector('.event-log').dataset.received)";
    let before = browser.eval(received).await.as_u64().expect("a count");
    let launched = "Number(document.querySelector('#pipeline').dataset.launched)";
    // A new bridge on the same address: the page finds it by itself.
    let _again = Bridge::start_at(addr, &["--demo", "--demo-rate", "4"]).await;
    browser
        .wait_until(
            "connected again",
            "document.querySelector('#link[data-link=connected]')",
        )
        .await;
    // Not just connected: the new bridge's events arrive and travel.
    let launched_before = browser.eval(launched).await.as_u64().expect("a count");
    browser
        .wait_until(
            "events flow again",
            &format!(
                "{received} >= {} && {launched} > {launched_before}",
                before + 3
            ),
        )
        .await;
    browser.close().await;
}

/// Kubernetes 1.36's start on the real bridge and demo, as the page draws
/// it: the header names the release, the Reflector streamed its list (no
/// LIST went out). The page connects after that list, so its events are
/// drawn in `browser_scripted::a_streaming_list_is_drawn_with_its_closing_bookmark`.
#[tokio::test]
async fn the_demo_streams_its_lists_under_kubernetes_1_36() {
    // The namespaces exist before the Reflectors start: their list is not
    // empty.
    let bridge = Bridge::start(&["--demo", "--demo-idle", "--resources", "namespaces,pods"]).await;
    let browser = Browser::open(1920, 1080, &bridge.url()).await;
    browser
        .wait_until(
            "the header names the release",
            "(document.querySelector('#kubernetes')?.textContent ?? '').startsWith('Kubernetes 1.36 rules')",
        )
        .await;
    browser
        .wait_until(
            "the namespaces Reflector streamed its initial list",
            "[...document.querySelectorAll('.reflector[data-key=namespaces] .line-words')].some(e => /STREAMED [1-9][0-9]*/.test(e.textContent))",
        )
        .await;
    let words = browser
        .eval("[...document.querySelectorAll('.reflector .line-words')].map(e => e.textContent).join('|')")
        .await;
    assert!(
        !words.as_str().unwrap_or_default().contains("LIST rv="),
        "a 1.36 Reflector makes no LIST against a server with WatchList: {words}"
    );
    // The server's side of the same request, on the watch cache's node.
    browser
        .wait_until(
            "the watch cache says it answered the namespaces' streaming list",
            "[...document.querySelectorAll('[data-stage=watch_cache] .cache-answer[data-key=namespaces] .line-words')].some(e => /WATCH: [1-9][0-9]* synthetic/.test(e.textContent))",
        )
        .await;
    browser.close().await;
}
