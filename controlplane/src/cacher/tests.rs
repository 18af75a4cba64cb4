use super::*;
use crate::resource::{CONFIGMAPS, PODS};
use crate::store::Store;
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::mpsc::error::TryRecvError;
use watchlife_protocol::EventType;

struct World {
    now: Arc<AtomicU64>,
    store: Store,
    cacher: Cacher,
}

impl World {
    fn new() -> Self {
        let now = Arc::new(AtomicU64::new(10_000_000));
        let clock = {
            let now = now.clone();
            Clock::new(move || now.load(Ordering::Relaxed))
        };
        let store = Store::new(clock.clone());
        let cacher = Cacher::new(
            PODS,
            WindowBounds::fixed(100),
            store.revision(),
            watcher::DEMO_BOOKMARK_FREQUENCY,
            clock,
        );
        World { now, store, cacher }
    }

    fn advance(&self, micros: Micros) {
        self.now.fetch_add(micros, Ordering::Relaxed);
    }

    fn pod(&mut self, name: &str) {
        let key = PODS.key(Some("default"), name);
        self.store
            .create(
                &key,
                json!({"metadata": {"namespace": "default", "name": name}}),
            )
            .unwrap();
    }

    /// Runs the Cacher's Reflector until it waits.
    fn reflect(&mut self) -> Progress {
        loop {
            match self.cacher.reflect(&self.store) {
                Progress::Moved => continue,
                other => return other,
            }
        }
    }

    fn dispatch_all(&mut self) -> Progress {
        loop {
            match self.cacher.dispatch().0 {
                Progress::Moved => continue,
                other => return other,
            }
        }
    }
}

fn drain(rx: &mut mpsc::Receiver<Delivery>) -> Vec<Delivery> {
    std::iter::from_fn(|| rx.try_recv().ok()).collect()
}

#[test]
fn the_reflector_lists_then_reads_the_store_watch_into_incoming() {
    let mut w = World::new();
    w.pod("before");
    assert_eq!(w.reflect(), Progress::Idle { until: None });
    assert_eq!(w.cacher.lists(), 1);
    assert_eq!(w.cacher.cache().object_count(), 1, "listed");
    assert_eq!(w.cacher.incoming_len(), 0, "a LIST is no event");
    w.pod("a");
    let key = CONFIGMAPS.key(Some("default"), "not-a-pod");
    w.store.create(&key, json!({})).unwrap();
    w.pod("b");
    w.reflect();
    assert_eq!(w.cacher.incoming_len(), 2, "only its own type");
    assert_eq!(w.cacher.cache().revision(), w.store.revision());
}

#[test]
fn a_full_incoming_holds_the_reflector_back() {
    let mut w = World::new();
    w.reflect();
    for i in 0..INCOMING_CAPACITY + 5 {
        w.pod(&format!("p{i}"));
    }
    assert_eq!(w.reflect(), Progress::Blocked { until: None });
    assert_eq!(w.cacher.incoming_len(), INCOMING_CAPACITY);
    w.cacher.dispatch();
    assert_eq!(w.cacher.reflect(&w.store), Progress::Moved, "room again");
}

#[test]
fn every_hop_is_stamped_in_order() {
    let mut w = World::new();
    w.reflect();
    let (_, mut rx) = w.cacher.watch(WatchOptions::named("bridge", None)).unwrap();
    w.pod("a");
    w.advance(100);
    w.reflect();
    w.advance(200);
    w.dispatch_all();
    let d = drain(&mut rx).pop().unwrap();
    let times = d.event.times.unwrap();
    assert_eq!(d.origin, Origin::Live);
    assert!(times.committed_at < times.reflected_at);
    assert!(times.reflected_at <= times.cached_at);
    let dispatched = d.event.dispatched_at().unwrap();
    assert!(times.cached_at < dispatched);
    assert!(dispatched <= d.buffered_at);
    assert_eq!((times.incoming_depth, d.buffer_depth), (1, 1));
}

#[test]
fn a_full_buffer_blocks_the_dispatcher_for_its_budget_then_closes_the_watcher() {
    let mut w = World::new();
    w.reflect();
    let slow = WatchOptions {
        buffer: Some(1),
        ..WatchOptions::named("slow", None)
    };
    let (slow_id, mut slow_rx) = w.cacher.watch(slow).unwrap();
    let (_, mut fast) = w.cacher.watch(WatchOptions::named("fast", None)).unwrap();
    // Two seconds in, the budget holds 100 ms.
    w.advance(2_000_000);
    w.pod("a");
    w.pod("b");
    w.reflect();
    assert_eq!(w.cacher.dispatch().0, Progress::Moved, "room for one");
    let blocked = w.cacher.dispatch().0;
    let Progress::Blocked {
        until: Some(deadline),
    } = blocked
    else {
        panic!("blocked on the full buffer, got {blocked:?}");
    };
    assert_eq!(deadline, w.now.load(Ordering::Relaxed) + budget::MAX_BUDGET);
    assert_eq!(drain(&mut fast).len(), 2, "the others are not held up");
    assert!(w.cacher.watchers_info().watchers.iter().any(|i| i.blocking));
    w.advance(budget::MAX_BUDGET - 1);
    assert!(matches!(w.cacher.dispatch().0, Progress::Blocked { .. }));
    w.advance(1);
    assert_eq!(w.cacher.dispatch().0, Progress::Moved);
    let info = w.cacher.watchers_info();
    assert_eq!(info.closed_slow, 1);
    assert_eq!(info.recently_closed[0].id, slow_id);
    assert_eq!(info.watchers.len(), 1);
    assert_eq!(drain(&mut slow_rx).len(), 1);
    assert!(matches!(
        slow_rx.try_recv(),
        Err(TryRecvError::Disconnected)
    ));
    // The budget was spent: the next slow watcher is closed at once.
    let (_, _stuck) = w
        .cacher
        .watch(WatchOptions {
            buffer: Some(1),
            ..WatchOptions::named("slow-2", None)
        })
        .unwrap();
    w.pod("c");
    w.pod("d");
    w.reflect();
    assert_eq!(
        w.dispatch_all(),
        Progress::Idle {
            until: Some(w.cacher.next_wake())
        }
    );
    assert_eq!(w.cacher.watchers_info().closed_slow, 2);
}

#[test]
fn a_reader_that_catches_up_within_the_budget_stays() {
    let mut w = World::new();
    w.reflect();
    let (_, mut rx) = w
        .cacher
        .watch(WatchOptions {
            buffer: Some(1),
            ..WatchOptions::named("reader", None)
        })
        .unwrap();
    w.advance(2_000_000);
    w.pod("a");
    w.pod("b");
    w.reflect();
    w.cacher.dispatch();
    assert!(matches!(w.cacher.dispatch().0, Progress::Blocked { .. }));
    w.advance(10_000);
    assert_eq!(drain(&mut rx).len(), 1);
    assert_eq!(w.cacher.dispatch().0, Progress::Moved);
    let got = drain(&mut rx);
    assert_eq!(got.len(), 1);
    assert_eq!(
        got[0].buffered_at - got[0].event.dispatched_at().unwrap(),
        10_000,
        "waited in the dispatcher"
    );
    assert_eq!(w.cacher.watchers_info().closed_slow, 0);
}

#[test]
fn bookmarks_go_to_watchers_that_asked_on_their_schedule() {
    let mut w = World::new();
    w.reflect();
    let start = w.now.load(Ordering::Relaxed);
    let asked = WatchOptions {
        bookmarks: true,
        deadline: Some(start + 60_000_000),
        ..WatchOptions::named("asked", None)
    };
    let (_, mut with) = w.cacher.watch(asked).unwrap();
    let (_, mut without) = w.cacher.watch(WatchOptions::named("plain", None)).unwrap();
    w.pod("a");
    w.reflect();
    w.dispatch_all();
    assert_eq!(drain(&mut with).len(), 1);
    w.advance(watcher::DEMO_BOOKMARK_FREQUENCY + 2 * BOOKMARK_TICK);
    w.dispatch_all();
    let got = drain(&mut with);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].event.event_type, EventType::Bookmark);
    assert_eq!(got[0].origin, Origin::Bookmark);
    assert_eq!(got[0].event.revision, w.store.revision());
    assert!(
        drain(&mut without)
            .iter()
            .all(|d| d.event.event_type != EventType::Bookmark)
    );
    // The last one comes 2 s before the deadline, then none.
    w.advance(55_000_000 - watcher::DEMO_BOOKMARK_FREQUENCY - 2 * BOOKMARK_TICK);
    for _ in 0..60 {
        w.advance(BOOKMARK_TICK);
        w.dispatch_all();
    }
    let times: Vec<_> = drain(&mut with)
        .iter()
        .map(|d| d.buffered_at - start)
        .collect();
    assert!(!times.is_empty());
    assert!(
        times
            .iter()
            .all(|&t| t <= 60_000_000 - watcher::BOOKMARK_BEFORE_DEADLINE + 2 * BOOKMARK_TICK),
        "{times:?}"
    );
}

#[test]
fn a_compacted_store_watch_makes_the_reflector_relist_after_its_backoff() {
    let mut w = World::new();
    w.reflect();
    for i in 0..3 {
        w.pod(&format!("p{i}"));
    }
    // Compacted past what the Cacher has read: its watch fails as Expired.
    let revision = w.store.revision();
    w.store.compact(revision);
    let waited = w.reflect();
    assert!(
        matches!(waited, Progress::Idle { until: Some(_) }),
        "{waited:?}"
    );
    assert_eq!(w.cacher.lists(), 1, "not before the backoff");
    w.advance(2_000_000);
    w.reflect();
    assert_eq!(w.cacher.lists(), 2);
    assert_eq!(w.cacher.cache().object_count(), 3);
}

/// The Cacher's watch of the store fails (compacted past what it read).
fn fail_the_store_watch(w: &mut World) {
    w.reflect();
    let n = w.store.revision();
    w.pod(&format!("unread-{n}-1"));
    w.pod(&format!("unread-{n}-2"));
    let revision = w.store.revision();
    w.store.compact(revision);
    w.reflect();
}

#[test]
fn a_watch_during_the_relist_is_not_accepted_so_no_change_is_lost() {
    let mut w = World::new();
    w.reflect();
    let (_, mut before) = w.cacher.watch(WatchOptions::named("before", None)).unwrap();
    let from = w.store.revision();
    fail_the_store_watch(&mut w);
    // The client re-watches from what it had, while the Cacher waits to
    // relist: v1.20 waits for `ready`, v0.36 answers 429; neither accepts it.
    assert!(!w.cacher.is_ready());
    assert!(
        w.cacher
            .watch(WatchOptions::named("again", Some(from)))
            .is_err(),
        "accepted while the cache is behind the store"
    );
    w.pod("during-relist");
    w.advance(2_000_000);
    w.reflect();
    assert!(w.cacher.is_ready());
    // Every watcher was terminated before the relist.
    drain(&mut before);
    assert!(matches!(before.try_recv(), Err(TryRecvError::Disconnected)));
    // Once ready, the old revision is below the relist: too old, so the
    // client relists and sees the change made during the relist.
    assert!(
        w.cacher
            .watch(WatchOptions::named("again", Some(from)))
            .is_err()
    );
    let (_, mut fresh) = w.cacher.watch(WatchOptions::named("fresh", None)).unwrap();
    assert_eq!(drain(&mut fresh).len(), 3);
}

#[test]
fn the_cacher_relists_one_second_after_each_failed_watch() {
    let mut w = World::new();
    fail_the_store_watch(&mut w);
    let failed_at = w.now.load(Ordering::Relaxed);
    assert_eq!(
        w.reflect(),
        Progress::Idle {
            until: Some(failed_at + 1_000_000)
        },
        "wait.Until(startCaching, time.Second)"
    );
    w.advance(999_999);
    w.reflect();
    assert_eq!(w.cacher.lists(), 1);
    w.advance(1);
    w.reflect();
    assert_eq!(w.cacher.lists(), 2);
    // A second failure right away: again one second, no growing backoff.
    fail_the_store_watch(&mut w);
    let failed_at = w.now.load(Ordering::Relaxed);
    assert_eq!(
        w.reflect(),
        Progress::Idle {
            until: Some(failed_at + 1_000_000)
        }
    );
}

#[test]
fn an_ended_list_and_watch_is_not_ready_at_once_and_relists_one_second_later() {
    let mut w = World::new();
    w.reflect();
    let (_, mut before) = w.cacher.watch(WatchOptions::named("before", None)).unwrap();
    let ended_at = w.now.load(Ordering::Relaxed);
    w.cacher.end_list_and_watch(ended_at);
    assert!(!w.cacher.is_ready());
    assert_eq!(
        w.reflect(),
        Progress::Idle {
            until: Some(ended_at + ready::RELIST_PERIOD)
        }
    );
    w.advance(ready::RELIST_PERIOD);
    w.reflect();
    assert_eq!(w.cacher.lists(), 2);
    assert!(w.cacher.is_ready());
    drain(&mut before);
    assert!(matches!(before.try_recv(), Err(TryRecvError::Disconnected)));
}

#[test]
fn each_step_reads_at_most_one_change_of_the_store() {
    let mut w = World::new();
    w.reflect();
    for i in 0..3 {
        w.pod(&format!("p{i}"));
    }
    for read in 1..=3 {
        assert_eq!(w.cacher.reflect(&w.store), Progress::Moved);
        assert_eq!(w.cacher.incoming_len(), read);
    }
    assert_eq!(
        w.cacher.reflect(&w.store),
        Progress::Idle { until: None },
        "caught up"
    );
}

#[test]
fn changes_of_other_types_move_the_cache_on_without_an_event() {
    let mut w = World::new();
    w.reflect();
    let key = CONFIGMAPS.key(Some("default"), "not-a-pod");
    w.store.create(&key, json!({})).unwrap();
    assert_eq!(w.reflect(), Progress::Idle { until: None });
    assert_eq!(w.cacher.incoming_len(), 0);
    assert_eq!(w.cacher.cache().revision(), w.store.revision());
    // A synced watch is at the store's revision: compacting up to it does
    // not end the watch.
    w.store.compact(w.store.revision());
    w.pod("a");
    w.reflect();
    assert_eq!(w.cacher.lists(), 1);
    assert_eq!(w.cacher.incoming_len(), 1);
}

#[test]
fn a_watcher_with_a_backlog_has_no_more_room_for_live_events_than_any_other() {
    let mut w = World::new();
    w.reflect();
    for i in 0..30 {
        w.pod(&format!("old-{i}"));
    }
    w.reflect();
    w.dispatch_all();
    let from = w.cacher.cache().window_start();
    let options = WatchOptions {
        buffer: Some(4),
        ..WatchOptions::named("backlogged", Some(from))
    };
    let (_, mut rx) = w.cacher.watch(options).unwrap();
    // The writer takes the whole backlog, then stops reading.
    assert_eq!(drain(&mut rx).len(), 30);
    for i in 0..5 {
        w.pod(&format!("new-{i}"));
    }
    w.reflect();
    w.advance(2_000_000);
    w.dispatch_all();
    w.advance(budget::MAX_BUDGET);
    w.dispatch_all();
    // Four live events fit its buffer; the fifth closes it, as for a
    // watcher that started with no backlog.
    assert_eq!(w.cacher.watchers_info().closed_slow, 1);
    assert_eq!(drain(&mut rx).len(), 4);
}

#[test]
fn no_bookmark_at_the_watchs_own_resource_version() {
    let mut w = World::new();
    w.reflect();
    w.pod("a");
    w.reflect();
    w.dispatch_all();
    let from = w.store.revision();
    let start = w.now.load(Ordering::Relaxed);
    let (_, mut rx) = w
        .cacher
        .watch(WatchOptions {
            bookmarks: true,
            deadline: Some(start + 600_000_000),
            ..WatchOptions::named("quiet", Some(from))
        })
        .unwrap();
    for _ in 0..20 {
        w.advance(BOOKMARK_TICK * 2);
        w.dispatch_all();
    }
    assert!(
        drain(&mut rx).is_empty(),
        "nothing happened after its resourceVersion"
    );
    // Once the store moves on, bookmarks carry the new revision.
    w.pod("b");
    w.reflect();
    w.dispatch_all();
    assert_eq!(drain(&mut rx).len(), 1);
    for _ in 0..5 {
        w.advance(BOOKMARK_TICK * 2);
        w.dispatch_all();
    }
    let got = drain(&mut rx);
    assert!(!got.is_empty());
    assert!(got.iter().all(|d| d.event.revision == w.store.revision()));
}
