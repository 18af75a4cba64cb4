//! The scripted workload: what a user does with kubectl, on a loop.
//!
//! The story creates a Deployment and a ConfigMap, scales the Deployment up
//! and down, labels it, changes the ConfigMap, rolls out a new image, deletes
//! one of its pods, and finally deletes everything and starts over. It only
//! acts as a user would (through [`crate::actions`] and the control plane's
//! API); the ReplicaSets, pods, scheduling and kubelets are the controllers'
//! work (see [`crate::controllers`]).
//!
//! IO-free: [`Story::step`] plays one beat and returns how long to wait
//! before the next, and the caller (a tokio task on the server, a timer in a
//! page, or [`crate::controllers::Demo`]) does the waiting.

use crate::actions;
use crate::api_error::ApiError;
use crate::control_plane::ControlPlane;
use crate::object;
use crate::resource::{CONFIGMAPS, DEPLOYMENTS, PODS};
use serde_json::{Value, json};
use std::time::Duration;

/// Namespace the story plays in.
pub const NAMESPACE: &str = "default";

/// The story's Deployment.
pub const DEPLOYMENT: &str = "web";

/// The story's ConfigMap.
pub const CONFIGMAP: &str = "web-config";

/// The image the Deployment starts with, and the one it rolls out.
pub const FIRST_IMAGE: &str = "nginx:0.5.0";
pub const SECOND_IMAGE: &str = "nginx:1.5.3";

/// Replicas the Deployment starts with, and scales up to (and back).
pub const REPLICAS: u64 = 2;
pub const SCALED_REPLICAS: u64 = 4;

/// One beat of the story.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Beat {
    CreateConfig,
    CreateDeployment,
    Scale(u64),
    LabelDeployment,
    ChangeConfig,
    SetImage,
    DeletePod,
    DeleteDeployment,
    DeleteConfig,
}

impl Beat {
    /// Paces to wait after this beat: a rollout and a cascade deletion take
    /// several rounds of the controllers, so the story lets them play out.
    fn pauses(self) -> u32 {
        match self {
            Beat::SetImage => 3,
            Beat::DeleteConfig => 2,
            _ => 1,
        }
    }
}

/// The story, in order; it starts over after the last beat.
const SCRIPT: [Beat; 10] = [
    Beat::CreateConfig,
    Beat::CreateDeployment,
    Beat::Scale(SCALED_REPLICAS),
    Beat::Scale(REPLICAS),
    Beat::LabelDeployment,
    Beat::ChangeConfig,
    Beat::SetImage,
    Beat::DeletePod,
    Beat::DeleteDeployment,
    Beat::DeleteConfig,
];

/// Where the story is.
#[derive(Debug, Default)]
pub struct Story {
    next: usize,
    skipped: u64,
}

impl Story {
    pub fn new() -> Self {
        Story::default()
    }

    /// Beats skipped because the world had changed under the story.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Plays the next beat, then says how long to wait before the one after.
    ///
    /// `pace` is the unit of waiting (a beat after a rollout waits a few).
    /// A beat that fails because someone changed things with kubectl (the
    /// Deployment deleted, a pod already gone, a conflicting write) is
    /// skipped and the story goes on, as a person at a terminal would. Only
    /// an error that no user action explains is returned, and even then the
    /// story has moved on: calling `step` again plays the following beat.
    pub fn step(&mut self, cp: &ControlPlane, pace: Duration) -> Result<Duration, ApiError> {
        let beat = SCRIPT[self.next % SCRIPT.len()];
        self.next += 1;
        match play(cp, beat) {
            Ok(()) => Ok(pace * beat.pauses()),
            Err(
                ApiError::NotFound { .. }
                | ApiError::AlreadyExists { .. }
                | ApiError::Conflict { .. }
                | ApiError::Invalid(_),
            ) => {
                self.skipped += 1;
                Ok(pace * beat.pauses())
            }
            Err(e) => Err(e),
        }
    }
}

fn play(cp: &ControlPlane, beat: Beat) -> Result<(), ApiError> {
    match beat {
        Beat::CreateConfig => cp.create(CONFIGMAPS, configmap()).map(drop),
        Beat::CreateDeployment => cp.create(DEPLOYMENTS, deployment()).map(drop),
        Beat::Scale(replicas) => {
            actions::scale(cp, DEPLOYMENTS, NAMESPACE, DEPLOYMENT, replicas).map(drop)
        }
        Beat::LabelDeployment => {
            actions::label(cp, DEPLOYMENTS, NAMESPACE, DEPLOYMENT, "tier", "frontend").map(drop)
        }
        Beat::ChangeConfig => cp
            .modify(CONFIGMAPS, Some(NAMESPACE), CONFIGMAP, |c| {
                c["data"]["greeting"] = json!("hola");
            })
            .map(drop),
        Beat::SetImage => {
            actions::set_image(cp, NAMESPACE, DEPLOYMENT, None, SECOND_IMAGE).map(drop)
        }
        Beat::DeletePod => {
            let pod = victim(cp).ok_or_else(|| ApiError::NotFound {
                kind: PODS.plural.into(),
                name: format!("{DEPLOYMENT}-*"),
            })?;
            actions::delete_pod(cp, NAMESPACE, &pod).map(drop)
        }
        Beat::DeleteDeployment => cp
            .delete_gracefully(DEPLOYMENTS, Some(NAMESPACE), DEPLOYMENT, None)
            .map(drop),
        Beat::DeleteConfig => cp
            .delete_gracefully(CONFIGMAPS, Some(NAMESPACE), CONFIGMAP, None)
            .map(drop),
    }
}

/// The ConfigMap as a user's manifest has it.
pub fn configmap() -> Value {
    json!({
        "metadata": {"name": CONFIGMAP, "namespace": NAMESPACE},
        "data": {"greeting": "hello"}
    })
}

/// The Deployment as a user's manifest has it.
pub fn deployment() -> Value {
    json!({
        "metadata": {"name": DEPLOYMENT, "namespace": NAMESPACE, "labels": {"app": DEPLOYMENT}},
        "spec": {
            "replicas": REPLICAS,
            "selector": {"matchLabels": {"app": DEPLOYMENT}},
            "template": {
                "metadata": {"labels": {"app": DEPLOYMENT}},
                "spec": {"containers": [{"name": DEPLOYMENT, "image": FIRST_IMAGE}]}
            }
        }
    })
}

/// The pod a user would pick to delete: a running pod of the Deployment not
/// already being deleted (the first by name).
pub fn victim(cp: &ControlPlane) -> Option<String> {
    let (pods, _) = cp.list(PODS, Some(NAMESPACE));
    pods.iter()
        .filter(|p| p["metadata"]["labels"]["app"] == DEPLOYMENT)
        .filter(|p| !object::is_deleting(p))
        .filter(|p| p["status"]["phase"] == "Running")
        .map(|p| object::name(p).to_string())
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Clock;

    #[test]
    fn the_story_alone_loops_without_errors_and_tells_its_pace() {
        let cp = ControlPlane::new(Clock::new(|| 0));
        let mut story = Story::new();
        let pace = Duration::from_millis(5);
        let mut waits = Vec::new();
        for _ in 0..2 * SCRIPT.len() {
            waits.push(story.step(&cp, pace).unwrap());
        }
        assert_eq!(waits[6], 3 * pace, "a rollout gets time to play out");
        // Without controllers there are no pods to delete: that beat is skipped.
        assert_eq!(story.skipped(), 2);
        let (deployments, _) = cp.list(DEPLOYMENTS, None);
        assert!(deployments.is_empty(), "each round ends clean");
    }

    #[test]
    fn the_story_skips_what_a_user_changed_under_it() {
        let cp = ControlPlane::new(Clock::new(|| 0));
        let mut story = Story::new();
        let pace = Duration::from_millis(1);
        story.step(&cp, pace).unwrap();
        story.step(&cp, pace).unwrap();
        // A user deletes the Deployment before the story scales it.
        cp.delete(DEPLOYMENTS, Some(NAMESPACE), DEPLOYMENT).unwrap();
        for _ in 0..SCRIPT.len() {
            assert!(story.step(&cp, pace).is_ok());
        }
        assert!(story.skipped() >= 4);
    }
}
