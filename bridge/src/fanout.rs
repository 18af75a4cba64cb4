//! The demo's watch caches as the viewers see them: each cache's ring (start,
//! end, length, capacity) and its fan-out to watchers (who, how full each
//! buffer is, how many were closed for being slow), published as
//! `watch_cache` frames.
//!
//! The reporter samples the control plane on a short period and publishes only
//! when something changed, so the stream carries at most a few of these frames
//! a second however busy the demo is, and none while it is still — apart from
//! a slow refresh, so that a viewer who joins a quiet demo still sees the rings.

use crate::hub::Hub;
use std::time::Duration;
use watchlife_controlplane::ControlPlane;
use watchlife_controlplane::watch_cache::WatchersInfo;
use watchlife_protocol::{
    CacheState, ClosedWatcherState, FrameBody, WatchCacheReport, WatcherState,
};

/// How often the caches are sampled, which bounds the frames to four a second:
/// often enough that a buffer filling up is seen as it fills, rarely enough
/// that a burst of thousands of events costs the viewers nothing extra.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(250);

/// An unchanged report is published again after this long, for viewers that
/// joined since the last change (a snapshot does not carry the rings).
pub const REFRESH_EVERY: Duration = Duration::from_secs(5);

/// Starts the reporter task; it runs for the life of the runtime.
pub fn spawn_reporter(cp: ControlPlane, hub: Hub) {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(SAMPLE_EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last: Option<WatchCacheReport> = None;
        let mut unchanged = Duration::ZERO;
        loop {
            ticks.tick().await;
            let now = report(&cp);
            unchanged += SAMPLE_EVERY;
            if last.as_ref() != Some(&now) || unchanged >= REFRESH_EVERY {
                hub.publish(FrameBody::WatchCache(now.clone()));
                last = Some(now);
                unchanged = Duration::ZERO;
            }
        }
    });
}

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
    use serde_json::json;
    use std::time::Instant;
    use watchlife_controlplane::Clock;
    use watchlife_controlplane::resource::{CONFIGMAPS, PODS};
    use watchlife_protocol::ServerFrame;

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
        let cap = watchlife_controlplane::control_plane::SLOW_WATCHER_BUFFER;
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

    async fn next_report(
        live: &mut tokio::sync::broadcast::Receiver<crate::hub::Published>,
    ) -> WatchCacheReport {
        let published = tokio::time::timeout(Duration::from_secs(5), live.recv())
            .await
            .expect("a report within seconds")
            .expect("the hub is open");
        match serde_json::from_str::<ServerFrame>(published.text.as_str())
            .unwrap()
            .body
        {
            FrameBody::WatchCache(r) => r,
            other => panic!("only the reporter publishes here, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn the_reporter_publishes_on_change_and_not_in_between() {
        let cp = ControlPlane::new(Clock::system());
        let hub = Hub::new("s");
        let mut live = hub.attach(None).live;
        let _w = cp.watch_named("bridge", PODS, None, None).unwrap();
        spawn_reporter(cp.clone(), hub.clone());
        let first = next_report(&mut live).await;
        assert_eq!(cache(&first, "pods").unwrap().watchers.len(), 1);

        // Nothing changes: nothing is published for well over a sample period.
        let quiet = tokio::time::timeout(SAMPLE_EVERY * 3, live.recv()).await;
        assert!(
            quiet.is_err(),
            "an unchanged report is not repeated at once"
        );

        let started = Instant::now();
        cp.create(PODS, json!({"metadata": {"name": "web-1"}}))
            .unwrap();
        let changed = next_report(&mut live).await;
        assert_eq!(cache(&changed, "pods").unwrap().len, 1);
        assert!(started.elapsed() < SAMPLE_EVERY * 4);
    }
}
