//! The server-side stages as tasks, and what a viewer may ask about them.
//!
//! A staged control plane ([`ControlPlane::staged`]) runs, for each type,
//! two tasks that the host spawns on its executor:
//! - [`ControlPlane::reflector_task`]: the Cacher's Reflector, woken by new
//!   revisions in the store (its watch), by room in `incoming`, or by the end
//!   of a backoff;
//! - [`ControlPlane::dispatcher_task`]: the dispatcher, woken by events in
//!   `incoming` or its bookmark timer; while blocked on a full buffer it looks
//!   again every [`BLOCKED_POLL`] until its budget is spent.
//!
//! Each step takes the control plane's lock for one event and lets go;
//! between steps the task yields, so the stages interleave as goroutines do
//! and the queues between them show real waiting.

use super::ControlPlane;
use crate::cacher::Progress;
use crate::ledger::StageRecord;
use crate::resource::{self, ResourceType};
use crate::store::Revision;
use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;
use tokio::sync::{Notify, watch};
use watchlife_protocol::Micros;

/// How often a dispatcher blocked on a full buffer looks whether it has
/// room. The apiserver's dispatcher wakes the moment it has; the demo polls,
/// which adds at most this to a blocked event's dispatch, far under the
/// 50–100 ms budget.
pub const BLOCKED_POLL: Duration = Duration::from_millis(1);

/// Wakes the stage tasks of one type.
#[derive(Debug, Default)]
pub struct Wakers {
    /// The Cacher's Reflector put an event in `incoming`.
    incoming: Notify,
    /// The dispatcher took one out.
    room: Notify,
}

/// How a host sleeps: `tokio::time::sleep` in the server, a browser timer in
/// a page.
pub trait Sleeper: Clone {
    fn sleep(&self, duration: Duration) -> impl Future<Output = ()>;
}

impl ControlPlane {
    fn index_of(rt: ResourceType) -> usize {
        resource::ALL
            .iter()
            .position(|r| *r == rt)
            .expect("a Cacher exists for every served type")
    }

    /// How long until `until` on the control plane's clock (zero once it
    /// has passed); `otherwise` when a stage waits for no time.
    fn time_until(&self, until: Option<Micros>, otherwise: Duration) -> Duration {
        until.map_or(otherwise, |t| {
            Duration::from_micros(t.saturating_sub(self.clock.now()))
        })
    }

    /// The task of `rt`'s Cacher's Reflector. Runs forever; only a staged
    /// control plane needs it.
    pub fn reflector_task<S: Sleeper>(
        &self,
        rt: ResourceType,
        sleeper: S,
    ) -> impl Future<Output = ()> + use<S> {
        self.stage_task(rt, sleeper, |cp, at, sleeper| async move {
            let mut revisions = cp.revisions();
            loop {
                revisions.borrow_and_update();
                let progress = {
                    let mut state = cp.lock();
                    let state = &mut *state;
                    state.cachers[at].reflect(&state.store)
                };
                match progress {
                    Progress::Moved => {
                        cp.wakers[at].incoming.notify_one();
                        yield_now().await;
                    }
                    Progress::Blocked { .. } => cp.wakers[at].room.notified().await,
                    Progress::Idle { until } => {
                        let wait = cp.time_until(until, Duration::from_secs(3600));
                        let changed = pin!(revisions.changed());
                        let slept = pin!(sleeper.sleep(wait));
                        if let futures_util::future::Either::Left((Err(_), _)) =
                            futures_util::future::select(changed, slept).await
                        {
                            return;
                        }
                    }
                }
            }
        })
    }

    /// The task of `rt`'s dispatcher. Runs forever; only a staged control
    /// plane needs it.
    pub fn dispatcher_task<S: Sleeper>(
        &self,
        rt: ResourceType,
        sleeper: S,
    ) -> impl Future<Output = ()> + use<S> {
        self.stage_task(rt, sleeper, move |cp, at, sleeper| async move {
            loop {
                let (progress, took) = {
                    let mut state = cp.lock();
                    let (progress, event) = state.cachers[at].dispatch();
                    if let Some(event) = &event {
                        state.ledger.record(rt, event);
                        state.dispatches.send_modify(|n| *n += 1);
                    }
                    (progress, event.is_some())
                };
                if took {
                    cp.wakers[at].room.notify_one();
                }
                match progress {
                    Progress::Moved => yield_now().await,
                    Progress::Blocked { until } => {
                        let left = cp.time_until(until, BLOCKED_POLL);
                        sleeper.sleep(left.min(BLOCKED_POLL)).await;
                    }
                    Progress::Idle { until } => {
                        let wait = cp.time_until(until, Duration::from_secs(1));
                        let incoming = pin!(cp.wakers[at].incoming.notified());
                        let slept = pin!(sleeper.sleep(wait));
                        futures_util::future::select(incoming, slept).await;
                    }
                }
            }
        })
    }

    /// A stage task of `rt`: `stage`, given a handle on this control plane,
    /// the index of `rt`'s Cacher (found when the task is first polled) and
    /// the sleeper.
    fn stage_task<S: Sleeper, F: Future<Output = ()>, G>(
        &self,
        rt: ResourceType,
        sleeper: S,
        stage: G,
    ) -> impl Future<Output = ()> + use<S, F, G>
    where
        G: FnOnce(ControlPlane, usize, S) -> F,
    {
        let cp = self.clone();
        async move {
            let at = Self::index_of(rt);
            stage(cp, at, sleeper).await
        }
    }

    /// The server-side stage times of the change at `revision` (commit, the
    /// Cacher's Reflector, the watch cache, dispatch), while the ledger
    /// remembers it ([`crate::ledger::LEDGER_CAPACITY`] changes). A client
    /// that received an event over HTTP matches it by its `resourceVersion`.
    pub fn stage_times(&self, revision: Revision) -> Option<StageRecord> {
        self.lock().ledger.get(revision).cloned()
    }

    /// A receiver of the latest revision, marked changed after every write.
    ///
    /// Lets a driver of the controllers sleep until either its next deadline
    /// or a change made by someone else, whichever comes first, without
    /// polling. Sending needs no runtime, so the core stays IO-free.
    pub fn revisions(&self) -> watch::Receiver<Revision> {
        self.lock().revisions.subscribe()
    }

    /// A receiver marked changed whenever a dispatcher took an event: a
    /// driver of in-process watchers (the controllers) wakes when they have
    /// something to read, not merely when the store changed.
    pub fn dispatches(&self) -> watch::Receiver<u64> {
        self.lock().dispatches.subscribe()
    }

    /// Whether this control plane runs its stages as tasks.
    pub fn is_staged(&self) -> bool {
        !self.lock().inline
    }

    /// The current time on the control plane's clock.
    pub fn now(&self) -> Micros {
        self.clock.now()
    }
}

/// Lets the executor run other tasks once, on any executor.
async fn yield_now() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await
}

#[cfg(test)]
mod tests;
