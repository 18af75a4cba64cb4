//! The app in headless Chromium against the real binary: the pipeline, a
//! demo action's story, pause and step, filters, and the view kept in the URL.

use std::time::Duration;
use watchlife_tests::bridge::Bridge;
use watchlife_tests::browser::Browser;

/// Every stage, in pipeline order, as the diagram names them.
const STAGES: [&str; 9] = [
    "etcd",
    "watch_cache",
    "watch_stream",
    "reflector",
    "fifo",
    "indexer",
    "handlers",
    "workqueue",
    "reconcile",
];

/// The app of `bridge` at `query`, `width`×`height`, once connected.
async fn open(bridge: &Bridge, query: &str, width: u32, height: u32) -> Browser {
    Browser::open_connected(width, height, &format!("{}/{query}", bridge.url())).await
}

async fn launched(browser: &Browser) -> u64 {
    browser
        .eval("Number(document.querySelector('#pipeline').dataset.launched)")
        .await
        .as_u64()
        .expect("data-launched is a number")
}

#[tokio::test]
async fn every_stage_is_drawn_and_unobserved_ones_say_so() {
    let bridge = Bridge::start(&["--demo", "--demo-rate", "4"]).await;
    // Tall enough for the picture to show the pipeline, the fan-out and the plots.
    let browser = open(&bridge, "", 1440, 1250).await;
    for stage in STAGES {
        browser
            .wait_for(&format!("#pipeline g.stage[data-stage={stage}]"))
            .await;
    }
    // The demo measures at least the server side and the Reflector.
    for stage in ["etcd", "watch_cache", "watch_stream", "reflector"] {
        browser
            .wait_until(
                &format!("{stage} is observed"),
                &format!(
                    "document.querySelector('g.stage[data-stage={stage}][data-observed=true]')"
                ),
            )
            .await;
    }
    browser
        .wait_until(
            "a token travels",
            "document.querySelector('#pipeline [data-token]')",
        )
        .await;
    // Unobserved stages show no numbers; observed ones do.
    let consistent = browser
        .eval(
            "[...document.querySelectorAll('g.stage')].every(g => g.dataset.observed === 'true'
                ? !!g.querySelector('.stage-rate') && !g.querySelector('.not-observed')
                : g.querySelector('.not-observed').textContent === 'not observed' && !g.querySelector('.stage-rate'))",
        )
        .await;
    assert_eq!(consistent, serde_json::json!(true));
    browser
        .wait_until(
            "the Reflector's state (watching) is on its node",
            "[...document.querySelectorAll('#pipeline .reflector[data-key=pods] .line-words')].some(e => /^(WATCH rv=\"[0-9]+\"|BOOKMARK [0-9]+)/.test(e.textContent))",
        )
        .await;
    // Let the numbers fill in before the picture.
    browser
        .wait_until(
            "live events are listed",
            "document.querySelectorAll('tr.event-row[data-initial=false]').length >= 4",
        )
        .await;
    // All of that came compressed: the page asked for it, and read the
    // deflate streams with Chromium's own DecompressionStream.
    let metrics = watchlife_tests::http::get(bridge.addr, "/metrics")
        .await
        .expect("/metrics")
        .text();
    let value = |name: &str| {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .and_then(|v| v.parse::<f64>().ok())
    };
    assert_eq!(value("watchlife_viewers"), Some(1.0), "{metrics}");
    assert_eq!(
        value("watchlife_viewers_compressed"),
        Some(1.0),
        "{metrics}"
    );
    assert_eq!(
        value("watchlife_viewers_patched"),
        Some(1.0),
        "the page takes updates as patches: {metrics}"
    );
    browser.screenshot_for_docs("desktop.png").await;
    browser.close().await;

    let presenter = open(&bridge, "?presenter=1", 1600, 900).await;
    presenter
        .wait_until(
            "a token travels in presenter mode",
            "document.querySelector('#pipeline [data-token]:not(.arrived)')",
        )
        .await;
    let chrome = presenter
        .eval("getComputedStyle(document.querySelector('.controls')).display")
        .await;
    assert_eq!(chrome, serde_json::json!("none"));
    presenter.screenshot_for_docs("presenter.png").await;
    presenter.close().await;
}

#[tokio::test]
async fn a_label_added_from_the_panel_travels_and_shows_in_the_history() {
    // A slow story, so that the label's event is easy to pick out.
    let bridge = Bridge::start(&["--demo", "--demo-rate", "0.5"]).await;
    let browser = open(&bridge, "", 1440, 1000).await;
    browser
        .wait_until(
            "the deployment is offered",
            "document.querySelector('#action-object option[value^=\"deployments.apps \"]')",
        )
        .await;
    // Every resource of the demo has listed: its objects are the whole set.
    browser
        .wait_until(
            "no resource is said to be listing",
            "document.querySelector('#listing-note[data-listing=false]')?.hidden",
        )
        .await;
    // The deployment, which the story changes but never deletes (its pods
    // come and go as the controllers roll them).
    let target = browser
        .eval("document.querySelector('#action-object option[value^=\"deployments.apps \"]').value")
        .await
        .as_str()
        .expect("an object is offered")
        .to_string();
    browser.fill("#action-object", &target).await;
    // The demo writes faster than its tokens travel: the page falls behind.
    browser
        .wait_until(
            "the page is behind the demo",
            "Number(document.querySelector('#pipeline').dataset.waiting) > 6",
        )
        .await;
    let (resource, name) = target.split_once(' ').expect("`resource ns/name`");
    let (resource, name) = (resource.to_string(), name.to_string());
    let last_seq = browser
        .eval("Math.max(0, ...[...document.querySelectorAll('tr.event-row')].map(r => Number(r.dataset.seq)))")
        .await
        .as_u64()
        .unwrap_or(0);
    browser.fill("#label-key", "tier").await;
    browser.fill("#label-value", "frontend").await;
    // Acting caught the page up: what was held was shown at once, so the
    // label's event is not queued behind it. Read as soon as the page has
    // redrawn, before much more of the story can arrive (on a loaded
    // machine a WebDriver round trip lets several more events in).
    let held_after = browser
        .eval_async(
            "const done = arguments[arguments.length - 1];
             document.querySelector('#action-label').click();
             setTimeout(() => done(Number(document.querySelector('#pipeline').dataset.waiting)), 0);",
        )
        .await
        .as_u64()
        .expect("a count");
    assert!(
        held_after <= 6,
        "acting catches the page up, yet {held_after} events still wait"
    );
    browser
        .wait_until(
            "the action's result is told",
            "document.querySelector('#notice').textContent.includes('tier=frontend')",
        )
        .await;
    // The object's history shows the version that added the label (the
    // demo's controllers may change the object in between: find it by its diff).
    browser
        .click(&format!(
            "tr.object-row[data-resource='{resource}'][data-key='{name}']"
        ))
        .await;
    let labelled = "[...document.querySelectorAll('#history .version')].filter(v => \
         [...v.querySelectorAll('.change')].some(c => c.textContent === 'label tier=frontend added'))";
    browser
        .wait_until(
            "the history shows the label added",
            &format!("{labelled}.length === 1"),
        )
        .await;
    let rv = browser
        .eval(&format!("{labelled}[0].dataset.rv"))
        .await
        .as_str()
        .expect("a version has an RV")
        .to_string();
    let version_type = browser.eval(&format!("{labelled}[0].dataset.type")).await;
    assert_eq!(version_type, serde_json::json!("MODIFIED"));
    // The same event is in the log, newer than the action, and travels as a
    // token. The log draws only the rows in view and the demo keeps writing:
    // narrow it to this object's changes so the row cannot scroll away.
    browser.fill("#filter-search", &name).await;
    browser.fill("#filter-type", "MODIFIED").await;
    let name_json = serde_json::to_string(&name).unwrap();
    browser
        .wait_until(
            "the label's event is listed",
            &format!(
                "[...document.querySelectorAll(\"tr.event-row[data-type=MODIFIED][data-rv='{rv}']\")]
                    .some(r => Number(r.dataset.seq) > {last_seq} && r.querySelector('.name').textContent === {name_json})"
            ),
        )
        .await;
    // A busy demo samples its tokens: follow the event to be sure to see it.
    browser
        .click(&format!("tr.event-row[data-type=MODIFIED][data-rv='{rv}']"))
        .await;
    // Its detail, under the log: a labelled waterfall of every hop, then
    // its life in lines.
    browser
        .wait_until(
            "the event's detail has its waterfall",
            "[...document.querySelectorAll('.event-detail-box .hop-waterfall .hop')].length >= 6 \
             && [...document.querySelectorAll('.event-detail-box .hop-waterfall .hop')].every(h => \
                  h.querySelector('.hop-label').textContent.length > 0 && h.querySelector('.hop-time').textContent.length > 0) \
             && document.querySelector('.event-detail-box .hop.measured[data-hop=reflector] .hop-bar')",
        )
        .await;
    browser
        .wait_until(
            "the event's token travels",
            &format!("document.querySelector(\"#pipeline [data-token][data-rv='{rv}']\")"),
        )
        .await;
    let first = browser.text("#history .version .change").await;
    assert!(
        first == "as listed" || first == "created",
        "the first version is the listed one: {first}"
    );
    browser.close().await;
}

/// A light snapshot (`--snapshot-bodies-limit 0`) gives the page each
/// object without its body: opening the object fetches it (`/objects`), and
/// the next change shows the same diff as with a full snapshot.
/// A bridge on the idle demo whose viewers get light snapshots (no bodies),
/// a deployment `default/web` made with kubectl and left until its
/// controllers are done with it, so that a page gets it in its snapshot and
/// nothing but what the test does changes it afterwards; and a viewer of the
/// stream, to send demo actions.
async fn a_settled_deployment_in_a_light_snapshot() -> (Bridge, watchlife_tests::ws::Viewer) {
    use watchlife_protocol::{FrameBody, Source};
    let bridge = Bridge::start(&["--demo", "--demo-idle", "--snapshot-bodies-limit", "0"]).await;
    let mut viewer = watchlife_tests::ws::Viewer::connect(&bridge.ws_url()).await;
    let api = match viewer.next_frame(Duration::from_secs(30)).await.body {
        FrameBody::Hello(h) => match h.source {
            Source::Demo { api } => api,
            other => panic!("the demo, got {other:?}"),
        },
        other => panic!("hello first, got {other:?}"),
    };
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = watchlife_tests::plain_kubeconfig(&dir.path().join("kubeconfig"), &api);
    watchlife_tests::kubectl(
        &kubeconfig,
        &["create", "deployment", "web", "--image=nginx"],
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut stable = None;
    loop {
        let r = watchlife_tests::http::get(bridge.addr, "/objects/deployments.apps/default/web")
            .await
            .unwrap();
        let body: serde_json::Value = serde_json::from_str(&r.text()).unwrap_or_default();
        // Ready, and its resourceVersion unchanged for a second.
        let rv = body["metadata"]["resourceVersion"].clone();
        if body["status"]["readyReplicas"] == 1 && stable.as_ref() == Some(&rv) {
            break;
        }
        if stable.as_ref() != Some(&rv) {
            stable = Some(rv);
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the deployment settles: {}",
            r.text()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    (bridge, viewer)
}

/// Labels the deployment `default/web` `tier=frontend` through `viewer`.
async fn label_web(viewer: &mut watchlife_tests::ws::Viewer) {
    viewer
        .send(&watchlife_protocol::ClientMessage::Action {
            action: watchlife_protocol::DemoAction::Label {
                resource: "deployments.apps".into(),
                namespace: "default".into(),
                name: "web".into(),
                key: "tier".into(),
                value: "frontend".into(),
            },
        })
        .await;
}

/// The page narrowed to the deployment `default/web`; its row's selector.
async fn web_listed(browser: &Browser) -> String {
    // The table draws only the rows in view: narrow it to the deployment.
    browser.fill("#filter-search", "web").await;
    let row = "tr.object-row[data-resource='deployments.apps'][data-key='default/web']".to_string();
    browser
        .wait_until(
            "the deployment is listed",
            &format!("document.querySelector(\"{row}\")"),
        )
        .await;
    row
}

/// Whether some change in the history reads `words`.
fn history_says(words: &str) -> String {
    format!(
        "[...document.querySelectorAll('#history .change')].some(c => c.textContent === '{words}')"
    )
}

#[tokio::test]
async fn an_object_from_a_light_snapshot_is_fetched_when_opened_and_diffs_as_before() {
    let (bridge, mut viewer) = a_settled_deployment_in_a_light_snapshot().await;
    let browser = open(&bridge, "", 1440, 1000).await;
    let row = web_listed(&browser).await;
    assert_eq!(
        browser
            .eval("document.querySelectorAll('#history .version').length")
            .await,
        serde_json::json!(0),
        "no object chosen yet"
    );
    let fetched_before = browser
        .eval("performance.getEntriesByType('resource').filter(e => e.name.includes('/objects/')).length")
        .await;
    assert_eq!(
        fetched_before,
        serde_json::json!(0),
        "nothing fetched before"
    );
    browser.click(&row).await;
    browser
        .wait_until(
            "the body is fetched from /objects",
            "performance.getEntriesByType('resource').some(e => e.name.endsWith('/objects/deployments.apps/default/web'))",
        )
        .await;
    browser
        .wait_until(
            "the page keeps the fetched body",
            "document.querySelector('#history .version[data-body=kept]')",
        )
        .await;
    // The update comes as a patch on the fetched body: the page rebuilds
    // the body, and diffs it as if it had come whole.
    label_web(&mut viewer).await;
    browser
        .wait_until(
            "the history shows the label added, diffed against the fetched body",
            &history_says("label tier=frontend added"),
        )
        .await;
    browser.close().await;
}

#[tokio::test]
async fn an_update_of_an_object_never_fetched_shows_its_patch_as_the_change() {
    let (bridge, mut viewer) = a_settled_deployment_in_a_light_snapshot().await;
    let browser = open(&bridge, "", 1440, 1000).await;
    let row = web_listed(&browser).await;
    // Changed before anyone opened it: the page holds no body to apply the
    // patch to, and keeps the patch.
    label_web(&mut viewer).await;
    browser
        .wait_until(
            "the page has the label's event",
            "document.querySelector(\"tr.event-row[data-type=MODIFIED][data-resource='deployments.apps']\")",
        )
        .await;
    browser.click(&row).await;
    browser
        .wait_until(
            "the history tells the patch's change, with no earlier body to diff against",
            &history_says("label tier=frontend set"),
        )
        .await;
    browser.close().await;
}

#[tokio::test]
async fn pause_stops_the_tokens_and_step_lets_exactly_one_travel() {
    let bridge = Bridge::start(&["--demo", "--demo-rate", "5"]).await;
    let browser = open(&bridge, "", 1280, 900).await;
    browser
        .wait_until(
            "tokens are launched",
            "Number(document.querySelector('#pipeline').dataset.launched) > 0",
        )
        .await;
    browser.press(" ").await;
    browser
        .wait_until(
            "paused",
            "document.querySelector('#pause[aria-pressed=true]')",
        )
        .await;
    let before = launched(&browser).await;
    let clock = "[...document.querySelectorAll('#pipeline [data-token]')].map(t => t.getAttribute('transform')).join(';')";
    let positions = browser.eval(clock).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        launched(&browser).await,
        before,
        "no token starts while paused"
    );
    assert_eq!(
        browser.eval(clock).await,
        positions,
        "no token moves while paused"
    );
    browser
        .wait_until(
            "events wait while paused",
            "Number(document.querySelector('#pipeline').dataset.waiting) > 0",
        )
        .await;
    browser.press("ArrowRight").await;
    browser
        .wait_until(
            "one token starts",
            &format!(
                "Number(document.querySelector('#pipeline').dataset.launched) === {}",
                before + 1
            ),
        )
        .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        launched(&browser).await,
        before + 1,
        "a step lets exactly one event go"
    );
    browser.press(" ").await;
    browser
        .wait_until(
            "resumed, tokens flow again",
            &format!(
                "Number(document.querySelector('#pipeline').dataset.launched) > {}",
                before + 1
            ),
        )
        .await;
    browser.close().await;
}

#[tokio::test]
async fn filters_hide_and_show_and_the_url_restores_the_view() {
    let bridge = Bridge::start(&["--demo", "--demo-rate", "4"]).await;
    let browser = open(&bridge, "", 1280, 900).await;
    browser
        .wait_until(
            "events are listed",
            "document.querySelectorAll('tr.event-row').length >= 3",
        )
        .await;
    browser.fill("#filter-search", "no-such-object").await;
    browser
        .wait_until(
            "the search hides every event about an object (a BOOKMARK is about the watch)",
            "[...document.querySelectorAll('tr.event-row')].every(r => r.dataset.type === 'BOOKMARK' || r.dataset.type === 'ERROR') \
             && location.search.includes('q=no-such-object')",
        )
        .await;
    browser.fill("#filter-search", "").await;
    browser
        .wait_until(
            "clearing it shows them again",
            "document.querySelectorAll('tr.event-row').length >= 3",
        )
        .await;
    browser.fill("#filter-type", "MODIFIED").await;
    browser
        .wait_until(
            "only MODIFIED events are listed",
            "document.querySelectorAll('tr.event-row').length > 0 && [...document.querySelectorAll('tr.event-row')].every(r => r.dataset.type === 'MODIFIED')",
        )
        .await;
    let query = browser.eval("location.search").await;
    assert_eq!(query, serde_json::json!("?type=MODIFIED"));
    browser.close().await;

    // A link with a view in its query opens that view.
    let again = open(
        &bridge,
        "?paused=1&speed=0&type=MODIFIED&q=web&captions=0&theme=dark",
        1280,
        900,
    )
    .await;
    again
        .wait_until(
            "paused",
            "document.querySelector('#pause[aria-pressed=true]')",
        )
        .await;
    let view = again
        .eval(
            "[document.querySelector('#filter-type').value, document.querySelector('#filter-search').value,
              document.querySelector('#speed').value, document.documentElement.dataset.theme,
              !!document.querySelector('#narration')]",
        )
        .await;
    assert_eq!(
        view,
        serde_json::json!(["MODIFIED", "web", "0", "dark", false])
    );
    // Paused, the page shows only what the animation has reached: nothing
    // yet. Resumed, the events come in their turn, filtered.
    again.click("#pause").await;
    again
        .wait_until(
            "the restored filter applies",
            "document.querySelectorAll('tr.event-row').length > 0 && [...document.querySelectorAll('tr.event-row')].every(r => r.dataset.type === 'MODIFIED' && r.querySelector('.name').textContent.includes('web'))",
        )
        .await;
    again.close().await;
}

#[tokio::test]
async fn plots_draw_the_event_rate_and_each_stages_latency_in_both_themes() {
    let bridge = Bridge::start(&["--demo", "--demo-rate", "4"]).await;
    let browser = open(&bridge, "?theme=light", 1440, 1000).await;
    browser
        .wait_until(
            "the rate plot has bars",
            "Number(document.querySelector('#plot-rate').dataset.peak) > 0 \
             && document.querySelector('#plot-rate rect.bar')",
        )
        .await;
    browser
        .wait_until(
            "the Reflector's latency histogram has samples and bars",
            "Number(document.querySelector('#plot-latency .histogram[data-stage=reflector]').dataset.samples) > 0 \
             && document.querySelector('#plot-latency .histogram[data-stage=reflector] rect.bar')",
        )
        .await;
    let summary = browser
        .text("#plot-latency .histogram[data-stage=reflector] .cell-summary")
        .await;
    assert!(summary.starts_with("p50 "), "{summary}");
    // Each line of text stays inside its cell: none overlaps another.
    browser.assert_no_overlap("#plot-latency text").await;
    // One histogram per stage after the first.
    let cells = browser
        .eval("document.querySelectorAll('#plot-latency .histogram').length")
        .await;
    assert_eq!(cells, serde_json::json!(STAGES.len() - 1));
    let colours = "[...document.querySelectorAll('#plot-rate rect.bar, #plot-rate .tick')].map(e => getComputedStyle(e).fill).join()";
    let light = browser.eval(colours).await;
    browser.fill("#theme", "dark").await;
    browser
        .wait_until(
            "the dark theme applies",
            "document.documentElement.dataset.theme === 'dark'",
        )
        .await;
    let dark = browser.eval(colours).await;
    assert_ne!(light, dark, "the plot follows the theme");
    browser.close().await;
}

#[tokio::test]
async fn resource_and_namespace_filters_hide_and_show() {
    let bridge = Bridge::start(&["--demo", "--demo-rate", "6"]).await;
    let browser = open(&bridge, "", 1280, 900).await;
    browser
        .wait_until(
            "events of pods and of another resource are listed",
            "new Set([...document.querySelectorAll('tr.event-row')].map(r => r.dataset.resource)).size >= 2",
        )
        .await;
    browser.fill("#filter-resource", "pods").await;
    browser
        .wait_until(
            "only pods are listed, events and objects alike",
            "document.querySelectorAll('tr.event-row').length > 0 \
             && [...document.querySelectorAll('tr.event-row')].every(r => r.dataset.resource === 'pods') \
             && [...document.querySelectorAll('tr.object-row')].every(r => r.dataset.resource === 'pods') \
             && location.search.includes('resource=pods')",
        )
        .await;
    browser.fill("#filter-resource", "").await;
    browser
        .wait_until(
            "all resources are listed again",
            "new Set([...document.querySelectorAll('tr.event-row')].map(r => r.dataset.resource)).size >= 2",
        )
        .await;
    browser.close().await;

    // A namespace nothing lives in hides every object and its events.
    let elsewhere = open(&bridge, "?ns=elsewhere", 1280, 900).await;
    elsewhere
        .wait_until(
            "the namespace is offered",
            "document.querySelector('#filter-namespace option[value=default]')",
        )
        .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let shown = elsewhere
        .eval(
            "[document.querySelectorAll('tr.object-row').length,
              [...document.querySelectorAll('tr.event-row')].filter(r => r.dataset.namespace !== '').length]",
        )
        .await;
    assert_eq!(shown, serde_json::json!([0, 0]));
    elsewhere.fill("#filter-namespace", "default").await;
    elsewhere
        .wait_until(
            "choosing the demo's namespace shows its objects and events",
            "document.querySelectorAll('tr.object-row').length > 0 \
             && document.querySelectorAll('tr.event-row').length > 0 \
             && [...document.querySelectorAll('tr.event-row')].every(r => r.dataset.namespace === 'default' || r.dataset.namespace === '') \
             && location.search.includes('ns=default')",
        )
        .await;
    elsewhere.close().await;
}

/// Needs the bridge to publish `watch_cache` frames in demo mode
/// (`fanout::spawn_reporter` started with the demo control plane).
#[tokio::test]
async fn the_fanout_shows_the_demo_watch_cache_and_a_slow_watcher_closed() {
    let bridge = Bridge::start(&["--demo", "--demo-rate", "4"]).await;
    let browser = open(&bridge, "?speed=3", 1440, 1000).await;
    browser
        .wait_until(
            "the pods cache is drawn with its watchers",
            "document.querySelectorAll('#fanout g.cache[data-resource=pods] .watcher').length >= 2",
        )
        .await;
    let ring = browser.text("#fanout .ring-count").await;
    let (len, capacity) = ring.split_once('/').expect("len/capacity");
    assert!(
        len.parse::<u32>().unwrap() <= capacity.parse::<u32>().unwrap(),
        "{ring}"
    );
    browser
        .wait_until(
            "copies of an event run down the lanes",
            "document.querySelector('#fanout circle.copy')",
        )
        .await;
    browser
        .wait_for("#action-slow")
        .await
        .click()
        .await
        .unwrap();
    browser
        .wait_until(
            "the slow watcher is closed by the cache, and said so",
            "[...document.querySelectorAll('#fanout .closed-slow')].some(t => t.textContent.includes('slow-watcher'))",
        )
        .await;
    browser.close().await;
}
