//! The demo's watch caches as the viewers see them (the core's
//! [`watchlife_controlplane::watch_cache_report`]), published as
//! `watch_cache` frames.
//!
//! The reporter samples the control plane on a short period and publishes only
//! when something changed, so the stream carries at most a few of these frames
//! a second however busy the demo is, and none while it is still — apart from
//! a slow refresh, so that a viewer who joins a quiet demo still sees the rings.

use crate::downstream::hub::Hub;
use std::time::Duration;
use watchlife_controlplane::ControlPlane;
use watchlife_controlplane::watch_cache_report::report;
use watchlife_protocol::{FrameBody, WatchCacheReport};

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Instant;
    use watchlife_controlplane::Clock;
    use watchlife_controlplane::resource::PODS;
    use watchlife_protocol::{CacheState, ServerFrame};

    fn cache<'a>(r: &'a WatchCacheReport, resource: &str) -> Option<&'a CacheState> {
        r.caches.iter().find(|c| c.resource == resource)
    }

    async fn next_report(
        live: &mut tokio::sync::broadcast::Receiver<crate::downstream::hub::Published>,
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
        let mut live = hub.attach(None, crate::downstream::hub::Bodies::Light).live;
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
