//! The demo's server side as separate stages on a real runtime and a real
//! clock: the Cacher's Reflector and the dispatcher of each type run as
//! tasks, each watcher's buffer is read by its own writer task. Checks that
//! each event's stage times follow its path, that queues form under load,
//! and that a slow watcher is closed after its budget while the others stay
//! on time.
//!
//! Times are measured, never asserted against a wall-clock bound: the
//! checks compare one run's own distributions.

use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use watchlife_controlplane::control_plane::stages::Sleeper;
use watchlife_controlplane::limits::Limits;
use watchlife_controlplane::resource::{self, CONFIGMAPS, PODS};
use watchlife_controlplane::{Clock, ControlPlane, Delivery, Origin, WatchOptions};
use watchlife_protocol::{EventType, Micros};

#[derive(Clone)]
struct Tokio;

impl Sleeper for Tokio {
    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> {
        tokio::time::sleep(duration)
    }
}

fn staged() -> ControlPlane {
    let cp = ControlPlane::staged(Clock::system(), Limits::UNBOUNDED, 5_000_000);
    for rt in resource::ALL {
        tokio::spawn(cp.reflector_task(rt, Tokio));
        tokio::spawn(cp.dispatcher_task(rt, Tokio));
    }
    cp
}

/// Every hop of one delivered event, in path order.
#[derive(Debug, Clone, Copy)]
struct Path {
    committed: Micros,
    reflected: Micros,
    cached: Micros,
    dispatched: Micros,
    buffered: Micros,
    written: Micros,
}

impl Path {
    fn of(d: &Delivery, written: Micros) -> Option<Path> {
        let t = d.event.times?;
        Some(Path {
            committed: t.committed_at,
            reflected: t.reflected_at,
            cached: t.cached_at,
            dispatched: d.event.dispatched_at()?,
            buffered: d.buffered_at,
            written,
        })
    }

    fn in_order(&self) -> bool {
        self.committed <= self.reflected
            && self.reflected <= self.cached
            && self.cached <= self.dispatched
            && self.dispatched <= self.buffered
            && self.buffered <= self.written
    }
}

/// A writer: reads its buffer as fast as it can, notes each event's path.
fn writer(mut rx: mpsc::Receiver<Delivery>, clock: Clock, paths: Arc<Mutex<Vec<Path>>>) {
    tokio::spawn(async move {
        while let Some(d) = rx.recv().await {
            if let Some(path) = Path::of(&d, clock.now()) {
                paths.lock().unwrap().push(path);
            }
        }
    });
}

fn percentile(mut v: Vec<Micros>, p: f64) -> Micros {
    v.sort_unstable();
    v[((v.len() - 1) as f64 * p) as usize]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stage_times_follow_each_events_path() {
    let cp = staged();
    let paths = Arc::new(Mutex::new(Vec::new()));
    for i in 0..3 {
        let rx = cp.watch_named(&format!("w{i}"), PODS, None, None).unwrap();
        writer(rx, cp.clock().clone(), paths.clone());
    }
    for i in 0..50 {
        cp.create(PODS, json!({"metadata": {"name": format!("p{i}")}}))
            .unwrap();
        cp.create(CONFIGMAPS, json!({"metadata": {"name": format!("c{i}")}}))
            .unwrap();
    }
    wait_for(|| paths.lock().unwrap().len() >= 150).await;
    let paths = paths.lock().unwrap();
    assert_eq!(paths.len(), 150);
    assert!(paths.iter().all(Path::in_order), "{paths:?}");
    let rv = cp.revision() - 1;
    let ledger = cp.stage_times(rv).expect("the last pod is in the ledger");
    assert!(ledger.times.committed_at <= ledger.dispatched_at);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_load_the_dispatch_and_watcher_queues_fill() {
    /// 1,000 watchers of pods, 1,000 changes in about a second.
    const WATCHERS: usize = 1000;
    const CHANGES: usize = 1000;
    let cp = staged();
    let paths = Arc::new(Mutex::new(Vec::new()));
    for i in 0..WATCHERS {
        let rx = cp.watch_named(&format!("w{i}"), PODS, None, None).unwrap();
        writer(rx, cp.clock().clone(), paths.clone());
    }
    let writes = {
        let cp = cp.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(10));
            for batch in 0..CHANGES / 10 {
                tick.tick().await;
                for i in 0..10 {
                    let name = format!("p{}", batch * 10 + i);
                    cp.create(PODS, json!({"metadata": {"name": name}}))
                        .unwrap();
                }
            }
        })
    };
    writes.await.unwrap();
    wait_for(|| paths.lock().unwrap().len() >= WATCHERS * CHANGES).await;
    let paths = paths.lock().unwrap();
    assert!(paths.iter().all(Path::in_order));
    let incoming: Vec<_> = paths.iter().map(|p| p.dispatched - p.cached).collect();
    let buffer: Vec<_> = paths.iter().map(|p| p.written - p.buffered).collect();
    let (i50, i99) = (
        percentile(incoming.clone(), 0.5),
        percentile(incoming, 0.99),
    );
    let (b50, b99) = (percentile(buffer.clone(), 0.5), percentile(buffer, 0.99));
    println!(
        "{CHANGES} changes to {WATCHERS} watchers: waited in incoming p50 {i50} µs, p99 {i99} µs; in a watcher's buffer p50 {b50} µs, p99 {b99} µs"
    );
    assert!(
        i99 > i50,
        "incoming queues under load: p50 {i50}, p99 {i99}"
    );
    assert!(b99 > b50, "buffers queue under load: p50 {b50}, p99 {b99}");
    assert!(i99 > 0 && b99 > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_watcher_is_closed_after_its_budget_and_the_others_stay_on_time() {
    let cp = staged();
    // The budget starts empty and fills by 50 ms a second.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let paths = Arc::new(Mutex::new(Vec::new()));
    let fast = cp.watch_named("fast", PODS, None, None).unwrap();
    writer(fast, cp.clock().clone(), paths.clone());
    let slow = WatchOptions {
        buffer: Some(4),
        ..WatchOptions::named("slow", None)
    };
    let (slow_id, mut slow_rx) = cp.watch_opts(PODS, slow).unwrap();
    for i in 0..20 {
        cp.create(PODS, json!({"metadata": {"name": format!("p{i}")}}))
            .unwrap();
    }
    wait_for(|| paths.lock().unwrap().len() >= 20).await;
    let pods = || {
        cp.watchers()
            .into_iter()
            .find(|w| w.resource == PODS)
            .unwrap()
    };
    wait_for(|| pods().closed_slow == 1).await;
    let closed = &pods().recently_closed[0];
    assert_eq!((closed.id, closed.name.as_str()), (slow_id, "slow"));
    // It blocked the dispatcher for its budget, 100 ms at most: the event it
    // could not take waited that long, and only that one.
    let paths = paths.lock().unwrap().clone();
    let waits: Vec<_> = paths.iter().map(|p| p.buffered - p.dispatched).collect();
    let blocked: Vec<_> = paths.iter().map(|p| p.dispatched - p.cached).collect();
    println!("fast watcher: waits after dispatch {waits:?}; in incoming {blocked:?}");
    let longest = *blocked.iter().max().unwrap();
    assert!(
        longest >= 90_000,
        "the dispatcher blocked on the slow watcher: {blocked:?}"
    );
    // The stream ends after what its buffer held; its client re-watches.
    let mut got = 0;
    while let Some(d) = slow_rx.recv().await {
        assert_eq!(d.origin, Origin::Live);
        assert_ne!(d.event.event_type, EventType::Bookmark);
        got += 1;
    }
    assert_eq!(got, 4);
}

/// Waits until `done`, for at most a minute (a generous bound on a shared
/// machine: the check is that it happens, not how fast).
async fn wait_for(done: impl Fn() -> bool) {
    for _ in 0..6000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("not done within a minute");
}
