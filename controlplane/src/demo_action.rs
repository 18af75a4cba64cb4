//! Demo actions: changes a viewer asks the demo control plane to make, from
//! the bridge's WebSocket or from the page that runs the core itself.

use crate::ControlPlane;
use crate::actions as act;
use crate::control_plane::SLOW_WATCHER_BUFFER;
use crate::resource::{self, DEPLOYMENTS, PODS};
use crate::validation;
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
            // Kubernetes' label syntax, checked before anything is read.
            let malformed = |message: String| ActionError {
                code: ErrorCode::Malformed,
                message,
            };
            validation::check_key(key)
                .map_err(|e| malformed(format!("{key:?} is not a label key: {e}")))?;
            validation::check_label_value(value)
                .map_err(|e| malformed(format!("{value:?} is not a label value: {e}")))?;
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
            let revision = cp.compact_past_watches()?;
            Ok(format!(
                "compacted the store up to revision {revision}, past the watch caches: they relist and close their watches, and a watch from an older resourceVersion gets 410 Gone"
            ))
        }
        DemoAction::DropWatches => {
            cp.drop_watchers();
            Ok("closed every watch: each watcher re-watches from its last resourceVersion".into())
        }
        DemoAction::SlowWatcher => {
            cp.start_slow_watcher(PODS)?;
            Ok(format!(
                "started a pod watcher that never reads: after {SLOW_WATCHER_BUFFER} pod events its buffer is full, the dispatcher waits for it at most its time budget (up to 100 ms, while the next events queue in incoming), then closes it, and every other watcher goes on"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Clock;
    use serde_json::json;

    fn label(key: &str, value: &str) -> DemoAction {
        DemoAction::Label {
            resource: "configmaps".into(),
            namespace: "default".into(),
            name: "c".into(),
            key: key.into(),
            value: value.into(),
        }
    }

    #[test]
    fn labels_follow_kubernetes_syntax_before_anything_is_written() {
        let cp = ControlPlane::new(Clock::new(|| 7));
        cp.create(resource::CONFIGMAPS, json!({"metadata": {"name": "c"}}))
            .unwrap();
        assert!(run(&cp, &label("example.com/tier", "front-1")).is_ok());
        let revision = cp.revision();
        for (key, value) in [
            ("bad key", "v"),
            ("-x", "v"),
            (&"k".repeat(64), "v"),
            ("k", &"v".repeat(64)),
            ("k", "<b>"),
            ("UPPER.example.com/k", "v"),
        ] {
            let err = run(&cp, &label(key, value)).unwrap_err();
            assert_eq!(err.code, ErrorCode::Malformed, "{key:?}={value:?}");
        }
        assert_eq!(cp.revision(), revision, "nothing was written");
    }

    #[test]
    fn a_scale_beyond_the_demo_names_the_limit() {
        let cp = ControlPlane::new(Clock::new(|| 7));
        cp.create(
            DEPLOYMENTS,
            json!({"metadata": {"name": "web"}, "spec": {"replicas": 1}}),
        )
        .unwrap();
        let err = run(
            &cp,
            &DemoAction::Scale {
                namespace: "default".into(),
                name: "web".into(),
                replicas: 1_000_000_000,
            },
        )
        .unwrap_err();
        let limit = crate::limits::MAX_REPLICAS;
        assert!(
            err.message
                .contains(&format!("less than or equal to {limit}")),
            "{}",
            err.message
        );
    }
}
