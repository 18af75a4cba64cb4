//! The scripted workload: a small story of pods and configmaps on a loop.
//!
//! IO-free: [`Story::step`] makes one change and returns how long to wait
//! before the next, and the caller (a tokio task on the server, a timer in a
//! page) does the waiting.

use crate::control_plane::{ApiError, ControlPlane};
use crate::resource::{CONFIGMAPS, PODS};
use serde_json::{Value, json};
use std::time::Duration;

/// Namespace the story plays in.
pub const NAMESPACE: &str = "default";

/// One change of the story.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Beat {
    CreateConfig,
    CreatePod(&'static str),
    PodRunning(&'static str),
    ChangeConfig,
    LabelPod(&'static str),
    ChangeImage(&'static str),
    DeletePod(&'static str),
    DeleteConfig,
}

/// The story, in order; it starts over after the last beat.
const SCRIPT: [Beat; 12] = [
    Beat::CreateConfig,
    Beat::CreatePod("web-1"),
    Beat::PodRunning("web-1"),
    Beat::CreatePod("web-2"),
    Beat::PodRunning("web-2"),
    Beat::ChangeConfig,
    Beat::LabelPod("web-1"),
    Beat::ChangeImage("web-1"),
    Beat::DeletePod("web-2"),
    Beat::DeletePod("web-1"),
    Beat::DeleteConfig,
    Beat::CreatePod("web-3"),
];

/// Where the story is.
#[derive(Debug, Default)]
pub struct Story {
    next: usize,
}

impl Story {
    pub fn new() -> Self {
        Story::default()
    }

    /// Makes the next change, then says how long to wait before the one after.
    ///
    /// `pace` is the wait between changes. A change that fails because the
    /// world changed under the story (someone deleted its pod with kubectl) is
    /// skipped: the story goes on, as a controller would.
    pub fn step(&mut self, cp: &ControlPlane, pace: Duration) -> Result<Duration, ApiError> {
        let beat = SCRIPT[self.next % SCRIPT.len()];
        self.next += 1;
        if self.next % SCRIPT.len() == 0 {
            // web-3 is left from the previous round: start clean.
            let _ = cp.delete(PODS, Some(NAMESPACE), "web-3");
        }
        match play(cp, beat) {
            Ok(()) | Err(ApiError::NotFound { .. } | ApiError::AlreadyExists { .. }) => Ok(pace),
            Err(e) => Err(e),
        }
    }
}

fn play(cp: &ControlPlane, beat: Beat) -> Result<(), ApiError> {
    let ns = Some(NAMESPACE);
    match beat {
        Beat::CreateConfig => cp
            .create(
                CONFIGMAPS,
                json!({
                    "metadata": {"name": "web-config", "namespace": NAMESPACE},
                    "data": {"greeting": "hello"}
                }),
            )
            .map(drop),
        Beat::CreatePod(name) => cp.create(PODS, pod(name)).map(drop),
        Beat::PodRunning(name) => cp
            .modify(PODS, ns, name, |p| {
                p["status"] = json!({"phase": "Running"});
            })
            .map(drop),
        Beat::ChangeConfig => cp
            .modify(CONFIGMAPS, ns, "web-config", |c| {
                c["data"]["greeting"] = json!("hola");
            })
            .map(drop),
        Beat::LabelPod(name) => cp
            .modify(PODS, ns, name, |p| {
                p["metadata"]["labels"]["tier"] = json!("frontend");
            })
            .map(drop),
        Beat::ChangeImage(name) => cp
            .modify(PODS, ns, name, |p| {
                p["spec"]["containers"][0]["image"] = json!("nginx:1.5.3");
            })
            .map(drop),
        Beat::DeletePod(name) => cp.delete(PODS, ns, name).map(drop),
        Beat::DeleteConfig => cp.delete(CONFIGMAPS, ns, "web-config").map(drop),
    }
}

fn pod(name: &str) -> Value {
    json!({
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "web", "image": "nginx:0.5.0"}]},
        "status": {"phase": "Pending"}
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Clock;

    #[test]
    fn the_story_loops_without_errors_and_tells_its_pace() {
        let cp = ControlPlane::new(Clock::new(|| 0));
        let mut story = Story::new();
        let start = cp.revision();
        for _ in 0..3 * SCRIPT.len() {
            assert_eq!(
                story.step(&cp, Duration::from_millis(5)).unwrap(),
                Duration::from_millis(5)
            );
        }
        assert!(cp.revision() >= start + 3 * SCRIPT.len() as u64 - 3);
        let (pods, _) = cp.list(PODS, None);
        assert_eq!(pods.len(), 1, "only web-3 is left at the end of a round");
    }
}
