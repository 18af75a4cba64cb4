//! Demo actions: changes a viewer asks the demo control plane to make.

use watchlife_controlplane::ControlPlane;
use watchlife_controlplane::resource::{self, DEPLOYMENTS, PODS};
use watchlife_protocol::{DemoAction, ErrorCode};

/// A demo action that could not be carried out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionError {
    pub code: ErrorCode,
    pub message: String,
}

impl From<watchlife_controlplane::ApiError> for ActionError {
    fn from(e: watchlife_controlplane::ApiError) -> Self {
        ActionError {
            code: ErrorCode::ActionFailed,
            message: e.to_string(),
        }
    }
}

/// Carries out `action`, returning a sentence that describes what happened.
pub fn run(cp: &ControlPlane, action: &DemoAction) -> Result<String, ActionError> {
    match action {
        DemoAction::Scale {
            namespace,
            name,
            replicas,
        } => {
            cp.modify(DEPLOYMENTS, Some(namespace), name, |d| {
                d["spec"]["replicas"] = (*replicas).into();
            })?;
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
            let ns = rt.namespaced.then_some(namespace.as_str());
            cp.modify(rt, ns, name, |o| {
                o["metadata"]["labels"][key.as_str()] = value.as_str().into();
            })?;
            Ok(format!(
                "labelled {resource} {namespace}/{name} with {key}={value}"
            ))
        }
        DemoAction::SetImage {
            namespace,
            name,
            image,
        } => {
            cp.modify(DEPLOYMENTS, Some(namespace), name, |d| {
                d["spec"]["template"]["spec"]["containers"][0]["image"] = image.as_str().into();
            })?;
            Ok(format!(
                "set the image of deployment {namespace}/{name} to {image}"
            ))
        }
        DemoAction::DeletePod { namespace, name } => {
            cp.delete(PODS, Some(namespace), name)?;
            Ok(format!("deleted pod {namespace}/{name}"))
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
        DemoAction::SlowWatcher => Err(ActionError {
            code: ErrorCode::ActionFailed,
            message: "slow watcher: this control plane has no slow watcher to start yet".into(),
        }),
    }
}
