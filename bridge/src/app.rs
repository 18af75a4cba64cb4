//! What every request handler shares.

use crate::downstream::hub::Hub;
use watchlife_controlplane::demo_action::{self, ActionError};
use watchlife_controlplane::{Clock, ControlPlane};
use watchlife_protocol::{
    ActionResult, DemoAction, ErrorCode, Hello, Micros, PROTOCOL_VERSION, Source, Stage,
};

/// The bridge's shared state: the hub, what it watches, and the demo control
/// plane when that is the source.
pub struct App {
    pub hub: Hub,
    pub source: Source,
    pub resources: Vec<String>,
    pub observed_stages: Vec<Stage>,
    pub demo: Option<ControlPlane>,
    pub clock: Clock,
    /// The demo's kubeconfig, removed when the app goes (the bridge stops).
    pub kubeconfig: Option<crate::upstream::source::demo::Kubeconfig>,
    /// Whose rules the Reflectors follow (`1.36`, `1.20 (...)`).
    pub kubernetes: String,
    /// The apiserver's `gitVersion`, where `/version` answered.
    pub cluster_version: Option<String>,
}

impl App {
    /// The greeting for a new viewer.
    pub fn hello(&self) -> Hello {
        Hello {
            protocol: PROTOCOL_VERSION,
            server_version: env!("CARGO_PKG_VERSION").into(),
            stream: self.hub.stream_id().into(),
            source: self.source.clone(),
            resources: self.resources.clone(),
            observed_stages: self.observed_stages.clone(),
            demo_actions: self.demo.is_some(),
            heartbeat_ms: crate::downstream::liveness::HEARTBEAT.as_millis() as u64,
            kubernetes: self.kubernetes.clone(),
            cluster_version: self.cluster_version.clone(),
        }
    }

    /// Bridge time.
    pub fn now(&self) -> Micros {
        self.clock.now()
    }

    /// Runs a demo action; refused unless the source is the demo.
    pub async fn run_action(&self, action: DemoAction) -> Result<ActionResult, ActionError> {
        let Some(cp) = &self.demo else {
            return Err(ActionError {
                code: ErrorCode::Forbidden,
                message: "demo actions only run against the embedded demo control plane; watchlife never writes to a real cluster".into(),
            });
        };
        let message = demo_action::run(cp, &action)?;
        Ok(ActionResult { action, message })
    }
}
