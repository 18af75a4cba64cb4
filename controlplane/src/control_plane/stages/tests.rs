use crate::clock::Clock;
use crate::control_plane::ControlPlane;
use crate::resource::{CONFIGMAPS, PODS};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

#[test]
fn stage_times_are_found_by_resource_version_and_revisions_announce_writes() {
    let tick = Arc::new(AtomicU64::new(100));
    let t = tick.clone();
    let cp = ControlPlane::new(Clock::new(move || t.fetch_add(1, Ordering::SeqCst)));
    let mut revisions = cp.revisions();
    let _watcher = cp.watch_named("bridge", PODS, None, None).unwrap();
    let pod = cp.create(PODS, json!({"metadata": {"name": "p"}})).unwrap();
    cp.create(CONFIGMAPS, json!({"metadata": {"name": "c"}}))
        .unwrap();
    assert!(revisions.has_changed().unwrap());
    assert_eq!(*revisions.borrow_and_update(), cp.revision());
    let rv: u64 = pod["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let stages = cp.stage_times(rv).unwrap();
    assert_eq!(stages.resource, PODS);
    let t = stages.times;
    assert!(t.committed_at <= t.reflected_at);
    assert!(t.reflected_at <= t.cached_at);
    assert!(t.cached_at <= stages.dispatched_at);
    assert!(cp.stage_times(cp.revision() + 1).is_none());
    assert!(!cp.is_staged());
}
