//! The controller's own log of what it reconciled: printed, and kept when
//! asked (the tests compare it with what the tap sent).

use std::sync::{Arc, Mutex};

use k8s_openapi::api::apps::v1::Deployment;
use kube::ResourceExt;
use kube::runtime::controller::Action;

/// One reconcile, as the controller itself saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reconciled {
    pub namespace: String,
    pub name: String,
    pub resource_version: Option<String>,
    /// `Ok(requeue after)` or `Err(message)`.
    pub result: Result<Option<std::time::Duration>, String>,
}

/// The log: printed always, kept only when made with [`Journal::keeping`]
/// (a long-running controller keeps nothing).
#[derive(Clone, Default)]
pub struct Journal {
    kept: Option<Arc<Mutex<Vec<Reconciled>>>>,
}

impl Journal {
    /// A journal that keeps every entry.
    pub fn keeping() -> Journal {
        Journal {
            kept: Some(Arc::default()),
        }
    }

    /// The entries kept so far, in the order the reconciles ended.
    pub fn entries(&self) -> Vec<Reconciled> {
        self.kept
            .as_ref()
            .and_then(|k| k.lock().ok().map(|k| k.clone()))
            .unwrap_or_default()
    }

    /// Logs one reconcile of `deployment`.
    pub(crate) fn push<E: std::fmt::Display>(
        &self,
        deployment: &Deployment,
        result: &Result<Action, E>,
    ) {
        let entry = Reconciled {
            namespace: deployment.namespace().unwrap_or_default(),
            name: deployment.name_any(),
            resource_version: deployment.resource_version(),
            result: match result {
                Ok(action) => Ok(requeue_after(action)),
                Err(e) => Err(e.to_string()),
            },
        };
        tracing::info!(
            "reconciled {}/{} at resourceVersion {}: {:?}",
            entry.namespace,
            entry.name,
            entry.resource_version.as_deref().unwrap_or("-"),
            entry.result
        );
        if let Some(kept) = &self.kept
            && let Ok(mut kept) = kept.lock()
        {
            kept.push(entry);
        }
    }
}

/// The example only ever asks `Action::requeue(RESYNC)`.
fn requeue_after(action: &Action) -> Option<std::time::Duration> {
    (*action == Action::requeue(crate::RESYNC)).then_some(crate::RESYNC)
}
