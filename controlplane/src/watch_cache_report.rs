//! The demo's watch caches as viewers see them: each cache's ring (start,
//! end, length, capacity) and its fan-out to watchers (who, how full each
//! buffer is, how many were closed for being slow), as the protocol's
//! [`WatchCacheReport`]. The bridge publishes it as `watch_cache` frames; a
//! page running the core draws it directly.
//!
//! A report has a fixed largest size, however many clients watch: each cache
//! lists at most [`MAX_REPORTED_WATCHERS`] watchers and counts the others,
//! and remembers at most [`crate::cacher::CLOSED_WATCHERS_KEPT`] closed
//! ones. (Watcher names are the server's own: `http` for every client of the
//! demo API.)

use crate::ControlPlane;
use crate::cacher::{WatcherInfo, WatchersInfo};
use watchlife_protocol::{CacheState, ClosedWatcherState, WatchCacheReport, WatcherState};

/// Watchers listed per cache. The page draws eight lanes and counts the
/// rest; a report lists four times that: the busiest half (the fullest
/// buffers, those about to be closed for being slow) and the most recent
/// half (who just arrived), oldest first.
pub const MAX_REPORTED_WATCHERS: usize = 32;

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
                (len > 0 || !info.watchers.is_empty() || info.closed_slow > 0 || info.incoming > 0)
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
    let (listed, more_watchers) = pick(info.watchers);
    CacheState {
        resource: info.resource.qualified_name(),
        window_start,
        window_end,
        len: saturate(len),
        capacity: saturate(capacity),
        watchers: listed
            .into_iter()
            .map(|w| WatcherState {
                id: w.id,
                name: w.name,
                buffered: saturate(w.buffered),
                capacity: saturate(w.capacity),
                blocking: w.blocking,
            })
            .collect(),
        more_watchers,
        incoming: saturate(info.incoming),
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

/// At most [`MAX_REPORTED_WATCHERS`] of `watchers` (the busiest half, then
/// the most recent), oldest first, and how many were left out.
fn pick(mut watchers: Vec<WatcherInfo>) -> (Vec<WatcherInfo>, u64) {
    let total = watchers.len();
    if total <= MAX_REPORTED_WATCHERS {
        return (watchers, 0);
    }
    // The busiest first; among equals, the newest.
    watchers.sort_unstable_by(|a, b| b.buffered.cmp(&a.buffered).then(b.id.cmp(&a.id)));
    let rest = watchers.split_off(MAX_REPORTED_WATCHERS / 2);
    let mut listed = watchers;
    let mut recent = rest;
    recent.sort_unstable_by_key(|w| std::cmp::Reverse(w.id));
    recent.truncate(MAX_REPORTED_WATCHERS - listed.len());
    listed.extend(recent);
    listed.sort_unstable_by_key(|w| w.id);
    (listed, (total - MAX_REPORTED_WATCHERS) as u64)
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

    #[test]
    fn ten_thousand_watches_leave_the_frame_under_a_fixed_size() {
        use watchlife_protocol::{FrameBody, ServerFrame};
        let frame_bytes = |cp: &ControlPlane| {
            let frame = ServerFrame {
                seq: u64::MAX,
                body: FrameBody::WatchCache(report(cp)),
            };
            serde_json::to_string(&frame).unwrap().len()
        };
        let cp = ControlPlane::new(Clock::new(|| 7));
        let mut watches = Vec::new();
        for rt in crate::resource::ALL {
            for _ in 0..MAX_REPORTED_WATCHERS {
                watches.push(cp.watch_named("http", rt, None, None).unwrap());
            }
        }
        let full = frame_bytes(&cp);
        // Watches of every type, as many as a busy demo API could hold at
        // once and more: the frame is as large as with a full list each.
        for i in 0..10_000 {
            let rt = crate::resource::ALL[i % crate::resource::ALL.len()];
            watches.push(cp.watch_named("http", rt, None, None).unwrap());
        }
        let crowded = report(&cp);
        let total: u64 = crowded.caches.iter().map(|c| c.watcher_count()).sum();
        assert_eq!(total as usize, watches.len());
        assert!(
            crowded
                .caches
                .iter()
                .all(|c| c.watchers.len() == MAX_REPORTED_WATCHERS),
            "{crowded:?}"
        );
        let bytes = frame_bytes(&cp);
        // Only the digits of the ids and counts grew.
        assert!(bytes < full + 4 * 1024, "{full} bytes, then {bytes}");
        assert!(bytes < 32 * 1024, "{bytes} bytes");
    }

    #[test]
    fn a_crowded_cache_lists_the_busiest_and_the_most_recent() {
        let cp = ControlPlane::new(Clock::new(|| 7));
        let watch = |name| cp.watch_named(name, PODS, None, None).unwrap();
        let mut watches: Vec<_> = (0..2).map(|_| watch("http")).collect();
        // The third watcher stops reading and its buffer fills a little.
        let busy = watch("busy");
        watches.extend((0..98).map(|_| watch("http")));
        for i in 0..5 {
            cp.create(PODS, json!({"metadata": {"name": format!("p{i}")}}))
                .unwrap();
        }
        for w in &mut watches {
            while w.try_recv().is_ok() {}
        }
        let pods = report(&cp)
            .caches
            .into_iter()
            .find(|c| c.resource == "pods")
            .unwrap();
        assert_eq!(pods.watchers.len(), MAX_REPORTED_WATCHERS);
        assert_eq!(pods.more_watchers, 101 - MAX_REPORTED_WATCHERS as u64);
        assert!(
            pods.watchers
                .iter()
                .any(|w| (w.id, w.name.as_str(), w.buffered) == (3, "busy", 5))
        );
        let ids: Vec<u64> = pods.watchers.iter().map(|w| w.id).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "oldest first: {ids:?}");
        let newest = ids.iter().max().copied();
        assert_eq!(newest, Some(101), "the newest is listed");
        drop(busy);
    }
}
