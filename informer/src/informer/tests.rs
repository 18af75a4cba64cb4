//! The instrumented informer: each stage stamped, listeners independent,
//! events finished only when every part of their handling is done.

use super::*;
use crate::handlers::Callback;
use crate::trace::Traced;
use serde_json::json;
use std::cell::Cell;

/// A clock that ticks one µs each time it is read.
fn ticking() -> impl Fn() -> Micros {
    let t = Cell::new(1_000);
    move || {
        t.set(t.get() + 1);
        t.get()
    }
}

fn pod(name: &str, rv: u64, node: Option<&str>) -> Object {
    let mut object = json!({
        "kind": "Pod",
        "metadata": {"namespace": "default", "name": name, "resourceVersion": rv.to_string()},
        "spec": {}
    });
    if let Some(node) = node {
        object["spec"]["nodeName"] = node.into();
    }
    Object::from(object)
}

/// Notes are plain text here; each event carries its name.
type Tested = Informer<&'static str, String>;

fn pods() -> Tested {
    Informer::new(Options::pods())
}

fn enqueue(i: &mut Tested, object: Object, now: Micros) {
    let name = object.meta().name().to_string();
    i.enqueue(EventType::Added, object, name, now);
}

fn listed(objects: Vec<Object>) -> Vec<(Object, String)> {
    objects
        .into_iter()
        .map(|o| {
            let name = o.meta().name().to_string();
            (o, name)
        })
        .collect()
}

fn settle(informer: &mut Tested, now: &dyn Fn() -> Micros) -> Vec<Traced<String>> {
    informer.drain(now)
}

#[test]
fn every_stage_is_stamped_in_order_and_each_listener_says_what_it_called() {
    let now = ticking();
    let mut i = pods();
    enqueue(&mut i, pod("web-1", 5, None), now());
    let done = settle(&mut i, &now);
    assert_eq!(done.len(), 1);
    let e = &done[0];
    assert_eq!(e.carried.as_deref(), Some("web-1"));
    let m = &e.marks;
    let at = |mark: Option<crate::trace::Mark>| mark.unwrap().at;
    assert!(at(m.fifo) < at(m.indexer));
    assert!(at(m.indexer) < at(m.handlers));
    assert!(at(m.handlers) < at(m.workqueue));
    assert!(at(m.workqueue) < at(m.reconcile));
    let calls: Vec<_> = e
        .handling
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
    for c in &e.handling.calls {
        assert!(c.dequeued >= at(m.handlers) && c.returned >= c.dequeued);
    }
    let run = e.handling.reconcile.as_ref().unwrap();
    assert_eq!(run.seen_resource_version.as_deref(), Some("5"));
    assert!(run.finished > run.started);
}

#[test]
fn a_slow_listener_delays_only_itself() {
    let now = ticking();
    let mut i = pods();
    for n in 0..3 {
        enqueue(&mut i, pod(&format!("p{n}"), 10 + n, None), now());
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
    let depths: Vec<u32> = finished.iter().map(|e| e.handling.calls[0].depth).collect();
    assert_eq!(depths, [1, 2, 3], "the slow listener's buffer grew");
}

#[test]
fn a_handler_taken_and_run_later_is_stamped_from_its_dequeue_to_its_return() {
    let now = ticking();
    let mut i = pods();
    enqueue(&mut i, pod("web-1", 5, None), now());
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
    let call = &run.finished[0].handling.calls[0];
    assert_eq!(call.listener, SCHEDULER_UNSCHEDULED);
    assert!(call.returned - call.dequeued > 100);
}

#[test]
fn a_relist_reports_old_versions_and_deletions_of_unknown_final_state() {
    let now = ticking();
    let mut i: Tested = Informer::new(Options {
        resource: "configmaps".into(),
        kind: "ConfigMap".into(),
        resyncs: false,
        queue: QueueModel::default(),
    });
    let cm = |name: &str, rv: u64| {
        Object::from(
            json!({"metadata": {"namespace": "default", "name": name, "resourceVersion": rv.to_string()}}),
        )
    };
    i.enqueue_list(listed(vec![cm("a", 1), cm("b", 2)]), now());
    settle(&mut i, &now);
    i.enqueue_note("relist");
    i.enqueue_list(listed(vec![cm("a", 1)]), now());
    let p = i.process_one(&now).unwrap();
    assert_eq!(p.notes, ["relist"], "the note comes out in its place");
    let done = settle(&mut i, &now);
    let a = done.iter().find(|e| e.object.meta().name() == "a").unwrap();
    assert_eq!(a.event_type, EventType::Modified);
    assert_eq!(a.handling.old_resource_version.as_deref(), Some("1"));
    assert!(a.handling.resync, "unchanged resourceVersion: a resync");
    assert_eq!(a.handling.calls[0].callback, Callback::OnUpdate);
    let b = done.iter().find(|e| e.object.meta().name() == "b").unwrap();
    assert_eq!(b.event_type, EventType::Deleted);
    assert!(b.handling.final_state_unknown);
    assert_eq!(b.object.resource_version(), "2");
    assert!(b.listed && b.carried.is_none(), "made by the informer");
    assert_eq!(b.handling.calls[0].callback, Callback::OnDelete);
    assert!(
        b.handling
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
        let mut i: Tested = Informer::new(Options {
            queue,
            resyncs: true,
            ..Options::pods()
        });
        i.enqueue_list(listed(vec![pod("a", 1, None), pod("b", 2, None)]), now());
        settle(&mut i, &now);
        let relisted_at = now();
        i.enqueue_list(listed(vec![pod("a", 1, None)]), relisted_at);
        let mut done = settle(&mut i, &now);
        // After the relist is handled: DeltaFIFO's resync skips queued keys.
        let resynced_at = now();
        i.enqueue_resync(resynced_at);
        done.extend(settle(&mut i, &now));
        let fifo = |e: &Traced<String>| e.marks.fifo.map(|m| m.at);
        let indexer = |e: &Traced<String>| e.marks.indexer.map(|m| m.at);
        let b = done
            .iter()
            .find(|e| e.handling.final_state_unknown)
            .unwrap_or_else(|| panic!("{queue:?}: no deletion in {done:?}"));
        assert_eq!(fifo(b), Some(relisted_at), "{queue:?}");
        assert!(indexer(b) > Some(relisted_at), "{queue:?}");
        assert!(b.carried.is_none(), "{queue:?}");
        let resync = done
            .iter()
            .find(|e| e.handling.resync && fifo(e) == Some(resynced_at));
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
        enqueue(&mut i, pod("web", rv, Some("node-a")), now());
    }
    while i.process_one(&now).is_some() {}
    while i.run_listener(controller, &now).is_some() {}
    let done = settle(&mut i, &now);
    assert_eq!(done.len(), 2);
    assert!(done[1].coalesced);
    assert_eq!(
        done[0].handling.reconcile.as_ref().unwrap().started,
        done[1].handling.reconcile.as_ref().unwrap().started
    );
}
