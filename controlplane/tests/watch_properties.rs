//! Properties of the store and the Cacher under interleaved writers and
//! watchers: revisions strictly increase, and every watcher sees every change
//! after its starting revision exactly once, in order (or, if the cache closed
//! it for being slow, a gap-free prefix of them).

use proptest::prelude::*;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::mpsc::{self, error::TryRecvError};
use watchlife_controlplane::WatchOptions;
use watchlife_controlplane::cacher::{Cacher, Progress};
use watchlife_controlplane::resource::PODS;
use watchlife_controlplane::store::{Change, Store};
use watchlife_controlplane::watch_cache::{WatchError, WindowBounds};
use watchlife_controlplane::{Clock, ControlPlane, Delivery, Revision};
use watchlife_protocol::EventType;

/// Keys the writers share, few enough that creates, updates and deletes of
/// the same object interleave often.
const KEYS: usize = 4;

/// Events the cache's window holds in the property test: small, so that
/// watches from old revisions are refused and the ring wraps.
const WINDOW: usize = 12;

#[derive(Debug, Clone)]
enum Op {
    /// Create the key if absent, else update it.
    Put(usize),
    Delete(usize),
    /// Start a watcher `back` revisions behind the latest (`None`: from "any").
    Watch {
        back: Option<u64>,
        buffer: usize,
    },
    /// Let watcher `which` (modulo their count) read up to `n` events.
    Read {
        which: usize,
        n: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..KEYS).prop_map(Op::Put),
        2 => (0..KEYS).prop_map(Op::Delete),
        1 => (proptest::option::of(0u64..20), 1usize..8)
            .prop_map(|(back, buffer)| Op::Watch { back, buffer }),
        3 => (0usize..8, 1usize..6).prop_map(|(which, n)| Op::Read { which, n }),
    ]
}

/// A change as a watcher should see it.
type Seen = (EventType, String, Revision);

struct Watcher {
    rx: mpsc::Receiver<Delivery>,
    /// Changes after this revision are owed to it.
    after: Revision,
    /// Objects owed as synthetic ADDED events first (a watch from "any").
    initial: Vec<Seen>,
    seen: Vec<Seen>,
}

impl Watcher {
    fn read(&mut self, n: usize) -> bool {
        for _ in 0..n {
            match self.rx.try_recv() {
                Ok(d) => {
                    self.seen
                        .push((d.event.event_type, d.event.key.clone(), d.event.revision))
                }
                Err(TryRecvError::Empty) => return true,
                Err(TryRecvError::Disconnected) => return false,
            }
        }
        true
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_watcher_sees_every_later_change_once_and_in_order(ops in prop::collection::vec(op(), 1..120)) {
        let clock = Clock::new(|| 0);
        let mut store = Store::new(clock.clone());
        let mut cacher = Cacher::new(PODS, WindowBounds::fixed(WINDOW), store.revision(), 5_000_000, clock);
        // Every stage in turn, the dispatcher never waiting (no time passes).
        let pump = |cacher: &mut Cacher, store: &Store| loop {
            let reflected = cacher.reflect(store);
            let mut moved = reflected == Progress::Moved;
            loop {
                match cacher.dispatch().0 {
                    Progress::Moved => moved = true,
                    Progress::Blocked { .. } => {
                        cacher.close_blocked();
                        moved = true;
                    }
                    Progress::Idle { .. } => break,
                }
            }
            if !moved {
                break;
            }
        };
        pump(&mut cacher, &store);
        let mut log: Vec<Seen> = Vec::new();
        let mut watchers: Vec<Watcher> = Vec::new();
        for op in ops {
            let change = match op {
                Op::Put(k) => {
                    let key = format!("/registry/pods/default/p{k}");
                    Some(match store.get(&key) {
                        None => store.create(&key, json!({"metadata": {"name": format!("p{k}"), "namespace": "default"}})),
                        Some(_) => store.update(&key, json!({"metadata": {"name": format!("p{k}"), "namespace": "default"}}), None),
                    })
                }
                Op::Delete(k) => {
                    let key = format!("/registry/pods/default/p{k}");
                    store.get(&key).map(|_| store.delete(&key, None))
                }
                Op::Watch { back, buffer } => {
                    let from = back.map(|b| store.revision().saturating_sub(b).max(1));
                    let initial: Vec<Seen> = match from {
                        Some(_) => Vec::new(),
                        None => cacher.cache().list().0.iter().map(|o| {
                            let rv = o["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
                            let name = o["metadata"]["name"].as_str().unwrap();
                            (EventType::Added, format!("/registry/pods/default/{name}"), rv)
                        }).collect(),
                    };
                    let options = WatchOptions { buffer: Some(buffer), ..WatchOptions::named("", from) };
                    let cache_revision = cacher.cache().revision();
                    match cacher.watch(options) {
                        Ok((_, rx)) => watchers.push(Watcher {
                            rx,
                            after: from.unwrap_or(cache_revision),
                            initial,
                            seen: Vec::new(),
                        }),
                        Err(WatchError::TooOld { requested, oldest }) => {
                            // Refused only when the window no longer reaches back.
                            prop_assert!(requested < oldest);
                        }
                        // Only while the Cacher relists, which this test never makes it do.
                        Err(e @ WatchError::NotReady { .. }) => prop_assert!(false, "{e}"),
                    }
                    None
                }
                Op::Read { which, n } => {
                    if !watchers.is_empty() {
                        let i = which % watchers.len();
                        watchers[i].read(n);
                    }
                    None
                }
            };
            if let Some(change) = change {
                let change = change.expect("puts and deletes are only tried where they apply");
                let event_type = match change.change {
                    Change::Put { created: true } => EventType::Added,
                    Change::Put { created: false } => EventType::Modified,
                    Change::Delete => EventType::Deleted,
                };
                if let Some(last) = log.last() {
                    prop_assert_eq!(change.revision, last.2 + 1, "each change takes the next revision");
                }
                log.push((event_type, change.key.clone(), change.revision));
                pump(&mut cacher, &store);
            }
        }
        for mut w in watchers {
            let open = w.read(usize::MAX);
            let mut owed = w.initial.clone();
            owed.sort_by_key(|s| s.1.clone());
            owed.extend(log.iter().filter(|s| s.2 > w.after).cloned());
            if open {
                prop_assert_eq!(&w.seen, &owed);
            } else {
                // Closed for being slow: what it got is a prefix, no gap.
                prop_assert!(w.seen.len() <= owed.len());
                prop_assert_eq!(&w.seen[..], &owed[..w.seen.len()]);
            }
            let live: Vec<Revision> = w.seen.iter().skip(w.initial.len()).map(|s| s.2).collect();
            prop_assert!(live.windows(2).all(|p| p[0] < p[1]), "strictly increasing: {live:?}");
        }
    }
}

/// Writers on threads, watchers on threads that re-watch from their last
/// revision whenever their watch is closed (a thread keeps dropping every
/// watch): each sees every change once, in order.
#[test]
fn threaded_writers_and_rewatching_watchers_see_every_change_once() {
    /// Writes per writer; all writers together stay within the cache's
    /// smallest window, so a re-watch is never too old.
    const WRITES: usize = 30;
    const WRITERS: usize = 3;
    const WATCHERS: usize = 3;
    let tick = Arc::new(AtomicU64::new(1));
    let t = tick.clone();
    let cp = ControlPlane::new(Clock::new(move || t.fetch_add(1, Ordering::SeqCst)));
    let start = cp.revision();
    let watchers: Vec<_> = (0..WATCHERS)
        .map(|i| {
            let cp = cp.clone();
            std::thread::spawn(move || {
                let mut seen: Vec<Revision> = Vec::new();
                let mut rx = cp
                    .watch_named(&format!("w{i}"), PODS, Some(start), None)
                    .unwrap();
                while seen.len() < WRITES * WRITERS {
                    match rx.blocking_recv() {
                        Some(d) => seen.push(d.event.revision),
                        None => {
                            let from = seen.last().copied().unwrap_or(start);
                            rx = cp
                                .watch_named(&format!("w{i}"), PODS, Some(from), None)
                                .unwrap();
                        }
                    }
                }
                seen
            })
        })
        .collect();
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let cp = cp.clone();
            std::thread::spawn(move || {
                let mut revisions = Vec::new();
                for i in 0..WRITES {
                    let name = format!("w{w}-{}", i % 3);
                    let pod = json!({"metadata": {"name": name}, "spec": {"i": i}});
                    let written = if i % 6 == 5 {
                        cp.delete(PODS, Some("default"), &name)
                    } else {
                        cp.create(PODS, pod.clone())
                            .or_else(|_| cp.update(PODS, pod))
                    };
                    let obj = written.unwrap();
                    // Pace the writes so that watches get dropped between them.
                    std::thread::sleep(std::time::Duration::from_micros(200));
                    revisions.push(
                        obj["metadata"]["resourceVersion"]
                            .as_str()
                            .unwrap()
                            .parse::<Revision>()
                            .unwrap(),
                    );
                }
                revisions
            })
        })
        .collect();
    let dropper = {
        let cp = cp.clone();
        std::thread::spawn(move || {
            let end = start + (WRITES * WRITERS) as Revision;
            let mut next_drop = start + 10;
            while cp.revision() < end {
                if cp.revision() >= next_drop {
                    cp.drop_watchers();
                    next_drop += 15;
                }
                std::thread::yield_now();
            }
        })
    };
    dropper.join().unwrap();
    let mut all: Vec<Revision> = Vec::new();
    for writer in writers {
        let revisions = writer.join().unwrap();
        assert!(
            revisions.windows(2).all(|p| p[0] < p[1]),
            "a writer's revisions increase"
        );
        all.extend(revisions);
    }
    all.sort_unstable();
    all.dedup();
    assert_eq!(
        all.len(),
        WRITES * WRITERS,
        "no two writes share a revision"
    );
    for watcher in watchers {
        assert_eq!(watcher.join().unwrap(), all);
    }
}
