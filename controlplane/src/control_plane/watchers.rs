//! The fan-out of each watch cache, and a watcher that falls behind on purpose.

use super::ControlPlane;
use crate::api_error::ApiError;
use crate::cacher::WatchersInfo;
use crate::cacher::watcher::{WatchOptions, WatcherId};
use crate::resource::ResourceType;

/// Name under which the slow watcher is listed.
pub const SLOW_WATCHER_NAME: &str = "slow-watcher";

/// Buffer of the slow watcher. Smaller than a normal watcher's so that a few
/// beats of the story fill it and the audience sees the cache close it; the
/// mechanism is the same at any size.
pub const SLOW_WATCHER_BUFFER: usize = 8;

impl ControlPlane {
    /// The watchers of every cache (in [`crate::resource::ALL`] order): who
    /// watches, how full each buffer is, and which were closed for being slow.
    pub fn watchers(&self) -> Vec<WatchersInfo> {
        self.lock()
            .cachers
            .iter()
            .map(|c| c.watchers_info())
            .collect()
    }

    /// Ends the store watch of `rt`'s Cacher, as a compaction past it or an
    /// etcd failure would: the Cacher is not ready until it has relisted,
    /// [`crate::cacher::ready::RELIST_PERIOD`] later, and terminates every
    /// watcher when it does.
    pub fn break_store_watch(&self, rt: ResourceType) {
        let now = self.clock.now();
        let mut state = self.lock();
        state.cacher_mut(rt).end_list_and_watch(now);
        // Wakes the Cacher's Reflector, to wait for its relist.
        state.revisions.send_modify(|_| {});
    }

    /// Starts a watcher of `rt` that never reads (listed as
    /// [`SLOW_WATCHER_NAME`]). Once [`SLOW_WATCHER_BUFFER`] events of that type
    /// are waiting in its buffer, the next one blocks the dispatcher for at
    /// most its time budget, then closes it, as the apiserver closes any
    /// watcher that cannot keep up; the others go on receiving.
    pub fn start_slow_watcher(&self, rt: ResourceType) -> Result<WatcherId, ApiError> {
        let mut state = self.lock();
        // Receivers of slow watchers the cache has closed are of no more use.
        state.stalled.retain(|rx| !rx.is_closed());
        let cacher = state.cacher_mut(rt);
        let from = cacher.cache().revision();
        let options = WatchOptions {
            buffer: Some(SLOW_WATCHER_BUFFER),
            ..WatchOptions::named(SLOW_WATCHER_NAME, Some(from))
        };
        let (id, rx) = cacher.watch(options).map_err(super::api_watch_error)?;
        state.stalled.push(rx);
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Clock;
    use crate::resource::{CONFIGMAPS, PODS};
    use serde_json::json;

    #[test]
    fn the_slow_watcher_is_closed_while_the_others_keep_receiving() {
        let cp = ControlPlane::new(Clock::new(|| 5));
        let mut fast = cp.watch_named("bridge", PODS, None, None).unwrap();
        let id = cp.start_slow_watcher(PODS).unwrap();
        let lanes = |cp: &ControlPlane| {
            let info = cp
                .watchers()
                .into_iter()
                .find(|w| w.resource == PODS)
                .unwrap();
            let names: Vec<_> = info.watchers.iter().map(|w| w.name.clone()).collect();
            (names, info)
        };
        assert_eq!(lanes(&cp).0, vec!["bridge", SLOW_WATCHER_NAME]);
        for i in 0..=SLOW_WATCHER_BUFFER {
            cp.create(PODS, json!({"metadata": {"name": format!("p{i}")}}))
                .unwrap();
            // A configmap change is not the slow watcher's type: it never fills it.
            cp.create(CONFIGMAPS, json!({"metadata": {"name": format!("c{i}")}}))
                .unwrap();
            assert!(fast.try_recv().is_ok());
            if i + 1 == SLOW_WATCHER_BUFFER {
                let (_, info) = lanes(&cp);
                let slow = info.watchers.iter().find(|w| w.id == id).unwrap();
                assert_eq!(
                    (slow.buffered, slow.capacity),
                    (SLOW_WATCHER_BUFFER, SLOW_WATCHER_BUFFER)
                );
            }
        }
        let (names, info) = lanes(&cp);
        assert_eq!(names, vec!["bridge"]);
        assert_eq!(info.closed_slow, 1);
        assert_eq!(info.recently_closed[0].id, id);
        assert_eq!(info.recently_closed[0].name, SLOW_WATCHER_NAME);
        cp.create(PODS, json!({"metadata": {"name": "after"}}))
            .unwrap();
        assert!(fast.try_recv().is_ok(), "the others keep receiving");
    }
}
