//! The example controller live on the page, in headless Chromium: with its
//! tap sending to `watchlife --demo --accept-taps`, a Deployment created
//! with kubectl shows in the controller's own lane as a reconcile with its
//! reason and result, the watcher's requests, and the bridge's own event
//! of the version reconciled, clicked, has a waterfall that goes on into the
//! controller's hops.

mod support;

use support::tapped::Tapped;
use watchlife_tap::TapConfig;
use watchlife_tests::browser::Browser;

const NAME: &str = "configmap-per-deployment";

// One thread: the tap's layer is this thread's subscriber.
#[tokio::test(flavor = "current_thread")]
async fn the_page_draws_the_controllers_lane_and_a_reconcile_of_what_kubectl_wrote() {
    let (bridge, client) = support::demo_with(&["--accept-taps"]).await;
    let mut tapped = Tapped::start(&client, TapConfig::new(bridge.url(), NAME));
    // Live speed: the lane is the subject here, not the tokens' journey, and
    // a busy machine must not keep its frames waiting behind the animation.
    let browser = Browser::open_connected(1920, 1080, &format!("{}/?speed=4", bridge.url())).await;

    watchlife_tests::kubectl(
        &support::demo_kubeconfig(&bridge),
        &[
            "create",
            "deployment",
            "shop",
            "--image=nginx",
            "--replicas=2",
        ],
    );
    support::await_configmap(&client, "shop", 2).await;

    let lane = format!(".tap-lane[data-controller=\"{NAME}\"]");
    browser
        .wait_until(
            "the controller's lane says it is connected",
            &format!("document.querySelector('{lane} .tap-status:not(.left)')"),
        )
        .await;
    // Its latest reconcile of the Deployment, in words: because it changed
    // (it appeared, its status moved) or because its own ConfigMap did,
    // whichever came last; asking for the resync either way.
    let shop = format!(
        "[...document.querySelectorAll('{lane} .tap-reconcile')].find(r => {{ \
           const reason = r.querySelector('.tap-reason').textContent; \
           return r.querySelector('.tap-object').textContent.includes('default/shop') && \
             (reason === 'the object changed' || \
              reason === 'a related object changed (ConfigMap shop-replicas.default)') && \
             r.querySelector('.tap-result').textContent === 'requeue after 5 min'; }})"
    );
    browser
        .wait_until("a reconcile of default/shop, in words", &shop)
        .await;
    // The watcher's requests: a LIST and a WATCH of Deployments, answered.
    for verb in ["LIST", "WATCH"] {
        browser
            .wait_until(
                &format!("the watcher's {verb}"),
                &format!(
                    "[...document.querySelectorAll('{lane} .tap-request')].some(r => \
                       r.textContent.startsWith('{verb} ') && r.textContent.includes('deployments'))"
                ),
            )
            .await;
    }
    browser
        .assert_no_overlap(&format!("{lane} .tap-reconcile span"))
        .await;
    browser
        .eval("document.querySelector('#controllers').scrollIntoView() || true")
        .await;
    browser.screenshot_for_docs("controller-live.png").await;
    tapped.stop().await;
    browser.close().await;
}
