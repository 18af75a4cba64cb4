//! The first proof, against the demo control plane: every reconcile the
//! example controller ran was sent by its tap with its reason and result,
//! in order, per object; nothing the tap sent is invented (the controller's
//! own journal is the reference).

mod support;

use std::time::Duration;

use configmap_per_deployment::RESYNC;
use kube::api::{Api, DeleteParams};
use support::tapped::Tapped;
use watchlife_protocol::tap::{RequestVerb, TapFrame};
use watchlife_tap::TapConfig;

// One thread: the tap's layer is this thread's subscriber, and every task
// (the controller's, kube's) runs on it.
#[tokio::test(flavor = "current_thread")]
async fn every_reconcile_is_told_with_its_reason_and_result_in_order() {
    let (_bridge, client) = support::demo().await;
    let (url, frames) = support::receiver().await;
    let mut tapped = Tapped::start(&client, TapConfig::new(url, "configmap-per-deployment"));

    support::create(&client, "web", 1).await;
    support::create(&client, "api", 2).await;
    support::await_configmap(&client, "web", 1).await;
    support::await_configmap(&client, "api", 2).await;
    support::scale(&client, "web", 3).await;
    support::await_configmap(&client, "web", 3).await;
    Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(client.clone(), "default")
        .delete("api", &DeleteParams::default())
        .await
        .unwrap();
    support::scale(&client, "web", 5).await;
    support::await_configmap(&client, "web", 5).await;

    // Stopped first, so that the journal is whole; then every reconcile it
    // holds has its end among the frames.
    let journal = tapped.stop().await;
    let deadline = tokio::time::Instant::now() + support::PATIENCE;
    let frames = loop {
        let ends = |f: &Vec<TapFrame>| {
            f.iter()
                .filter(|f| matches!(f, TapFrame::ReconcileEnd(_)))
                .count()
        };
        let (got, want) = (frames.lock().unwrap().clone(), journal.len());
        if ends(&got) >= want && got.iter().any(|f| matches!(f, TapFrame::Stats(_))) {
            break got;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} of {want} reconciles told",
            ends(&got)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        tapped.tap.dropped(),
        0,
        "nothing dropped with a reading peer"
    );

    let kept = support::proof::every_reconcile_told(&frames, &journal);
    assert!(kept.contains_key(&("default".into(), "web".into())));
    assert!(journal.iter().all(|e| e.result == Ok(Some(RESYNC))));
    // The watcher's requests were seen: a LIST and a WATCH of Deployments.
    for verb in [RequestVerb::List, RequestVerb::Watch] {
        assert!(
            frames.iter().any(|f| matches!(f, TapFrame::Request(r)
                if r.verb == verb && r.url.contains("/deployments") && r.status == Some(200))),
            "a {verb:?} of deployments"
        );
    }
    // Sequence numbers: increasing, no gap (nothing dropped).
    let seqs: Vec<u64> = frames
        .iter()
        .map(TapFrame::seq)
        .filter(|s| *s > 0)
        .collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "no gap in seq");
}
