//! The demo's watch caches as viewers see them: each cache's ring (start,
//! end, length, capacity) and its fan-out to watchers (who, how full each
//! buffer is, how many were closed for being slow), as the protocol's
//! [`WatchCacheReport`]. The bridge publishes it as `watch_cache` frames; a
//! page running the core draws it directly.

use crate::ControlPlane;
use crate::watch_cache::WatchersInfo;
use watchlife_protocol::{CacheState, ClosedWatcherState, WatchCacheReport, WatcherState};

/// The state of every watch cache that holds events or serves watchers.
pub fn report(cp: &ControlPlane) -> WatchCacheReport {
    WatchCacheReport {
        caches: cp
            .watchers()
            .into_iter()
            .filter_map(|info| {
                let rt = info.resource;
                let (len, capacity, window_start) = cp.watch_cache_window(rt);
                let window_end = cp.watch_cache_revision(rt);
                (len > 0 || !info.watchers.is_empty() || info.closed_slow > 0)
                    .then(|| cache_state(info, len, capacity, window_start, window_end))
            })
            .collect(),
    }
}

fn cache_state(
    info: WatchersInfo,
    len: usize,
    capacity: usize,
    window_start: u64,
    window_end: u64,
) -> CacheState {
    CacheState {
        resource: info.resource.qualified_name(),
        window_start,
        window_end,
        len: saturate(len),
        capacity: saturate(capacity),
        watchers: info
            .watchers
            .into_iter()
            .map(|w| WatcherState {
                id: w.id,
                name: w.name,
                buffered: saturate(w.buffered),
                capacity: saturate(w.capacity),
            })
            .collect(),
        closed_slow: info.closed_slow,
        recently_closed: info
            .recently_closed
            .into_iter()
            .map(|c| ClosedWatcherState {
                id: c.id,
                name: c.name,
                revision: c.revision,
            })
            .collect(),
    }
}

fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Clock;
    use crate::resource::{CONFIGMAPS, PODS};
    use serde_json::json;

    fn cache<'a>(r: &'a WatchCacheReport, resource: &str) -> Option<&'a CacheState> {
        r.caches.iter().find(|c| c.resource == resource)
    }

    #[test]
    fn the_report_has_each_ring_and_its_lanes() {
        let cp = ControlPlane::new(Clock::new(|| 7));
        let _bridge = cp.watch_named("bridge", PODS, None, None).unwrap();
        let _kubelet = cp.watch_named("kubelet node-a", PODS, None, None).unwrap();
        let before = report(&cp);
        let pods = cache(&before, "pods").expect("a watched cache is reported");
        let names: Vec<_> = pods.watchers.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["bridge", "kubelet node-a"]);
        assert_eq!(pods.len, 0);
        assert!(pods.capacity >= 100);
        // Neither watched nor written: not drawn.
        assert!(cache(&before, "secrets").is_none());

        for i in 0..3 {
            cp.create(PODS, json!({"metadata": {"name": format!("p{i}")}}))
                .unwrap();
        }
        cp.create(CONFIGMAPS, json!({"metadata": {"name": "c"}}))
            .unwrap();
        let after = report(&cp);
        let pods = cache(&after, "pods").unwrap();
        assert_eq!(pods.len, 3);
        assert!(pods.window_end >= pods.window_start + 3, "{pods:?}");
        assert!(pods.watchers.iter().all(|w| w.buffered == 3));
        // Written but unwatched: its ring is still drawn.
        assert_eq!(cache(&after, "configmaps").unwrap().len, 1);
    }

    #[test]
    fn a_slow_watcher_shows_its_buffer_then_its_closing() {
        let cp = ControlPlane::new(Clock::new(|| 7));
        cp.start_slow_watcher(PODS).unwrap();
        let cap = crate::control_plane::SLOW_WATCHER_BUFFER;
        for i in 0..=cap {
            cp.create(PODS, json!({"metadata": {"name": format!("p{i}")}}))
                .unwrap();
        }
        let pods = report(&cp)
            .caches
            .into_iter()
            .find(|c| c.resource == "pods");
        let pods = pods.unwrap();
        assert!(pods.watchers.is_empty());
        assert_eq!(pods.closed_slow, 1);
        assert_eq!(pods.recently_closed[0].name, "slow-watcher");
    }
}
