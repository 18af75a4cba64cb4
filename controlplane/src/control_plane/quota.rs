//! How many objects the control plane holds, and the quotas a create must fit
//! in (see [`crate::limits`]): namespaces, objects per namespace, objects and
//! pods in all. A create over one is a 403 naming the quota, as a
//! `ResourceQuota` refuses it.

use crate::api_error::ApiError;
use crate::limits::Limits;
use crate::object;
use crate::resource::{NAMESPACES, PODS, ResourceType};
use crate::store::{Change, StoreEvent};
use std::collections::HashMap;

/// The counts the quotas are checked against, kept up to date from every
/// committed change.
#[derive(Debug, Default)]
pub(super) struct Usage {
    objects: usize,
    pods: usize,
    namespaces: usize,
    /// Objects of every namespaced type, by namespace.
    per_namespace: HashMap<String, usize>,
}

impl Usage {
    /// Whether one more object of `rt` named `name` (in `namespace`, for a
    /// namespaced type) fits in every quota.
    pub(super) fn admit(
        &self,
        rt: ResourceType,
        namespace: Option<&str>,
        name: &str,
        limits: &Limits,
    ) -> Result<(), ApiError> {
        let refuse = |what: String, used: usize| {
            Err(ApiError::Forbidden(format!(
                "{} \"{name}\" is forbidden: exceeded quota: the demo cluster holds at most {what}, and {used} exist",
                rt.qualified_name()
            )))
        };
        if self.objects >= limits.max_objects {
            return refuse(format!("{} objects", limits.max_objects), self.objects);
        }
        if rt == PODS && self.pods >= limits.max_pods {
            return refuse(format!("{} pods", limits.max_pods), self.pods);
        }
        if rt == NAMESPACES && self.namespaces >= limits.max_namespaces {
            return refuse(
                format!("{} namespaces", limits.max_namespaces),
                self.namespaces,
            );
        }
        if let Some(ns) = namespace {
            let used = self.per_namespace.get(ns).copied().unwrap_or(0);
            if used >= limits.max_objects_per_namespace {
                return refuse(
                    format!(
                        "{} objects in a namespace (namespace {ns:?})",
                        limits.max_objects_per_namespace
                    ),
                    used,
                );
            }
        }
        Ok(())
    }

    /// Counts a committed change of `rt`.
    pub(super) fn record(&mut self, rt: ResourceType, event: &StoreEvent) {
        let delta: isize = match event.change {
            Change::Put { created: true } => 1,
            Change::Put { created: false } => return,
            Change::Delete => -1,
        };
        let step = |n: &mut usize| *n = n.saturating_add_signed(delta);
        step(&mut self.objects);
        if rt == PODS {
            step(&mut self.pods);
        }
        if rt == NAMESPACES {
            step(&mut self.namespaces);
        }
        if rt.namespaced
            && let Some(ns) = object::namespace(&event.object)
        {
            let count = self.per_namespace.entry(ns.to_string()).or_default();
            step(count);
            if *count == 0 {
                self.per_namespace.remove(ns);
            }
        }
    }
}
