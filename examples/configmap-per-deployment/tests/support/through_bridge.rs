//! What a viewer of watchlife sees of a tap: the frames it relays, and the
//! bridge's own events they are matched with.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use watchlife_protocol::tap::TapFrame;
use watchlife_protocol::{EventType, FrameBody, ServerFrame};
use watchlife_tests::bridge::Bridge;
use watchlife_tests::ws::Viewer;

/// A viewer reading a bridge's stream in the background, keeping every frame.
pub struct Watching {
    frames: Arc<Mutex<Vec<ServerFrame>>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Watching {
    /// Connects to `bridge` and reads until dropped.
    pub async fn start(bridge: &Bridge) -> Watching {
        let mut viewer = Viewer::connect(&bridge.ws_url()).await;
        let frames = Arc::new(Mutex::new(Vec::new()));
        let kept = frames.clone();
        let reader = tokio::spawn(async move {
            while let Some(frame) = viewer.next_frame_or_end().await {
                kept.lock().unwrap().push(frame);
            }
        });
        Watching { frames, reader }
    }

    pub fn frames(&self) -> Vec<ServerFrame> {
        self.frames.lock().unwrap().clone()
    }

    /// What `controller`'s taps said, in the bridge's order.
    pub fn relayed(&self, controller: &str) -> Vec<TapFrame> {
        self.frames()
            .into_iter()
            .filter_map(|f| match f.body {
                FrameBody::Tap(r) if r.controller == controller => r.frame,
                _ => None,
            })
            .collect()
    }

    /// Waits until `controller`'s tap has told `reconciles` reconciles'
    /// ends, and returns what it said.
    pub async fn until_told(&self, controller: &str, reconciles: usize) -> Vec<TapFrame> {
        let deadline = tokio::time::Instant::now() + super::PATIENCE;
        loop {
            let told = self.relayed(controller);
            let ends = told
                .iter()
                .filter(|f| matches!(f, TapFrame::ReconcileEnd(_)))
                .count();
            if ends >= reconciles {
                return told;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{ends} of {reconciles} reconciles reached the viewer"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Stops `tapped` and proves what reached this viewer against its
    /// journal (see [`super::proof`]) and the bridge's own events
    /// ([`every_reconcile_matched`]); returns what `controller` told.
    pub async fn prove(
        &self,
        tapped: &mut super::tapped::Tapped,
        controller: &str,
    ) -> (Vec<TapFrame>, usize) {
        let journal = tapped.stop().await;
        let told = self.until_told(controller, journal.len()).await;
        let objects = super::proof::every_reconcile_told(&told, &journal).len();
        self.until_matched(&told).await;
        (told, objects)
    }

    /// Waits until the bridge's own watch has delivered every Deployment
    /// version `told` reconciled, then proves it ([`every_reconcile_matched`]).
    /// The bridge's watch may lag the controller's: after an apiserver
    /// restart each relists on its own schedule (a 410, then a backoff).
    async fn until_matched(&self, told: &[TapFrame]) {
        let deadline = tokio::time::Instant::now() + super::PATIENCE;
        let reconciled = reconciled_versions(told);
        while tokio::time::Instant::now() < deadline
            && !reconciled.is_subset(&self.bridge_deployments())
        {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        every_reconcile_matched(told, &self.bridge_deployments());
    }

    /// The (name, resourceVersion) of every Deployment version the bridge's
    /// own watch delivered to this viewer (its snapshot and its events).
    pub fn bridge_deployments(&self) -> BTreeSet<(String, String)> {
        let mut seen = BTreeSet::new();
        for frame in self.frames() {
            match frame.body {
                FrameBody::Event(e)
                    if e.target.resource == "deployments.apps"
                        && !matches!(e.event_type, EventType::Bookmark | EventType::Error) =>
                {
                    seen.insert((e.target.name, e.resource_version));
                }
                FrameBody::Snapshot(s) => seen.extend(
                    s.objects
                        .into_iter()
                        .filter(|o| o.target.resource == "deployments.apps")
                        .map(|o| (o.target.name, o.resource_version)),
                ),
                _ => {}
            }
        }
        seen
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// The (name, resourceVersion) of every Deployment a reconcile in `told` started on.
fn reconciled_versions(told: &[TapFrame]) -> BTreeSet<(String, String)> {
    told.iter()
        .filter_map(|frame| match frame {
            TapFrame::ReconcileStart(start) => Some((
                start.object.name.clone(),
                start.resource_version.clone().unwrap_or_default(),
            )),
            _ => None,
        })
        .collect()
}

/// Every reconcile the tap told is of a Deployment version the bridge's own
/// watch delivered: one event's path, from etcd into the user's reconcile.
pub fn every_reconcile_matched(told: &[TapFrame], bridge: &BTreeSet<(String, String)>) {
    let mut matched = 0;
    for frame in told {
        if let TapFrame::ReconcileStart(start) = frame {
            let rv = start.resource_version.clone().expect("a resourceVersion");
            let key = (start.object.name.clone(), rv);
            assert!(
                bridge.contains(&key),
                "reconcile #{} of {key:?} has no event of the bridge's own watch: {bridge:?}",
                start.reconcile
            );
            matched += 1;
        }
    }
    assert!(matched > 0, "reconciles were told");
}
