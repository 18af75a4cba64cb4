//! The demo's controllers, written the way client-go's are.
//!
//! # Layout
//! - [`informer`]: list-watch into a local cache, with notifications.
//! - [`handler`]: filtering event handlers (one informer, several views).
//! - [`workqueue()`]: keys waiting to be synced: the informer crate's
//!   workqueue (client-go's), with the demo's retry limit.
//! - [`deployment`], [`replicaset`], [`scheduler`], [`kubelet`],
//!   [`garbage_collector`]: the controllers.
//! - [`owner`], [`names`]: owner references and generated names;
//!   [`events`]: the Events the controllers record, as client-go's recorder.
//! - [`Demo`] (here): all of them and the story, driven by one `step`.
//!
//! Every controller is a plain struct with a `step(&mut self, cp, now)` that
//! drains its informers, works its queue and says when it next wants to run.
//! Nothing here sleeps or spawns: the caller owns time and waiting, so the
//! same controllers run in the server's tokio task and on a page's timer.

pub mod deployment;
pub mod events;
pub mod garbage_collector;
pub mod handler;
pub mod informer;
pub mod kubelet;
pub mod names;
pub mod owner;
pub mod replicaset;
pub mod scheduler;

use crate::control_plane::{ApiError, ControlPlane};
use crate::resource::ResourceType;
use crate::story::Story;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use watchlife_informer::rate_limiter::RateLimiter;
use watchlife_informer::workqueue::Workqueue;
use watchlife_protocol::Micros;

pub use deployment::DeploymentController;
pub use garbage_collector::GarbageCollector;
pub use kubelet::Kubelet;
pub use replicaset::ReplicaSetController;
pub use scheduler::Scheduler;

/// First retry delay of a key whose sync failed: client-go's per-item
/// exponential limiter starts at 5 ms.
pub const RETRY_BASE: Duration = Duration::from_millis(5);

/// Longest retry delay. client-go's stops at 1,000 s; a demo whose user is
/// watching cannot wait that long, and 10 s still spaces out a key that keeps
/// failing.
pub const RETRY_MAX: Duration = Duration::from_secs(10);

/// A controller's workqueue: client-go's, retrying failed keys from
/// [`RETRY_BASE`] doubling to [`RETRY_MAX`] (and client-go's overall bucket).
pub fn workqueue() -> Workqueue {
    Workqueue::with_limiter(RateLimiter::new(RETRY_BASE, RETRY_MAX))
}

/// The demo's nodes, each with its kubelet.
pub const DEMO_NODES: [&str; 2] = ["node-a", "node-b"];

/// Longest [`Demo::step`] asks its caller to wait. The controllers notice a
/// change made by someone else (kubectl) at the latest this long after it,
/// unless the caller also wakes on [`ControlPlane::revisions`], which makes
/// them notice at once.
pub const MAX_IDLE_MICROS: Micros = 250_000;

/// What one step of a controller did, and when it wants the next.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Activity {
    /// Notifications its informers delivered.
    pub noticed: usize,
    /// Keys it synced.
    pub synced: usize,
    /// When a delayed key of its queue is due, if any.
    pub next: Option<Micros>,
}

impl Activity {
    /// When the controller wants to run again: at once after it did anything
    /// (its writes may be news to the others, or to itself), else when its
    /// next delayed key is due, else only when something changes.
    pub fn wake_at(&self, now: Micros) -> Option<Micros> {
        if self.noticed + self.synced > 0 {
            Some(now)
        } else {
            self.next
        }
    }
}

/// The demo's cluster: every controller and the story, behind one `step`.
pub struct Demo {
    cp: ControlPlane,
    pub deployments: DeploymentController,
    pub replicasets: ReplicaSetController,
    pub scheduler: Scheduler,
    pub kubelets: Vec<Kubelet>,
    pub garbage_collector: GarbageCollector,
    story: Story,
    /// The pause between beats of the story; `None` keeps the story still.
    pace: Option<Duration>,
    story_due: Micros,
    last_story_error: Option<ApiError>,
}

impl std::fmt::Debug for Demo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Demo")
            .field("pace", &self.pace)
            .field("story", &self.story)
            .field("scheduler", &self.scheduler)
            .finish_non_exhaustive()
    }
}

impl Demo {
    /// The controllers of `cp` and, unless `pace` is `None`, the story at that
    /// pace. Nothing happens until the first [`Demo::step`], which registers
    /// the nodes.
    pub fn new(cp: ControlPlane, pace: Option<Duration>) -> Self {
        Demo {
            cp,
            deployments: DeploymentController::new(),
            replicasets: ReplicaSetController::new(),
            scheduler: Scheduler::new(),
            kubelets: DEMO_NODES
                .iter()
                .enumerate()
                .map(|(i, node)| Kubelet::new(node, i as u8))
                .collect(),
            garbage_collector: GarbageCollector::new(),
            story: Story::new(),
            pace,
            story_due: 0,
            last_story_error: None,
        }
    }

    pub fn control_plane(&self) -> &ControlPlane {
        &self.cp
    }

    /// Changes the story's pace; `None` stops it after the current beat.
    pub fn set_pace(&mut self, pace: Option<Duration>) {
        self.pace = pace;
    }

    /// The story, to show where it is and how often it had to skip a beat.
    pub fn story(&self) -> &Story {
        &self.story
    }

    /// The last beat of the story that failed for a reason other than the
    /// world changing under it, if any.
    pub fn last_story_error(&self) -> Option<&ApiError> {
        self.last_story_error.as_ref()
    }

    /// Runs every controller once and, when its time has come, the story's
    /// next beat; returns how long the caller may wait before the next step.
    ///
    /// `now` is the control plane's clock. Zero means "step again at once": a
    /// controller did something others may react to. Otherwise the wait lasts
    /// until the earliest delayed work or story beat, at most
    /// [`MAX_IDLE_MICROS`].
    pub fn step(&mut self, now: Micros) -> Duration {
        let cp = &self.cp;
        let mut wakes = vec![
            self.deployments.step(cp, now).wake_at(now),
            self.replicasets.step(cp, now).wake_at(now),
            self.scheduler.step(cp, now).wake_at(now),
            self.garbage_collector.step(cp, now).wake_at(now),
        ];
        for kubelet in &mut self.kubelets {
            wakes.push(kubelet.step(cp, now).wake_at(now));
        }
        if let Some(pace) = self.pace {
            if now >= self.story_due {
                let wait = match self.story.step(cp, pace) {
                    Ok(wait) => wait,
                    Err(e) => {
                        self.last_story_error = Some(e);
                        pace
                    }
                };
                self.story_due = now + wait.as_micros() as Micros;
                wakes.push(Some(now));
            }
            wakes.push(Some(self.story_due));
        }
        let next = wakes
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(Micros::MAX)
            .min(now + MAX_IDLE_MICROS);
        Duration::from_micros(next.saturating_sub(now))
    }
}

/// Reads an object, lets `change` edit it, and writes it back only if it
/// changed; `Ok(None)` when there was nothing to write. The write carries the
/// resourceVersion read, so a change made in between is a conflict (the
/// caller retries), never silently overwritten.
pub(crate) fn update_if_changed(
    cp: &ControlPlane,
    rt: ResourceType,
    namespace: Option<&str>,
    name: &str,
    change: impl FnOnce(&mut Value),
) -> Result<Option<Arc<Value>>, ApiError> {
    let current = cp.get(rt, namespace, name)?;
    let mut obj = (*current).clone();
    change(&mut obj);
    if obj == *current {
        return Ok(None);
    }
    cp.update(rt, obj).map(Some)
}

#[cfg(test)]
mod tests;
