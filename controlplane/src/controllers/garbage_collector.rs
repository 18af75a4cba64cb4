//! The garbage collector: deletes what lost its owner.
//!
//! Deleting a Deployment leaves its ReplicaSets, and deleting a ReplicaSet its
//! pods, with owner references to an object that is gone. The collector
//! watches owners and dependents, and deletes a dependent once none of its
//! owners exists any more (background cascading deletion). Pods go through
//! graceful deletion like any other delete.

use super::Activity;
use super::informer::{Informer, Notification, split_key};
use super::owner::{has_owners, owners, uid};
use crate::control_plane::{ApiError, ControlPlane};
use crate::resource::{DEPLOYMENTS, PODS, REPLICASETS, ResourceType};
use serde_json::Value;
use watchlife_informer::workqueue::Workqueue;
use watchlife_protocol::Micros;

/// Name of the collector, and of its watches.
pub const NAME: &str = "garbage-collector";

/// The owner → dependent pairs the collector knows: the types the demo's
/// controllers create.
const DEPENDENTS: [ResourceType; 2] = [REPLICASETS, PODS];

/// The owners of those dependents.
const OWNERS: [ResourceType; 2] = [DEPLOYMENTS, REPLICASETS];

/// The garbage collector.
///
/// Before deleting, it reads each owner from the control plane itself, not
/// from its cache, as the real collector does: a cache that has not yet seen
/// a new owner must not cost a dependent its life.
#[derive(Debug)]
pub struct GarbageCollector {
    deployments: Informer,
    replicasets: Informer,
    pods: Informer,
    /// Keys are `<plural>:<namespace>/<name>` of dependents to check.
    queue: Workqueue,
}

impl Default for GarbageCollector {
    fn default() -> Self {
        GarbageCollector::new()
    }
}

impl GarbageCollector {
    pub fn new() -> Self {
        GarbageCollector {
            deployments: Informer::new(DEPLOYMENTS, NAME),
            replicasets: Informer::new(REPLICASETS, NAME),
            pods: Informer::new(PODS, NAME),
            queue: super::workqueue(),
        }
    }

    /// Drains the informers, then checks the dependents queued; returns when
    /// it next wants to run (see [`Activity`]).
    pub fn step(&mut self, cp: &ControlPlane, now: Micros) -> Activity {
        let mut activity = Activity::default();
        let mut changes = Vec::new();
        changes.extend(
            self.deployments
                .poll(cp)
                .into_iter()
                .map(|n| (DEPLOYMENTS, n)),
        );
        changes.extend(
            self.replicasets
                .poll(cp)
                .into_iter()
                .map(|n| (REPLICASETS, n)),
        );
        changes.extend(self.pods.poll(cp).into_iter().map(|n| (PODS, n)));
        for (rt, n) in changes {
            activity.noticed += 1;
            match &n {
                // An owner went away: check everything that named it.
                Notification::Deleted(owner) if OWNERS.contains(&rt) => {
                    self.enqueue_dependents_of(owner)
                }
                // A dependent gone needs nothing more.
                Notification::Deleted(_) => {}
                // A dependent appeared or changed: its owners may be gone already.
                _ if DEPENDENTS.contains(&rt) && has_owners(n.object()) => {
                    self.queue.add(&format!("{}:{}", rt.plural, n.key()), []);
                }
                _ => {}
            }
        }
        for _ in 0..self.queue.ready(now) {
            let Some((key, _)) = self.queue.get(now) else {
                break;
            };
            activity.synced += 1;
            match self.collect(cp, &key) {
                Ok(()) => self.queue.forget(&key),
                Err(_) => {
                    self.queue.add_rate_limited(&key, now);
                }
            }
            self.queue.done(&key);
        }
        activity.next = self.queue.next_due();
        activity
    }

    fn enqueue_dependents_of(&mut self, owner: &Value) {
        let owner_uid = uid(owner);
        for (rt, informer) in [(REPLICASETS, &self.replicasets), (PODS, &self.pods)] {
            for dependent in informer.list() {
                if owners(dependent).iter().any(|o| o.uid == owner_uid) {
                    let key = super::informer::key_of(dependent);
                    self.queue.add(&format!("{}:{key}", rt.plural), []);
                }
            }
        }
    }

    /// Deletes the dependent under `key` if every owner it names is gone.
    fn collect(&self, cp: &ControlPlane, key: &str) -> Result<(), ApiError> {
        let Some((plural, key)) = key.split_once(':') else {
            return Ok(());
        };
        let Some(rt) = DEPENDENTS.into_iter().find(|rt| rt.plural == plural) else {
            return Ok(());
        };
        let (ns, name) = split_key(key);
        let dependent = match cp.get(rt, ns, name) {
            Ok(obj) => obj,
            Err(ApiError::NotFound { .. }) => return Ok(()),
            Err(e) => return Err(e),
        };
        if crate::object::is_deleting(&dependent) {
            return Ok(());
        }
        let refs = owners(&dependent);
        if refs.is_empty() {
            return Ok(());
        }
        for owner in &refs {
            let Some(owner_rt) = OWNERS.into_iter().find(|rt| rt.kind == owner.kind) else {
                // An owner of a type the collector does not know: leave it be.
                return Ok(());
            };
            match cp.get(owner_rt, ns, &owner.name) {
                // The same name may be a new object: only the uid counts.
                Ok(found) if uid(&found) == owner.uid => return Ok(()),
                Ok(_) | Err(ApiError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        match cp.delete_gracefully(rt, ns, name, None) {
            Ok(_) | Err(ApiError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}
