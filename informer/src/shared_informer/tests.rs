//! HandleDeltas and the listeners, as client-go v1.20's sharedIndexInformer
//! behaves.

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
    i.queue_list(vec![cm("a", 5), cm("b", 6)]);
    assert_eq!(
        drain(&mut i, l),
        [
            seen(Kind::Add, "a", 5, None, false, false),
            seen(Kind::Add, "b", 6, None, false, false)
        ]
    );
    i.queue_delta(DeltaType::Updated, cm("a", 7));
    // The relist: a unchanged since 7, b gone, c new.
    i.queue_list(vec![cm("a", 7), cm("c", 9)]);
    assert_eq!(
        drain(&mut i, l),
        [
            seen(Kind::Update, "a", 7, Some(5), false, false),
            seen(Kind::Update, "a", 7, Some(7), false, true),
            seen(Kind::Add, "c", 9, None, false, false),
            seen(Kind::Delete, "b", 6, Some(6), true, false),
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
    i.queue_list(vec![cm("a", 1)]);
    drain(&mut i, not);
    drain(&mut i, takes);
    i.queue_resync();
    assert_eq!(
        drain(&mut i, takes),
        [seen(Kind::Update, "a", 1, Some(1), false, true)]
    );
    assert!(drain(&mut i, not).is_empty());
    // From now on a relist of an unchanged object is a resync, also only for `takes`.
    i.queue_list(vec![cm("a", 1)]);
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
