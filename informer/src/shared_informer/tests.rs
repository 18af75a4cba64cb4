//! HandleDeltas, the listeners and both queues, as client-go's
//! sharedIndexInformer behaves: v0.36's RealFIFO (the default here) and
//! v1.20's DeltaFIFO.

use super::*;
use serde_json::json;

fn cm(name: &str, rv: u64) -> Object {
    Object::from(
        json!({"metadata": {"namespace": "default", "name": name, "resourceVersion": rv.to_string()}}),
    )
}

/// (callback, key, rv, old rv, final state unknown, resync) per notification.
type Seen = (Kind, String, String, Option<String>, bool, bool);

fn drain(informer: &mut SharedInformer<&'static str>, listener: usize) -> Vec<Seen> {
    while informer.process_one().is_some() {}
    std::iter::from_fn(|| informer.pop(listener))
        .map(|n| {
            (
                n.kind,
                n.key.clone(),
                n.object.resource_version().to_string(),
                n.old.as_ref().map(|o| o.resource_version().to_string()),
                n.final_state_unknown,
                n.resync,
            )
        })
        .collect()
}

fn seen(kind: Kind, name: &str, rv: u64, old: Option<u64>, fsu: bool, resync: bool) -> Seen {
    (
        kind,
        format!("default/{name}"),
        rv.to_string(),
        old.map(|o| o.to_string()),
        fsu,
        resync,
    )
}

#[test]
fn a_relist_updates_what_is_still_there_and_deletes_what_vanished_as_final_state_unknown() {
    let mut i = SharedInformer::default();
    let l = i.add_listener("controller", false);
    i.queue_list(vec![cm("a", 5), cm("b", 6)], 0);
    assert_eq!(
        drain(&mut i, l),
        [
            seen(Kind::Add, "a", 5, None, false, false),
            seen(Kind::Add, "b", 6, None, false, false)
        ]
    );
    i.queue_delta(DeltaType::Updated, cm("a", 7));
    // The relist: a unchanged since 7, b gone, c new. v0.36 applies it
    // whole when it is popped: the deletions first.
    i.queue_list(vec![cm("a", 7), cm("c", 9)], 0);
    assert_eq!(
        drain(&mut i, l),
        [
            seen(Kind::Update, "a", 7, Some(5), false, false),
            seen(Kind::Delete, "b", 6, Some(6), true, false),
            seen(Kind::Update, "a", 7, Some(7), false, true),
            seen(Kind::Add, "c", 9, None, false, false),
        ]
    );
    assert!(i.indexer().get("default/b").is_none());
    assert!(i.has_synced());
}

#[test]
fn the_indexer_is_updated_before_listeners_hear_and_a_watch_delete_carries_the_events_object() {
    let mut i = SharedInformer::<&str>::default();
    let l = i.add_listener("controller", false);
    i.queue_delta(DeltaType::Added, cm("a", 1));
    i.queue_delta(DeltaType::Deleted, cm("a", 2));
    let Some(Processed::Distributed(d)) = i.process_one() else {
        panic!()
    };
    assert_eq!(d[0].listeners, [(l, 1)]);
    assert!(i.indexer().get("default/a").is_some());
    assert_eq!(
        drain(&mut i, l),
        [
            seen(Kind::Add, "a", 1, None, false, false),
            seen(Kind::Delete, "a", 2, Some(1), false, false)
        ]
    );
}

#[test]
fn a_resync_goes_only_to_listeners_that_take_resyncs() {
    let mut i = SharedInformer::<&str>::default();
    let takes = i.add_listener("controller", true);
    let not = i.add_listener("scheduler", false);
    i.queue_list(vec![cm("a", 1)], 0);
    drain(&mut i, not);
    drain(&mut i, takes);
    i.queue_resync(0);
    assert_eq!(
        drain(&mut i, takes),
        [seen(Kind::Update, "a", 1, Some(1), false, true)]
    );
    assert!(drain(&mut i, not).is_empty());
    // From now on a relist of an unchanged object is a resync, also only for `takes`.
    i.queue_list(vec![cm("a", 1)], 0);
    assert_eq!(drain(&mut i, takes).len(), 1);
    assert!(drain(&mut i, not).is_empty());
}

#[test]
fn listeners_have_their_own_buffers_and_notes_keep_their_place() {
    let mut i = SharedInformer::default();
    let fast = i.add_listener("fast", false);
    let slow = i.add_listener("slow", false);
    i.queue_delta(DeltaType::Added, cm("a", 1));
    i.queue_note("relist");
    i.queue_delta(DeltaType::Added, cm("b", 2));
    assert!(matches!(i.process_one(), Some(Processed::Distributed(_))));
    assert!(matches!(i.process_one(), Some(Processed::Note("relist"))));
    assert!(matches!(i.process_one(), Some(Processed::Distributed(_))));
    assert_eq!(i.pop(fast).unwrap().key, "default/a");
    assert_eq!(i.pop(fast).unwrap().key, "default/b");
    assert_eq!(
        i.buffered(slow),
        2,
        "the slow listener's buffer waits for it alone"
    );
}

fn delta_fifo() -> SharedInformer<&'static str> {
    SharedInformer::with_queue(Indexer::default(), QueueModel::DeltaFifo)
}

#[test]
fn delta_fifo_keeps_one_entry_per_key_with_its_deltas_in_order() {
    let mut i = delta_fifo();
    let l = i.add_listener("controller", false);
    i.queue_list(vec![cm("a", 1)], 0);
    drain(&mut i, l);
    // Two quick changes to a, one to b, before the informer runs.
    assert_eq!(i.queue_delta(DeltaType::Updated, cm("a", 2)).depth, 1);
    assert_eq!(i.queue_delta(DeltaType::Added, cm("b", 3)).depth, 2);
    assert_eq!(i.queue_delta(DeltaType::Updated, cm("a", 4)).depth, 2);
    // One pop hands both of a's deltas to HandleDeltas.
    let Some(Processed::Distributed(d)) = i.process_one() else {
        panic!()
    };
    assert_eq!(d.len(), 2);
    assert_eq!(
        drain(&mut i, l),
        [
            seen(Kind::Update, "a", 2, Some(1), false, false),
            seen(Kind::Update, "a", 4, Some(2), false, false),
            seen(Kind::Add, "b", 3, None, false, false),
        ]
    );
}

#[test]
fn delta_fifo_finds_a_relists_deletions_when_it_is_queued_and_puts_them_last() {
    let mut i = delta_fifo();
    let l = i.add_listener("controller", false);
    i.queue_list(vec![cm("a", 1), cm("b", 2)], 0);
    drain(&mut i, l);
    i.queue_list(vec![cm("c", 5), cm("a", 1)], 0);
    // The Indexer changes after the relist was queued: the tombstone
    // still carries b as the Indexer had it then.
    assert_eq!(
        drain(&mut i, l),
        [
            seen(Kind::Add, "c", 5, None, false, false),
            seen(Kind::Update, "a", 1, Some(1), false, true),
            seen(Kind::Delete, "b", 2, Some(2), true, false),
        ]
    );
}

#[test]
fn delta_fifo_keeps_one_of_two_deletions_in_a_row() {
    let mut i = delta_fifo();
    let l = i.add_listener("controller", false);
    i.queue_list(vec![cm("a", 1)], 0);
    drain(&mut i, l);
    let first = i.queue_delta(DeltaType::Deleted, cm("a", 2));
    let second = i.queue_delta(DeltaType::Deleted, cm("a", 2));
    assert_eq!(second.dropped, Some(first.id));
    assert_eq!(
        drain(&mut i, l),
        [seen(Kind::Delete, "a", 2, Some(1), false, false)]
    );
}

#[test]
fn delta_fifo_resync_skips_keys_already_queued() {
    let mut i = delta_fifo();
    let l = i.add_listener("controller", true);
    i.queue_list(vec![cm("a", 1), cm("b", 2)], 0);
    drain(&mut i, l);
    i.queue_delta(DeltaType::Updated, cm("a", 3));
    i.queue_resync(0);
    assert_eq!(
        drain(&mut i, l),
        [
            seen(Kind::Update, "a", 3, Some(1), false, false),
            seen(Kind::Update, "b", 2, Some(2), false, true),
        ]
    );
}

#[test]
fn real_fifo_says_which_adds_were_in_the_initial_list() {
    let mut i = SharedInformer::<&str>::default();
    let l = i.add_listener("controller", false);
    // Notes (the Reflector's reports) around the list are no items of the
    // queue: they do not hold HasSynced back.
    i.queue_note("streaming list");
    i.queue_list(vec![cm("a", 1)], 0);
    i.queue_note("initial events end");
    i.queue_delta(DeltaType::Added, cm("b", 2));
    while i.process_one().is_some() {}
    assert!(i.pop(l).unwrap().in_initial_list);
    assert!(!i.pop(l).unwrap().in_initial_list);
    // v1.20's OnAdd has no such argument.
    let mut old = delta_fifo();
    let l = old.add_listener("controller", false);
    old.queue_list(vec![cm("a", 1)], 0);
    old.process_one();
    assert!(!old.pop(l).unwrap().in_initial_list);
}

#[test]
fn real_fifo_without_atomic_relists_queues_the_deletions_first_then_each_object() {
    let mut i = SharedInformer::<&str>::with_queue(
        Indexer::default(),
        QueueModel::RealFifo { atomic: false },
    );
    let l = i.add_listener("controller", false);
    i.queue_list(vec![cm("a", 1), cm("b", 2)], 0);
    drain(&mut i, l);
    let (_, depth) = i.queue_list(vec![cm("c", 3)], 0);
    assert_eq!(
        depth, 3,
        "two tombstones and one Replaced, each its own entry"
    );
    assert_eq!(
        drain(&mut i, l),
        [
            seen(Kind::Delete, "a", 1, Some(1), true, false),
            seen(Kind::Delete, "b", 2, Some(2), true, false),
            seen(Kind::Add, "c", 3, None, false, false),
        ]
    );
}
