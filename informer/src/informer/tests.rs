//! The instrumented informer: each stage stamped, listeners independent,
//! events finished only when every part of their handling is done.

use super::*;
use serde_json::json;
use std::cell::Cell;
use watchlife_protocol::{Callback, ReflectorState, ReflectorUpdate};

/// A clock that ticks one µs each time it is read.
fn ticking() -> impl Fn() -> Micros {
    let t = Cell::new(1_000);
    move || {
        t.set(t.get() + 1);
        t.get()
    }
}

fn pod(name: &str, rv: u64, node: Option<&str>) -> (WatchEvent, Object) {
    let mut object = json!({
        "kind": "Pod",
        "metadata": {"namespace": "default", "name": name, "resourceVersion": rv.to_string()},
        "spec": {}
    });
    if let Some(node) = node {
        object["spec"]["nodeName"] = node.into();
    }
    let event = WatchEvent {
        event_type: EventType::Added,
        target: ObjectRef {
            resource: "pods".into(),
            kind: "Pod".into(),
            namespace: Some("default".into()),
            name: name.into(),
        },
        resource_version: rv.to_string(),
        object: watchlife_protocol::ObjectJson::from_value(&object),
        stages: Default::default(),
        initial: false,
        coalesced: false,
        handled: Default::default(),
        server: None,
    };
    let object = Object::from_json(event.object.clone());
    (event, object)
}

fn pods() -> Informer {
    Informer::new(Options::pods())
}

fn settle(informer: &mut Informer, now: &dyn Fn() -> Micros) -> Vec<WatchEvent> {
    informer.drain(now).into_iter().map(|f| f.event).collect()
}

#[test]
fn every_stage_is_stamped_in_order_and_each_listener_says_what_it_called() {
    let now = ticking();
    let mut i = pods();
    let (event, object) = pod("web-1", 5, None);
    i.enqueue(event, object, now());
    let done = settle(&mut i, &now);
    assert_eq!(done.len(), 1);
    let e = &done[0];
    let at = |s: Stage| e.stages[&s].at;
    assert!(at(Stage::Fifo) < at(Stage::Indexer));
    assert!(at(Stage::Indexer) < at(Stage::Handlers));
    assert!(at(Stage::Handlers) < at(Stage::Workqueue));
    assert!(at(Stage::Workqueue) < at(Stage::Reconcile));
    let calls: Vec<_> = e
        .handled
        .calls
        .iter()
        .map(|c| (c.listener.as_str(), c.callback))
        .collect();
    assert_eq!(
        calls,
        [
            (SCHEDULER_UNSCHEDULED, Callback::OnAdd),
            (CONTROLLER, Callback::OnAdd)
        ]
    );
    for c in &e.handled.calls {
        assert!(c.dequeued >= at(Stage::Handlers) && c.returned >= c.dequeued);
    }
    let run = e.handled.reconcile.as_ref().unwrap();
    assert_eq!(run.seen_resource_version.as_deref(), Some("5"));
    assert!(run.finished > run.started);
}

#[test]
fn a_slow_listener_delays_only_itself() {
    let now = ticking();
    let mut i = pods();
    for n in 0..3 {
        let (event, object) = pod(&format!("p{n}"), 10 + n, None);
        i.enqueue(event, object, now());
    }
    while i.process_one(&now).is_some() {}
    let controller = i.listeners().iter().position(|l| l == CONTROLLER).unwrap();
    // The controller and the workers run; the scheduler's listeners do not.
    while i.run_listener(controller, &now).is_some() {}
    let mut reconciled = 0;
    while let Some(done) = i.run_worker(0, &now) {
        assert!(
            done.is_empty(),
            "not finished while a listener still owes its call"
        );
        reconciled += 1;
    }
    assert_eq!(reconciled, 3);
    assert_eq!(i.buffered(0), 3);
    let finished = settle(&mut i, &now);
    let depths: Vec<u32> = finished.iter().map(|e| e.handled.calls[0].depth).collect();
    assert_eq!(depths, [1, 2, 3], "the slow listener's buffer grew");
}

#[test]
fn a_handler_taken_and_run_later_is_stamped_from_its_dequeue_to_its_return() {
    let now = ticking();
    let mut i = pods();
    let (event, object) = pod("web-1", 5, None);
    i.enqueue(event, object, now());
    while i.process_one(&now).is_some() {}
    let slow = i
        .listeners()
        .iter()
        .position(|l| l == SCHEDULER_UNSCHEDULED)
        .unwrap();
    let taken = i.take(slow, &now).unwrap();
    assert!(i.take(slow, &now).is_none(), "one notification, taken once");
    // Meanwhile the others run and the key is reconciled: not finished yet.
    assert!(settle(&mut i, &now).is_empty());
    let waited = now() + 100;
    let run = i.handle(taken, &|| waited);
    assert_eq!(run.finished.len(), 1);
    let call = &run.finished[0].handled.calls[0];
    assert_eq!(call.listener, SCHEDULER_UNSCHEDULED);
    assert!(call.returned - call.dequeued > 100);
}

#[test]
fn a_relist_reports_old_versions_and_deletions_of_unknown_final_state() {
    let now = ticking();
    let mut i = Informer::new(Options {
        resource: "configmaps".into(),
        kind: "ConfigMap".into(),
        resyncs: false,
        queue: QueueModel::default(),
    });
    let cm = |name: &str, rv: u64| {
        let (mut e, _) = pod(name, rv, None);
        e.target.resource = "configmaps".into();
        e.target.kind = "ConfigMap".into();
        let o = Object::from(
            json!({"metadata": {"namespace": "default", "name": name, "resourceVersion": rv.to_string()}}),
        );
        e.object = o.json().clone();
        e.initial = true;
        (e, o)
    };
    i.enqueue_list(vec![cm("a", 1), cm("b", 2)], now());
    settle(&mut i, &now);
    i.enqueue_note(FrameBody::Reflector(ReflectorUpdate {
        resource: "configmaps".into(),
        state: ReflectorState::Relist {
            reason: "410".into(),
        },
    }));
    i.enqueue_list(vec![cm("a", 1)], now());
    let p = i.process_one(&now).unwrap();
    assert_eq!(p.notes.len(), 1, "the note comes out in its place");
    let done = settle(&mut i, &now);
    let a = done.iter().find(|e| e.target.name == "a").unwrap();
    assert_eq!(a.event_type, EventType::Modified);
    assert_eq!(a.handled.old_resource_version.as_deref(), Some("1"));
    assert!(a.handled.resync, "unchanged resourceVersion: a resync");
    assert_eq!(a.handled.calls[0].callback, Callback::OnUpdate);
    let b = done.iter().find(|e| e.target.name == "b").unwrap();
    assert_eq!(b.event_type, EventType::Deleted);
    assert!(b.handled.final_state_unknown);
    assert_eq!(b.resource_version, "2");
    assert_eq!(b.target.resource, "configmaps");
    assert_eq!(b.handled.calls[0].callback, Callback::OnDelete);
    assert!(
        b.handled
            .reconcile
            .as_ref()
            .unwrap()
            .seen_resource_version
            .is_none()
    );
}

/// What the informer makes itself waited in the FIFO from the relist or
/// the resync that made it, in every queue model; its Indexer mark is its
/// own.
#[test]
fn a_relists_deletions_and_a_resyncs_updates_are_stamped_from_when_they_were_queued() {
    for queue in [
        QueueModel::DeltaFifo,
        QueueModel::RealFifo { atomic: false },
        QueueModel::RealFifo { atomic: true },
    ] {
        let now = ticking();
        let mut i = Informer::new(Options {
            queue,
            resyncs: true,
            ..Options::pods()
        });
        i.enqueue_list(vec![pod("a", 1, None), pod("b", 2, None)], now());
        settle(&mut i, &now);
        let relisted_at = now();
        i.enqueue_list(vec![pod("a", 1, None)], relisted_at);
        let mut done = settle(&mut i, &now);
        // After the relist is handled: DeltaFIFO's resync skips queued keys.
        let resynced_at = now();
        i.enqueue_resync(resynced_at);
        done.extend(settle(&mut i, &now));
        let fifo = |e: &WatchEvent| e.stages.get(&Stage::Fifo).map(|m| m.at);
        let indexer = |e: &WatchEvent| e.stages.get(&Stage::Indexer).map(|m| m.at);
        let b = done
            .iter()
            .find(|e| e.handled.final_state_unknown)
            .unwrap_or_else(|| panic!("{queue:?}: no deletion in {done:?}"));
        assert_eq!(fifo(b), Some(relisted_at), "{queue:?}");
        assert!(indexer(b) > Some(relisted_at), "{queue:?}");
        assert!(!b.stages.contains_key(&Stage::Reflector), "{queue:?}");
        let resync = done
            .iter()
            .find(|e| e.handled.resync && fifo(e) == Some(resynced_at));
        assert!(
            resync.is_some(),
            "{queue:?}: no resync queued at {resynced_at}: {done:?}"
        );
    }
}

#[test]
fn events_of_one_key_queued_while_it_waits_merge_into_one_reconcile() {
    let now = ticking();
    let mut i = pods();
    let controller = i.listeners().iter().position(|l| l == CONTROLLER).unwrap();
    for rv in [1, 2] {
        let (event, object) = pod("web", rv, Some("node-a"));
        i.enqueue(event, object, now());
    }
    while i.process_one(&now).is_some() {}
    while i.run_listener(controller, &now).is_some() {}
    let done = settle(&mut i, &now);
    assert_eq!(done.len(), 2);
    assert!(done[1].coalesced);
    assert_eq!(
        done[0].handled.reconcile.as_ref().unwrap().started,
        done[1].handled.reconcile.as_ref().unwrap().started
    );
}
