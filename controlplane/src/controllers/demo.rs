//! [`Demo`]: the demo's cluster, every controller and the story behind one
//! `step`.

use super::deployment::DeploymentController;
use super::garbage_collector::GarbageCollector;
use super::kubelet::Kubelet;
use super::replicaset::ReplicaSetController;
use super::scheduler::Scheduler;
use crate::api_error::ApiError;
use crate::control_plane::ControlPlane;
use crate::limits::DEMO_NODES;
use crate::story::Story;
use std::time::Duration;
use watchlife_protocol::Micros;

/// Longest [`Demo::step`] asks its caller to wait. The controllers notice a
/// change made by someone else (kubectl) at the latest this long after it,
/// unless the caller also wakes on [`ControlPlane::revisions`], which makes
/// them notice at once.
pub const MAX_IDLE_MICROS: Micros = 250_000;

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
