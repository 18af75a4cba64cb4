//! Read-modify-write of one object, as controllers and kubectl's verbs do it.

use crate::api_error::ApiError;
use crate::control_plane::ControlPlane;
use crate::resource::ResourceType;
use serde_json::Value;
use std::sync::Arc;

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
