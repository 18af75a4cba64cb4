//! The garbage collector: deletes what lost its owner.
//!
//! Deleting a Deployment leaves its ReplicaSets, and deleting a ReplicaSet its
//! pods, with owner references to an object that is gone. The collector
//! watches owners and dependents, and deletes a dependent once none of its
//! owners exists any more (background cascading deletion). Pods go through
//! graceful deletion like any other delete.

use super::controller::{Action, Activity, Context, Controller, Reconciler};
use super::informer::{Informer, Notification, split_key};
use super::owner::{has_owners, owners, uid};
use crate::api_error::ApiError;
use crate::control_plane::ControlPlane;
use crate::resource::{DEPLOYMENTS, PODS, REPLICASETS, ResourceType};
use serde_json::Value;
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
    /// Keys are `<plural>:<namespace>/<name>` of dependents to check.
    controller: Controller,
    orphans: Orphans,
}

impl Default for GarbageCollector {
    fn default() -> Self {
        GarbageCollector::new()
    }
}

impl GarbageCollector {
    pub fn new() -> Self {
        GarbageCollector {
            controller: Controller::default()
                .watches(Informer::new(DEPLOYMENTS, NAME))
                .watches(Informer::new(REPLICASETS, NAME))
                .watches(Informer::new(PODS, NAME))
                .working_before_sync(),
            orphans: Orphans,
        }
    }

    /// Drains the informers, then checks the dependents queued; returns when
    /// it next wants to run (see [`Activity`]).
    pub fn step(&mut self, cp: &ControlPlane, now: Micros) -> Activity {
        self.controller.step(cp, now, &mut self.orphans)
    }
}

/// What the collector does: find dependents whose owners are gone, and
/// delete them.
#[derive(Debug)]
struct Orphans;

impl Reconciler for Orphans {
    fn notified(&mut self, ctx: &mut Context<'_>, rt: ResourceType, n: &Notification) {
        match n {
            // An owner went away: check everything that named it.
            Notification::Deleted(owner) if OWNERS.contains(&rt) => {
                enqueue_dependents_of(ctx, owner)
            }
            // A dependent gone needs nothing more.
            Notification::Deleted(_) => {}
            // A dependent appeared or changed: its owners may be gone already.
            _ if DEPENDENTS.contains(&rt) && has_owners(n.object()) => {
                ctx.queue(&format!("{}:{}", rt.plural, n.key()));
            }
            _ => {}
        }
    }

    fn reconcile(&mut self, ctx: &mut Context<'_>, key: &str) -> Result<Action, ApiError> {
        collect(ctx.cp, key).map(|()| Action::Done)
    }
}

fn enqueue_dependents_of(ctx: &mut Context<'_>, owner: &Value) {
    let owner_uid = uid(owner);
    for rt in [REPLICASETS, PODS] {
        for dependent in ctx.cache(rt).list() {
            if owners(dependent).iter().any(|o| o.uid == owner_uid) {
                let key = super::informer::key_of(dependent);
                ctx.queue(&format!("{}:{key}", rt.plural));
            }
        }
    }
}

/// Deletes the dependent under `key` if every owner it names is gone.
fn collect(cp: &ControlPlane, key: &str) -> Result<(), ApiError> {
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
