//! What a user does with kubectl, as functions of the core: scale, label, set
//! an image, delete a pod. The story and the UI's demo actions both act
//! through these, so the controllers see exactly what a user's kubectl would
//! have sent. (Compacting, dropping every watch and starting a slow watcher
//! act on the control plane itself: [`ControlPlane::compact`],
//! [`ControlPlane::drop_watchers`], [`ControlPlane::start_slow_watcher`].)

use crate::api_error::ApiError;
use crate::control_plane::{ControlPlane, Deletion};
use crate::resource::{DEPLOYMENTS, PODS, ResourceType};
use crate::update::update_if_changed;
use serde_json::{Value, json};
use std::sync::Arc;

/// `kubectl scale <rt>/<name> --replicas=N`: sets `spec.replicas` of a
/// Deployment or ReplicaSet. Scaling to the current count writes nothing.
pub fn scale(
    cp: &ControlPlane,
    rt: ResourceType,
    namespace: &str,
    name: &str,
    replicas: u64,
) -> Result<Arc<Value>, ApiError> {
    edit(cp, rt, Some(namespace), name, |obj| {
        obj["spec"]["replicas"] = json!(replicas)
    })
}

/// `kubectl label <rt>/<name> key=value --overwrite`. `namespace` is ignored
/// for cluster-scoped types.
pub fn label(
    cp: &ControlPlane,
    rt: ResourceType,
    namespace: &str,
    name: &str,
    key: &str,
    value: &str,
) -> Result<Arc<Value>, ApiError> {
    let namespace = rt.namespaced.then_some(namespace);
    edit(cp, rt, namespace, name, |obj| {
        obj["metadata"]["labels"][key] = json!(value)
    })
}

/// `kubectl set image deployment/<name> <container>=<image>`: sets the image
/// of the named container of the pod template, or of the first when
/// `container` is `None`. A new template means a new ReplicaSet: a rollout.
pub fn set_image(
    cp: &ControlPlane,
    namespace: &str,
    name: &str,
    container: Option<&str>,
    image: &str,
) -> Result<Arc<Value>, ApiError> {
    let current = cp.get(DEPLOYMENTS, Some(namespace), name)?;
    let containers = crate::object::field(&current, &["spec", "template", "spec", "containers"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let index = match container {
        None if !containers.is_empty() => 0,
        None => {
            return Err(ApiError::Invalid(format!(
                "deployment {name} has no containers"
            )));
        }
        Some(wanted) => containers
            .iter()
            .position(|c| c["name"] == wanted)
            .ok_or_else(|| {
                ApiError::Invalid(format!(
                    "unable to find container named {wanted:?} in deployment {name}"
                ))
            })?,
    };
    edit(cp, DEPLOYMENTS, Some(namespace), name, |d| {
        d["spec"]["template"]["spec"]["containers"][index]["image"] = json!(image)
    })
}

/// `kubectl delete pod <name>`: graceful, as the apiserver does it (see
/// [`ControlPlane::delete_gracefully`]).
pub fn delete_pod(cp: &ControlPlane, namespace: &str, name: &str) -> Result<Deletion, ApiError> {
    cp.delete_gracefully(PODS, Some(namespace), name, None)
}

/// Applies `change` to the current object; returns what is stored afterwards.
fn edit(
    cp: &ControlPlane,
    rt: ResourceType,
    namespace: Option<&str>,
    name: &str,
    change: impl FnOnce(&mut Value),
) -> Result<Arc<Value>, ApiError> {
    match update_if_changed(cp, rt, namespace, name, change)? {
        Some(updated) => Ok(updated),
        None => cp.get(rt, namespace, name),
    }
}
