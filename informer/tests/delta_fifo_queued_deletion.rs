//! v1.20.2's DeltaFIFO misses a relist's deletion of an object whose watch
//! ADDED is still queued when the relist is: the object is kept by the
//! Indexer (and so by everyone downstream) until the next relist.
//!
//! client-go v1.20.2, `staging/src/k8s.io/client-go/tools/cache/delta_fifo.go`,
//! `DeltaFIFO.Replace` (lines 528–609): with `knownObjects` set (an
//! informer's Indexer), the deletions are found by
//! `for _, k := range f.knownObjects.ListKeys()` (lines 581–601) alone; the
//! walk over the queued items `f.items` (lines 551–579) runs only when
//! `knownObjects == nil`. A key that is queued but not yet in the Indexer
//! gets no `DeletedFinalStateUnknown`; its queued ADDED is popped after the
//! relist and puts it in the Indexer. client-go v0.36.4's `Replace` walks
//! `f.items` first ("Do deletion detection against objects in the queue"),
//! and its RealFIFO applies a relist whole when popped, deleting whatever
//! the list lacks: neither keeps the object.
//!
//! The chaos rounds of `--kubernetes 1.20` meet this case and name it
//! (`tests/src/chaos/queued_deletion.rs`); these tests pin it down.

use serde_json::json;
use std::cell::Cell;
use watchlife_informer::informer::Options;
use watchlife_informer::shared_informer::QueueModel;
use watchlife_informer::trace::{Mark, Traced};
use watchlife_informer::{EventType, Micros, Object};

/// Notes are not used here, and events carry nothing.
type Informer = watchlife_informer::Informer<(), ()>;

/// A clock that ticks one µs each time it is read.
fn ticking() -> impl Fn() -> Micros {
    let t = Cell::new(1_000);
    move || {
        t.set(t.get() + 1);
        t.get()
    }
}

fn pod(name: &str, rv: u64) -> Object {
    Object::from(json!({
        "kind": "Pod",
        "metadata": {"namespace": "default", "name": name, "resourceVersion": rv.to_string()},
        "spec": {}
    }))
}

fn informer(queue: QueueModel) -> Informer {
    Informer::new(Options {
        queue,
        ..Options::pods()
    })
}

/// The informer holds `a`, then sees `b` ADDED on the watch; the watch
/// breaks before `b`'s DELETED comes, and the relist (which lacks `b`) is
/// queued before `b`'s ADDED was popped. Returns what finished.
fn added_then_relisted_without_it(
    informer: &mut Informer,
    now: &dyn Fn() -> Micros,
) -> Vec<Traced<()>> {
    informer.enqueue_list(vec![(pod("a", 1), ())], now());
    informer.drain(now);
    informer.enqueue(EventType::Added, pod("b", 2), (), now());
    informer.enqueue_list(vec![(pod("a", 1), ())], now());
    informer.drain(now)
}

fn at(mark: Option<Mark>) -> Micros {
    mark.expect("stamped").at
}

fn named<'a>(finished: &'a [Traced<()>], name: &str) -> Option<&'a Traced<()>> {
    finished.iter().find(|f| f.object.meta().name() == name)
}

#[test]
fn v1_20s_delta_fifo_keeps_an_object_deleted_while_its_added_was_only_queued() {
    let now = ticking();
    let mut i = informer(QueueModel::DeltaFifo);
    let finished = added_then_relisted_without_it(&mut i, &now);
    assert!(
        i.indexer().get("default/b").is_some(),
        "v1.20.2's Replace found no deletion for b: b is kept"
    );
    assert!(
        finished.iter().all(|f| !f.handling.final_state_unknown),
        "no DeletedFinalStateUnknown came for b: {:?}",
        finished
            .iter()
            .map(|f| f.object.meta().name())
            .collect::<Vec<_>>()
    );
    // What a viewer sees of it: b's ADDED was queued before the relist and
    // applied to the Indexer after it (the relist's items carry the time
    // it was queued as their FIFO mark).
    let b = named(&finished, "b").expect("b's ADDED finished");
    let relisted = finished
        .iter()
        .find(|f| f.listed)
        .expect("the relist's item finished");
    let relist_queued = at(relisted.marks.fifo);
    assert!(
        at(b.marks.fifo) < relist_queued,
        "b queued before the relist"
    );
    assert!(relist_queued < at(b.marks.indexer), "b applied after it");

    // The next relist finds b in the Indexer, and deletes it.
    i.enqueue_list(vec![(pod("a", 1), ())], now());
    let finished = i.drain(&now);
    assert!(i.indexer().get("default/b").is_none());
    let deleted = named(&finished, "b").expect("b's deletion finished");
    assert_eq!(deleted.event_type, EventType::Deleted);
    assert!(deleted.handling.final_state_unknown);
}

#[test]
fn v0_36s_real_fifo_deletes_it_with_the_relist_that_lacks_it() {
    let now = ticking();
    let mut i = informer(QueueModel::RealFifo { atomic: true });
    added_then_relisted_without_it(&mut i, &now);
    assert!(i.indexer().get("default/b").is_none());
    assert_eq!(i.indexer().len(), 1);
}
