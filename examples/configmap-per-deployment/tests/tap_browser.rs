//! The example controller live on the page, in headless Chromium: with its
//! tap sending to `watchlife --demo --accept-taps`, a Deployment created
//! with kubectl shows in the controller's own lane as a reconcile with its
//! reason and result, the watcher's requests, and the bridge's own event
//! of the version reconciled, clicked, has a waterfall that goes on into the
//! controller's hops.

mod support;

use configmap_per_deployment::{Journal, run_tapped};
use tracing_subscriber::prelude::*;
use watchlife_tap::{Tap, TapConfig};
use watchlife_tests::browser::Browser;

const NAME: &str = "configmap-per-deployment";

// One thread: the tap's layer is this thread's subscriber.
#[tokio::test(flavor = "current_thread")]
async fn the_page_draws_the_controllers_lane_and_a_reconcile_of_what_kubectl_wrote() {
    let (bridge, client) = support::demo_with(&["--accept-taps"]).await;
    let tap = Tap::connect(TapConfig::new(bridge.url(), NAME)).unwrap();
    let _subscriber =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(tap.layer()));
    let controller = tokio::spawn(run_tapped(client.clone(), Journal::keeping(), tap.clone()));
    let browser = Browser::open_connected(1920, 1080, &bridge.url()).await;

    let created = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(support::demo_kubeconfig(&bridge))
        .args([
            "create",
            "deployment",
            "shop",
            "--image=nginx",
            "--replicas=2",
        ])
        .output()
        .expect("kubectl runs");
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    support::await_configmap(&client, "shop", 2).await;

    let lane = format!(".tap-lane[data-controller=\"{NAME}\"]");
    browser
        .wait_until(
            "the controller's lane says it is connected",
            &format!("document.querySelector('{lane} .tap-status:not(.left)')"),
        )
        .await;
    // Its first reconcile of the Deployment: because it appeared, and asking
    // for the resync.
    let first_shop = format!(
        "[...document.querySelectorAll('{lane} .tap-reconcile')].find(r => \
           r.querySelector('.tap-object').textContent.includes('default/shop') && \
           r.querySelector('.tap-reason').textContent === 'the object changed' && \
           r.querySelector('.tap-result').textContent === 'requeue after 5 min')"
    );
    browser
        .wait_until("a reconcile of default/shop, in words", &first_shop)
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
    controller.abort();
    browser.close().await;
}
