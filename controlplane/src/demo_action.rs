//! Demo actions: changes a viewer asks the demo control plane to make, from
//! the bridge's WebSocket or from the page that runs the core itself.

use crate::ControlPlane;
use crate::actions as act;
use crate::control_plane::SLOW_WATCHER_BUFFER;
use crate::resource::{self, DEPLOYMENTS, PODS};
use watchlife_protocol::{DemoAction, ErrorCode};

/// A demo action that could not be carried out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionError {
    pub code: ErrorCode,
    pub message: String,
}

impl From<crate::ApiError> for ActionError {
    fn from(e: crate::ApiError) -> Self {
        ActionError {
            code: ErrorCode::ActionFailed,
            message: e.to_string(),
        }
    }
}

/// Carries out `action` as a user's kubectl would (through the core's
/// [`crate::actions`]), returning a sentence that describes
/// what happened.
pub fn run(cp: &ControlPlane, action: &DemoAction) -> Result<String, ActionError> {
    match action {
        DemoAction::Scale {
            namespace,
            name,
            replicas,
        } => {
            act::scale(cp, DEPLOYMENTS, namespace, name, *replicas as u64)?;
            Ok(format!(
                "scaled deployment {namespace}/{name} to {replicas}"
            ))
        }
        DemoAction::Label {
            resource,
            namespace,
            name,
            key,
            value,
        } => {
            let rt = resource::find(resource).ok_or_else(|| ActionError {
                code: ErrorCode::ActionFailed,
                message: format!("the demo serves no resource called {resource:?}"),
            })?;
            act::label(cp, rt, namespace, name, key, value)?;
            Ok(format!(
                "labelled {resource} {namespace}/{name} with {key}={value}"
            ))
        }
        DemoAction::SetImage {
            namespace,
            name,
            image,
        } => {
            act::set_image(cp, namespace, name, None, image)?;
            Ok(format!(
                "set the image of deployment {namespace}/{name} to {image}"
            ))
        }
        DemoAction::DeletePod { namespace, name } => {
            act::delete_pod(cp, namespace, name)?;
            Ok(format!(
                "deleting pod {namespace}/{name}: MODIFIED (deletionTimestamp set) now, DELETED once its kubelet has stopped it"
            ))
        }
        DemoAction::Compact => {
            let revision = cp.compact();
            Ok(format!(
                "compacted the store up to revision {revision}: a watch from an older resourceVersion now gets 410 Gone"
            ))
        }
        DemoAction::DropWatches => {
            cp.drop_watchers();
            Ok("closed every watch: each watcher re-watches from its last resourceVersion".into())
        }
        DemoAction::SlowWatcher => {
            cp.start_slow_watcher(PODS)?;
            Ok(format!(
                "started a pod watcher that never reads: after {SLOW_WATCHER_BUFFER} pod events its buffer is full and the watch cache closes it, while every other watcher goes on"
            ))
        }
    }
}
