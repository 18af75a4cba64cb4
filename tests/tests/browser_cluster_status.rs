//! The cluster's status line on a real kube-apiserver, as the page says it:
//! an RBAC denial in words; a stopped apiserver said unreachable, since
//! when, with a countdown to the next try, within 2 s of the bridge
//! noticing; "back since" once it returns. The header's link badge stays
//! "connected" throughout: it is the page's link to the bridge.

use std::time::{Duration, Instant};
use watchlife_protocol::{FrameBody, ReflectorState};
use watchlife_tests::bridge::Bridge;
use watchlife_tests::browser::Browser;
use watchlife_tests::real_cluster::RealCluster;
use watchlife_tests::ws::Viewer;

/// How long an expected frame may take on a busy machine.
const WAIT: Duration = Duration::from_secs(60);

/// How soon after the bridge reports a failure the page must say it.
const SAID_WITHIN: Duration = Duration::from_secs(2);

/// The status line's text, or "" while there is none.
const LINE: &str =
    "(document.querySelector('#cluster-status .cluster-status-headline')?.textContent ?? '')";

/// The text of the status line, read once.
async fn line(browser: &Browser) -> String {
    browser
        .eval(LINE)
        .await
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// A bridge on the cluster (Kubernetes 1.20's rules, as the apiserver's),
/// watching `resources` with `kubeconfig`, and a page open on it.
async fn page_on(kubeconfig: &std::path::Path, resources: &str) -> (Bridge, Browser) {
    let bridge = Bridge::on_cluster(kubeconfig, resources).await;
    let browser = Browser::open_connected(1920, 1080, &bridge.url()).await;
    (bridge, browser)
}

/// Polls the status line until `pattern` (a JavaScript regular expression)
/// matches it or `within` has passed; returns the line last read.
async fn line_matching(browser: &Browser, pattern: &str, within: Duration) -> Option<String> {
    let check = format!("/{pattern}/.test({LINE})");
    let deadline = Instant::now() + within;
    loop {
        if browser.eval(&check).await.as_bool() == Some(true) {
            return Some(line(browser).await);
        }
        if Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_cluster_status_says_a_denial_an_outage_with_a_countdown_and_the_return() {
    let mut cluster = RealCluster::start().await;

    // A user with no role: the denial in words, the server's own a click away.
    let nobody = cluster.kubeconfig_acting_as("nobody.kubeconfig", "nobody", &[]);
    let (bridge, browser) = page_on(&nobody, "pods").await;
    let denial = line_matching(&browser, "^forbidden: ", WAIT)
        .await
        .expect("the denial is said");
    assert!(
        denial.starts_with("forbidden: watchlife may not list pods (RBAC) · retrying "),
        "{denial}"
    );
    let advice = browser
        .eval("document.querySelector('#cluster-status .cluster-status-words').textContent")
        .await;
    let advice = advice.as_str().unwrap_or_default();
    assert!(
        advice.starts_with("grant \"nobody\" get, list and watch on pods"),
        "what to do: {advice}"
    );
    let raw = browser
        .eval("document.querySelector('#cluster-status .cluster-status-raw code').textContent")
        .await;
    let raw = raw.as_str().unwrap_or_default();
    assert!(
        raw.contains("\"nobody\"") && raw.contains("forbidden"),
        "{raw}"
    );
    browser.close().await;
    drop(bridge);

    // The admin: reachable, then stopped, then back.
    let admin = cluster.kubeconfig().to_path_buf();
    let (bridge, browser) = page_on(&admin, "configmaps").await;
    line_matching(&browser, "^cluster reachable$", WAIT)
        .await
        .expect("the cluster is said reachable once it answered");
    let mut viewer = Viewer::connect(&bridge.ws_url()).await;
    cluster.stop_apiserver();
    viewer
        .until(WAIT, |f| match &f.body {
            FrameBody::Reflector(u) => {
                matches!(u.state, ReflectorState::Backoff { .. }).then_some(())
            }
            _ => None,
        })
        .await;
    let unreachable = r"^cluster unreachable since \d\d:\d\d:\d\d · retrying (in \d+ s|now)$";
    let said = line_matching(&browser, unreachable, SAID_WITHIN)
        .await
        .unwrap_or_else(|| {
            panic!("the page did not say the cluster is unreachable within {SAID_WITHIN:?}")
        });
    let since = |l: &str| l.split(" · ").next().unwrap_or_default().to_string();
    // It stays said, from the same moment, while the Reflector keeps trying;
    // the badge of the page's own link stays "connected".
    tokio::time::sleep(Duration::from_secs(3)).await;
    let later = line(&browser).await;
    assert_eq!(since(&later), since(&said), "{said} / {later}");
    let words = browser
        .eval("document.querySelector('#cluster-status .cluster-status-words').textContent")
        .await;
    assert!(
        words
            .as_str()
            .is_some_and(|w| w.starts_with("the apiserver refused the connection")),
        "{words}"
    );
    assert_eq!(browser.text("#link").await, "connected");
    browser
        .click("#cluster-status .cluster-status-raw summary")
        .await;
    browser.screenshot_for_docs("cluster-status.png").await;

    cluster.start_apiserver().await;
    let back = line_matching(&browser, r"^back since \d\d:\d\d:\d\d$", WAIT).await;
    assert!(back.is_some(), "not said back: {:?}", line(&browser).await);
    browser.close().await;
}
