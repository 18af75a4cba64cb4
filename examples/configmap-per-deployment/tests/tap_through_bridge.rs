//! The tap as a controller author runs it, on the demo: the example
//! controller sends to `watchlife --accept-taps`, and a viewer of that
//! watchlife gets every reconcile the controller ran (reason and result, in
//! order per object, as the controller's own journal has it), each matched
//! by resourceVersion to the bridge's own event of the same Deployment; and
//! the controller settles, as it would on kube-apiserver.

mod support;

use std::time::Duration;

use support::tapped::Tapped;
use support::through_bridge::Watching;
use watchlife_tap::TapConfig;

const NAME: &str = "configmap-per-deployment";

/// A quiet spell: no reconcile for this long means the controller settled.
/// The demo's own controllers finish with a Deployment within half a second
/// at the idle pace.
const QUIET: Duration = Duration::from_secs(2);

// One thread: the tap's layer is this thread's subscriber.
#[tokio::test(flavor = "current_thread")]
async fn every_reconcile_reaches_the_viewers_matched_to_the_bridges_own_event() {
    let (bridge, client) = support::demo_with(&["--accept-taps"]).await;
    let watching = Watching::start(&bridge).await;
    let mut tapped = Tapped::start(&client, TapConfig::new(bridge.url(), NAME));
    let journal = tapped.journal.clone();

    support::create(&client, "web", 1).await;
    support::await_configmap(&client, "web", 1).await;
    support::scale(&client, "web", 4).await;
    support::await_configmap(&client, "web", 4).await;
    support::create(&client, "api", 2).await;
    support::await_configmap(&client, "api", 2).await;

    // It settles: an apply that changes nothing makes no event, so no
    // reconcile follows it (the demo, like kube-apiserver, writes nothing
    // for an update that changes nothing).
    let deadline = tokio::time::Instant::now() + support::PATIENCE;
    loop {
        let before = journal.entries().len();
        tokio::time::sleep(QUIET).await;
        let after = journal.entries();
        if after.len() == before {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "reconciles go on with nothing changing: {:?}",
            &after[before..]
        );
    }

    let (_, objects) = watching.prove(&mut tapped, NAME).await;
    assert_eq!(objects, 2, "web and api");
    assert_eq!(
        tapped.tap.dropped(),
        0,
        "nothing dropped with watchlife reading"
    );
}
