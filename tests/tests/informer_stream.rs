//! The informer as viewers see it, on the real binary and the embedded demo:
//! each listener's calls, resyncs delivered as client-go delivers them, the
//! workers, and stage times that only go forward along an event's path.

use std::collections::BTreeSet;
use std::time::Duration;
use watchlife_protocol::{Callback, FrameBody, Stage, WatchEvent};
use watchlife_tests::bridge::Bridge;
use watchlife_tests::ws::Viewer;

/// How long an expected frame may take on a busy machine.
const WAIT: Duration = Duration::from_secs(30);

/// Live events (not BOOKMARK / ERROR markers) until `done` says enough.
async fn events_until(
    viewer: &mut Viewer,
    mut done: impl FnMut(&WatchEvent) -> bool,
) -> Vec<WatchEvent> {
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + WAIT * 2;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if let FrameBody::Event(e) = viewer.next_frame(left).await.body
            && !e.target.name.is_empty()
        {
            let stop = done(&e);
            seen.push(e);
            if stop {
                return seen;
            }
        }
    }
}

#[tokio::test]
async fn a_resync_redelivers_every_object_as_an_update_of_the_same_version() {
    let bridge = Bridge::start(&[
        "--demo",
        "--demo-rate",
        "5",
        "--resources",
        "pods",
        "--resync",
        "2s",
    ])
    .await;
    let mut viewer = Viewer::connect(&bridge.ws_url()).await;
    let events = events_until(&mut viewer, |e| e.handled.resync && !e.initial).await;
    let resync = events.last().unwrap();
    assert_eq!(
        resync.handled.old_resource_version.as_deref(),
        Some(resync.resource_version.as_str()),
        "a resync is an update from the object to itself: {resync:?}"
    );
    let controller = resync
        .handled
        .calls
        .iter()
        .find(|c| c.listener == "controller")
        .expect("the controller takes resyncs");
    assert_eq!(controller.callback, Callback::OnUpdate);
}

#[tokio::test]
async fn with_no_resync_period_nothing_is_delivered_again() {
    let bridge = Bridge::start(&["--demo", "--demo-rate", "20", "--resources", "pods"]).await;
    let mut viewer = Viewer::connect(&bridge.ws_url()).await;
    let mut changes = 0;
    let events = events_until(&mut viewer, |e| {
        changes += usize::from(!e.initial);
        changes >= 40
    })
    .await;
    assert!(
        events.iter().all(|e| !e.handled.resync),
        "no resync without --resync"
    );
}

#[tokio::test]
async fn every_listener_reports_its_call_and_each_worker_its_reconcile_in_order() {
    let bridge = Bridge::start(&[
        "--demo",
        "--demo-rate",
        "50",
        "--resources",
        "pods",
        "--workers",
        "3",
    ])
    .await;
    let mut viewer = Viewer::connect(&bridge.ws_url()).await;
    let mut listeners = BTreeSet::new();
    let mut workers = BTreeSet::new();
    let events = events_until(&mut viewer, |e| {
        for call in &e.handled.calls {
            listeners.insert(call.listener.clone());
        }
        if let Some(run) = &e.handled.reconcile {
            workers.insert(run.worker);
        }
        listeners.len() == 3 && workers.len() >= 2
    })
    .await;
    assert!(
        listeners.contains("scheduler: unscheduled"),
        "{listeners:?}"
    );
    assert!(listeners.contains("scheduler: scheduled"), "{listeners:?}");
    assert!(listeners.contains("controller"), "{listeners:?}");
    assert!(workers.iter().all(|w| *w < 3), "{workers:?}");
    for e in events.iter().filter(|e| !e.initial) {
        // Along one event's path the stamps never go back: each was read
        // after the one before, on the bridge's one clock.
        let client_side: Vec<u64> = [
            Stage::Reflector,
            Stage::Fifo,
            Stage::Indexer,
            Stage::Handlers,
        ]
        .iter()
        .filter_map(|s| e.stages.get(s).map(|m| m.at))
        .collect();
        assert!(client_side.windows(2).all(|w| w[0] <= w[1]), "{e:?}");
        let distributed = e.stages[&Stage::Handlers].at;
        for call in &e.handled.calls {
            assert!(
                distributed <= call.dequeued && call.dequeued <= call.returned,
                "{e:?}"
            );
        }
        if let Some(run) = &e.handled.reconcile {
            let queued = e.stages[&Stage::Workqueue].at;
            assert!(
                queued <= run.started && run.started <= run.finished,
                "{e:?}"
            );
            assert_eq!(e.stages[&Stage::Reconcile].at, run.started);
        }
    }
}
