//! Graceful deletion, as the apiserver does it for pods.
//!
//! Deleting a pod that runs on a node does not remove it: the apiserver marks
//! it (`metadata.deletionTimestamp`, `metadata.deletionGracePeriodSeconds`),
//! watchers see a MODIFIED event, the node's kubelet stops the containers and
//! then deletes the pod with a grace period of zero, and only that second
//! delete removes it (DELETED).

use super::{ControlPlane, api_error};
use crate::api_error::ApiError;
use crate::object;
use crate::resource::{PODS, ResourceType};
use serde_json::Value;
use std::sync::Arc;

/// Grace period when neither the request nor the pod's
/// `spec.terminationGracePeriodSeconds` gives one: the Kubernetes default.
pub const DEFAULT_GRACE_PERIOD_SECONDS: u64 = 30;

/// What a delete did.
#[derive(Debug, Clone, PartialEq)]
pub enum Deletion {
    /// The object is gone; this is its last state, as the DELETED event carries it.
    Deleted(Arc<Value>),
    /// The object is marked for deletion and still exists (a pod its kubelet
    /// has yet to stop); this is the marked object.
    Pending(Arc<Value>),
}

impl Deletion {
    /// The object the API returns for the delete, either way.
    pub fn object(&self) -> &Arc<Value> {
        match self {
            Deletion::Deleted(obj) | Deletion::Pending(obj) => obj,
        }
    }
}

impl ControlPlane {
    /// Deletes an object as the apiserver's `DELETE` does.
    ///
    /// - A pod bound to a node (`spec.nodeName` set), not yet finished
    ///   (`status.phase` neither Succeeded nor Failed), with a grace period
    ///   above zero is marked, not removed: `metadata.deletionTimestamp` is set
    ///   to now plus the grace period and `metadata.deletionGracePeriodSeconds`
    ///   to the grace period, in one update (one MODIFIED event), and
    ///   [`Deletion::Pending`] is returned. Its kubelet removes it later by
    ///   calling this again with `Some(0)`.
    /// - The grace period is `grace_seconds` when given, else the pod's
    ///   `spec.terminationGracePeriodSeconds`, else
    ///   [`DEFAULT_GRACE_PERIOD_SECONDS`].
    /// - A pod already marked is marked again only when the new grace period is
    ///   shorter; otherwise nothing is written and the current object is
    ///   returned as [`Deletion::Pending`].
    /// - Everything else (a grace period of zero, an unscheduled or finished
    ///   pod, any other type) is removed at once: one DELETED event, and
    ///   [`Deletion::Deleted`] with the last state.
    /// - [`ApiError::NotFound`] when the object does not exist.
    ///
    /// The check and the write happen under the control plane's lock, so a pod
    /// bound between them cannot be removed without its kubelet seeing it.
    pub fn delete_gracefully(
        &self,
        rt: ResourceType,
        namespace: Option<&str>,
        name: &str,
        grace_seconds: Option<u64>,
    ) -> Result<Deletion, ApiError> {
        let key = rt.key(namespace, name);
        let mut state = self.lock();
        let current = state.store.get(&key).ok_or_else(|| ApiError::NotFound {
            kind: rt.plural.into(),
            name: name.into(),
        })?;
        let grace = if rt == PODS {
            pod_grace_period(&current, grace_seconds)
        } else {
            0
        };
        if grace == 0 {
            let event = state
                .store
                .delete(&key, None)
                .map_err(|e| api_error(rt, name, e))?;
            return Ok(Deletion::Deleted(state.publish(rt, event)));
        }
        let marked_with = object::field(&current, &["metadata", "deletionGracePeriodSeconds"])
            .and_then(Value::as_u64);
        if marked_with.is_some_and(|marked| grace >= marked) {
            return Ok(Deletion::Pending(current));
        }
        let mut obj = (*current).clone();
        // A client's grace period may be any u64: saturate rather than overflow.
        let deadline = self
            .clock
            .now()
            .saturating_add(grace.saturating_mul(1_000_000));
        let meta = object::metadata_mut(&mut obj);
        meta.insert(
            "deletionTimestamp".into(),
            crate::time::rfc3339(deadline).into(),
        );
        meta.insert("deletionGracePeriodSeconds".into(), grace.into());
        let event = state
            .store
            .update(&key, obj, None)
            .map_err(|e| api_error(rt, name, e))?;
        Ok(Deletion::Pending(state.publish(rt, event)))
    }
}

/// The grace period a pod gets: zero when nothing runs it.
fn pod_grace_period(pod: &Value, requested: Option<u64>) -> u64 {
    let bound = object::field(pod, &["spec", "nodeName"])
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    let finished = matches!(
        object::field(pod, &["status", "phase"]).and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    );
    if !bound || finished {
        return 0;
    }
    requested
        .or_else(|| {
            object::field(pod, &["spec", "terminationGracePeriodSeconds"]).and_then(Value::as_u64)
        })
        .unwrap_or(DEFAULT_GRACE_PERIOD_SECONDS)
}

#[cfg(test)]
mod tests {
    use crate::clock::Clock;
    use crate::control_plane::{ControlPlane, Deletion};
    use crate::resource::{CONFIGMAPS, PODS};
    use serde_json::json;
    use watchlife_protocol::EventType;

    fn cp() -> ControlPlane {
        ControlPlane::new(Clock::new(|| 1_000_000))
    }

    fn events(rx: &mut tokio::sync::mpsc::Receiver<crate::Delivery>) -> Vec<EventType> {
        std::iter::from_fn(|| rx.try_recv().ok())
            .map(|d| d.event.event_type)
            .collect()
    }

    #[test]
    fn a_bound_pod_is_marked_then_removed_with_grace_zero() {
        let cp = cp();
        cp.create(
            PODS,
            json!({"metadata": {"name": "p"}, "spec": {"nodeName": "node-a"}}),
        )
        .unwrap();
        let mut rx = cp.watch(PODS, Some(cp.revision()), None).unwrap();
        let marked = cp
            .delete_gracefully(PODS, Some("default"), "p", None)
            .unwrap();
        let Deletion::Pending(pod) = marked else {
            panic!("a bound pod is marked first")
        };
        assert_eq!(pod["metadata"]["deletionTimestamp"], "1970-01-01T00:00:31Z");
        assert_eq!(pod["metadata"]["deletionGracePeriodSeconds"], 30);
        // Asking again with a longer grace period changes nothing.
        let again = cp
            .delete_gracefully(PODS, Some("default"), "p", Some(60))
            .unwrap();
        assert_eq!(
            again.object()["metadata"]["resourceVersion"],
            pod["metadata"]["resourceVersion"]
        );
        let gone = cp
            .delete_gracefully(PODS, Some("default"), "p", Some(0))
            .unwrap();
        assert!(matches!(gone, Deletion::Deleted(_)));
        assert_eq!(
            events(&mut rx),
            vec![EventType::Modified, EventType::Deleted]
        );
    }

    #[test]
    fn unscheduled_pods_and_other_types_go_at_once() {
        let cp = cp();
        cp.create(PODS, json!({"metadata": {"name": "p"}})).unwrap();
        cp.create(CONFIGMAPS, json!({"metadata": {"name": "c"}}))
            .unwrap();
        for rt in [PODS, CONFIGMAPS] {
            let name = if rt == PODS { "p" } else { "c" };
            let d = cp
                .delete_gracefully(rt, Some("default"), name, None)
                .unwrap();
            assert!(matches!(d, Deletion::Deleted(_)));
        }
        assert!(
            cp.delete_gracefully(PODS, Some("default"), "p", None)
                .is_err()
        );
    }
}
