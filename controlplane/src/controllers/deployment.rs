//! The deployment controller: Deployment → ReplicaSets.
//!
//! Each pod template gets its own ReplicaSet, named after the template's hash
//! (`web-5d9c8bf7b4`) and owned by the Deployment. When the template changes
//! (a new image), a new ReplicaSet is created and the rolling update moves
//! replicas from the old ones to it, never more than `maxSurge` above the
//! desired count, never more than `maxUnavailable` below it.

use super::controller::{Action, Activity, Context, Controller, Reconciler};
use super::events::{EventType, Recorder};
use super::informer::{Informer, key_of, split_key};
use super::names;
use super::owner::{controller_reference, uid};
use crate::api_error::ApiError;
use crate::control_plane::ControlPlane;
use crate::object;
use crate::resource::{DEPLOYMENTS, REPLICASETS};
use crate::update::update_if_changed;
use serde_json::{Value, json};
use std::sync::Arc;
use watchlife_protocol::Micros;

/// Name of the controller, and of its watches.
pub const NAME: &str = "deployment-controller";

/// Label that ties a ReplicaSet and its pods to one pod template.
pub const TEMPLATE_HASH_LABEL: &str = "pod-template-hash";

/// Annotation numbering a Deployment's ReplicaSets in order of creation.
pub const REVISION_ANNOTATION: &str = "deployment.kubernetes.io/revision";

/// The rolling update's default `maxSurge` and `maxUnavailable`: a quarter of
/// the desired replicas (rounded up for surge, down for unavailability).
pub const DEFAULT_ROLLING_PERCENT: u64 = 25;

/// Watches Deployments and ReplicaSets; syncs one Deployment per key.
#[derive(Debug)]
pub struct DeploymentController {
    controller: Controller,
    rollouts: Rollouts,
}

impl Default for DeploymentController {
    fn default() -> Self {
        DeploymentController::new()
    }
}

impl DeploymentController {
    pub fn new() -> Self {
        DeploymentController {
            controller: Controller::new(Informer::new(DEPLOYMENTS, NAME))
                .owns(Informer::new(REPLICASETS, NAME), DEPLOYMENTS.kind),
            rollouts: Rollouts {
                events: Recorder::new(NAME, None),
            },
        }
    }

    /// Drains both informers, then syncs the Deployments queued; returns when
    /// it next wants to run (see [`Activity`]).
    pub fn step(&mut self, cp: &ControlPlane, now: Micros) -> Activity {
        self.controller.step(cp, now, &mut self.rollouts)
    }
}

/// What a sync of one Deployment does: its rollout.
#[derive(Debug)]
struct Rollouts {
    events: Recorder,
}

impl Reconciler for Rollouts {
    fn reconcile(&mut self, ctx: &mut Context<'_>, key: &str) -> Result<Action, ApiError> {
        self.sync(ctx, key).map(|()| Action::Done)
    }
}

impl Rollouts {
    fn sync(&mut self, ctx: &Context<'_>, key: &str) -> Result<(), ApiError> {
        let (cp, now) = (ctx.cp, ctx.now);
        let Some(deployment) = ctx.cache(DEPLOYMENTS).get(key).cloned() else {
            // Deleted: its ReplicaSets are the garbage collector's.
            return Ok(());
        };
        if object::is_deleting(&deployment) {
            return Ok(());
        }
        let owner_uid = uid(&deployment).to_string();
        let mut owned: Vec<Arc<Value>> = ctx
            .cache(REPLICASETS)
            .controlled_by(&owner_uid)
            .cloned()
            .collect();
        owned.sort_by_key(|rs| revision_of(rs));
        let hash = names::template_hash(&deployment["spec"]["template"]);
        let (new, old): (Vec<_>, Vec<_>) = owned.into_iter().partition(|rs| {
            object::field(rs, &["metadata", "labels", TEMPLATE_HASH_LABEL]) == Some(&json!(hash))
        });
        let plan = Rollout::new(&deployment);
        match new.first() {
            None => self.create_replicaset(cp, &deployment, &hash, &old, &plan, now)?,
            Some(new) => self.roll(cp, &deployment, new, &old, &plan, now)?,
        }
        self.update_status(cp, key, &deployment, new.first(), &old, &plan, now)
    }

    /// Scales one ReplicaSet and records it on the Deployment, as the
    /// deployment controller's `ScalingReplicaSet` events say.
    fn scale(
        &mut self,
        cp: &ControlPlane,
        deployment: &Value,
        rs: &Value,
        replicas: u64,
        now: Micros,
    ) -> Result<(), ApiError> {
        let before = self::replicas(rs);
        scale(cp, rs, replicas)?;
        let direction = if replicas > before { "up" } else { "down" };
        self.record_scaling(cp, now, deployment, rs, direction, replicas);
        Ok(())
    }

    fn create_replicaset(
        &mut self,
        cp: &ControlPlane,
        deployment: &Value,
        hash: &str,
        old: &[Arc<Value>],
        plan: &Rollout,
        now: Micros,
    ) -> Result<(), ApiError> {
        let mut template = deployment["spec"]["template"].clone();
        template["metadata"]["labels"][TEMPLATE_HASH_LABEL] = json!(hash);
        let mut selector = deployment["spec"]["selector"].clone();
        selector["matchLabels"][TEMPLATE_HASH_LABEL] = json!(hash);
        let old_total: u64 = old.iter().map(|rs| replicas(rs)).sum();
        let revision = old.iter().map(|rs| revision_of(rs)).max().unwrap_or(0) + 1;
        let rs = json!({
            "metadata": {
                "name": format!("{}-{hash}", object::name(deployment)),
                // What the apiserver gives a new ReplicaSet.
                "generation": 1,
                "namespace": object::namespace(deployment),
                "labels": template["metadata"]["labels"],
                "annotations": {REVISION_ANNOTATION: revision.to_string()},
                "ownerReferences": [controller_reference(deployment, DEPLOYMENTS)],
            },
            "spec": {
                "replicas": plan.scale_up(0, old_total),
                "selector": selector,
                "template": template,
            },
        });
        let replicas = rs["spec"]["replicas"].as_u64().unwrap_or(0);
        let created = cp.create(REPLICASETS, rs)?;
        self.record_scaling(cp, now, deployment, &created, "up", replicas);
        Ok(())
    }

    /// One move of the rolling update: grow the new ReplicaSet, or else
    /// shrink the old ones, within the surge and availability bounds.
    fn roll(
        &mut self,
        cp: &ControlPlane,
        deployment: &Value,
        new: &Value,
        old: &[Arc<Value>],
        plan: &Rollout,
        now: Micros,
    ) -> Result<(), ApiError> {
        let new_replicas = replicas(new);
        let old_total: u64 = old.iter().map(|rs| replicas(rs)).sum();
        let target = if new_replicas > plan.desired {
            plan.desired
        } else {
            new_replicas + plan.scale_up(new_replicas, old_total)
        };
        if target != new_replicas {
            return self.scale(cp, deployment, new, target, now);
        }
        // Scale the old ReplicaSets down only as far as availability allows.
        let all_pods = (new_replicas + old_total) as i64;
        let min_available = plan.min_available() as i64;
        let new_unavailable = new_replicas.saturating_sub(available(new)) as i64;
        if all_pods - min_available - new_unavailable <= 0 {
            return Ok(());
        }
        // First the old replicas that are not available: removing them costs
        // no availability (up to the same bound).
        let mut cleanup = all_pods - min_available - new_unavailable;
        let mut planned: Vec<u64> = old.iter().map(|rs| replicas(rs)).collect();
        for (rs, planned) in old.iter().zip(&mut planned) {
            let unhealthy = planned.saturating_sub(available(rs)) as i64;
            let remove = unhealthy.min(cleanup).max(0);
            *planned -= remove as u64;
            cleanup -= remove;
        }
        // Then available ones, oldest ReplicaSet first, while enough stay available.
        let available_now =
            (available(new) + old.iter().map(|rs| available(rs)).sum::<u64>()) as i64;
        let mut may_remove = available_now - min_available;
        for planned in &mut planned {
            let remove = (*planned as i64).min(may_remove).max(0);
            *planned -= remove as u64;
            may_remove -= remove;
        }
        for (rs, planned) in old.iter().zip(planned) {
            if planned != replicas(rs) {
                self.scale(cp, deployment, rs, planned, now)?;
            }
        }
        Ok(())
    }

    /// Writes the Deployment's [`status`], and marks it with its current
    /// revision, as the deployment controller does (`kubectl rollout undo`
    /// patches that annotation).
    #[allow(clippy::too_many_arguments)]
    fn update_status(
        &self,
        cp: &ControlPlane,
        key: &str,
        deployment: &Value,
        new: Option<&Arc<Value>>,
        old: &[Arc<Value>],
        plan: &Rollout,
        now: Micros,
    ) -> Result<(), ApiError> {
        let status = status(deployment, new, old, plan, &crate::time::rfc3339(now));
        let revision = new.map(|rs| revision_of(rs)).filter(|r| *r > 0);
        let (ns, name) = split_key(key);
        update_if_changed(cp, DEPLOYMENTS, ns, name, |d| {
            d["status"] = status;
            if let Some(revision) = revision {
                if !d["metadata"]["annotations"].is_object() {
                    d["metadata"]["annotations"] = json!({});
                }
                d["metadata"]["annotations"][REVISION_ANNOTATION] = json!(revision.to_string());
            }
        })
        .map(drop)
    }

    /// Records on the Deployment that `rs` was scaled `direction` ("up" or
    /// "down") to `replicas`, as the deployment controller's
    /// `ScalingReplicaSet` events say.
    fn record_scaling(
        &mut self,
        cp: &ControlPlane,
        now: Micros,
        deployment: &Value,
        rs: &Value,
        direction: &str,
        replicas: u64,
    ) {
        let _ = self.events.record(
            cp,
            now,
            (DEPLOYMENTS, deployment),
            EventType::Normal,
            "ScalingReplicaSet",
            format!(
                "Scaled {direction} replica set {} to {replicas}",
                object::name(rs)
            ),
        );
    }
}

/// The Deployment's status as the deployment controller writes it at `at`:
/// the replica counts, `observedGeneration`, and the `Available` and
/// `Progressing` conditions (a condition's times change only when its status
/// or reason does, so an unchanged status writes nothing).
fn status(
    deployment: &Value,
    new: Option<&Arc<Value>>,
    old: &[Arc<Value>],
    plan: &Rollout,
    at: &str,
) -> Value {
    let all = new.into_iter().chain(old);
    let sum = |field: &str| -> u64 {
        all.clone()
            .map(|rs| rs["status"][field].as_u64().unwrap_or(0))
            .fold(0, u64::saturating_add)
    };
    let desired = plan.desired;
    let available = sum("availableReplicas");
    let updated = new.map_or(0, |rs| rs["status"]["replicas"].as_u64().unwrap_or(0));
    let total = sum("replicas");
    let new_name = new.map(|rs| object::name(rs)).unwrap_or_default();
    let minimum = desired.saturating_sub(plan.max_unavailable);
    let complete = updated == desired && total == desired && available == desired;
    let previous = &deployment["status"]["conditions"];
    let mut status = json!({
        "replicas": total,
        "updatedReplicas": updated,
        "readyReplicas": sum("readyReplicas"),
        "availableReplicas": available,
        "conditions": [
            condition(previous, at, "Available", availability(available >= minimum)),
            condition(previous, at, "Progressing", progress(complete, new_name)),
        ],
    });
    // The generation the apiserver gave the spec this sync read (one
    // created inside the demo, not through the API, has none).
    if let Some(generation) = deployment["metadata"]["generation"].as_u64() {
        status["observedGeneration"] = json!(generation);
    }
    let unavailable = desired.saturating_sub(available);
    if unavailable > 0 {
        status["unavailableReplicas"] = json!(unavailable);
    }
    status
}

/// A condition's status, reason and message.
type ConditionState = (&'static str, &'static str, String);

/// The `Available` condition: whether at least `maxUnavailable` below the
/// desired replicas are available.
fn availability(minimum_available: bool) -> ConditionState {
    if minimum_available {
        (
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.".to_string(),
        )
    } else {
        (
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.".to_string(),
        )
    }
}

/// The `Progressing` condition: the new ReplicaSet's rollout, done or not.
fn progress(complete: bool, new_name: &str) -> ConditionState {
    if complete {
        (
            "True",
            "NewReplicaSetAvailable",
            format!("ReplicaSet \"{new_name}\" has successfully progressed."),
        )
    } else {
        (
            "True",
            "ReplicaSetUpdated",
            format!("ReplicaSet \"{new_name}\" is progressing."),
        )
    }
}

/// The condition `kind` in state `(status, reason, message)` at `at`; its
/// times are those of the same condition in `previous` while its status and
/// reason stay the same.
fn condition(
    previous: &Value,
    at: &str,
    kind: &str,
    (status, reason, message): ConditionState,
) -> Value {
    let old = previous
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == kind);
    let same = old.is_some_and(|c| c["status"] == status && c["reason"] == reason);
    let kept = |field: &str| match old {
        Some(c) if same => c[field].clone(),
        _ => json!(at),
    };
    json!({
        "type": kind,
        "status": status,
        "lastUpdateTime": kept("lastUpdateTime"),
        "lastTransitionTime": kept("lastTransitionTime"),
        "reason": reason,
        "message": message,
    })
}

/// The numbers of a rolling update for one Deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rollout {
    desired: u64,
    max_surge: u64,
    max_unavailable: u64,
}

impl Rollout {
    fn new(deployment: &Value) -> Self {
        let desired = deployment["spec"]["replicas"]
            .as_u64()
            .unwrap_or(1)
            .min(INT32_MAX);
        let rolling = &deployment["spec"]["strategy"]["rollingUpdate"];
        let max_surge = bound(&rolling["maxSurge"], desired, true);
        let mut max_unavailable = bound(&rolling["maxUnavailable"], desired, false);
        // Both zero would never move: Kubernetes then allows one unavailable.
        if max_surge == 0 && max_unavailable == 0 {
            max_unavailable = 1;
        }
        Rollout {
            desired,
            max_surge,
            max_unavailable,
        }
    }

    fn min_available(&self) -> u64 {
        self.desired.saturating_sub(self.max_unavailable)
    }

    /// How many replicas the new ReplicaSet may gain now.
    fn scale_up(&self, new_replicas: u64, old_total: u64) -> u64 {
        let room = (self.desired.saturating_add(self.max_surge))
            .saturating_sub(new_replicas.saturating_add(old_total));
        room.min(self.desired.saturating_sub(new_replicas))
    }
}

/// `maxSurge`/`maxUnavailable`: a count, or a percentage of the desired
/// replicas (rounded up for surge, down for unavailability).
fn bound(value: &Value, desired: u64, round_up: bool) -> u64 {
    let percent = match value {
        Value::Number(n) => return n.as_u64().unwrap_or(0),
        Value::String(s) => s.strip_suffix('%').and_then(|p| p.parse::<u64>().ok()),
        _ => None,
    }
    .unwrap_or(DEFAULT_ROLLING_PERCENT);
    // A client may write any percentage: saturate rather than overflow.
    let scaled = desired.saturating_mul(percent);
    if round_up {
        scaled.div_ceil(100)
    } else {
        scaled / 100
    }
}

/// Replicas are an `int32` in Kubernetes. Counts read from objects are held
/// to it, so the sums of a rollout cannot overflow whatever a client wrote.
const INT32_MAX: u64 = i32::MAX as u64;

/// `spec.replicas`, at most [`INT32_MAX`].
fn replicas(rs: &Value) -> u64 {
    rs["spec"]["replicas"].as_u64().unwrap_or(0).min(INT32_MAX)
}

/// `status.availableReplicas`, at most the ReplicaSet's replicas.
fn available(rs: &Value) -> u64 {
    rs["status"]["availableReplicas"]
        .as_u64()
        .unwrap_or(0)
        .min(replicas(rs))
}

fn revision_of(rs: &Value) -> u64 {
    object::field(rs, &["metadata", "annotations", REVISION_ANNOTATION])
        .and_then(Value::as_str)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

fn scale(cp: &ControlPlane, rs: &Value, replicas: u64) -> Result<(), ApiError> {
    let (ns, name) = (object::namespace(rs), object::name(rs));
    update_if_changed(cp, REPLICASETS, ns, name, |rs| {
        rs["spec"]["replicas"] = json!(replicas)
    })
    .map(drop)
}

/// The key of a Deployment's ReplicaSet for `hash` (for tests and the UI).
pub fn replicaset_key(deployment: &Value, hash: &str) -> String {
    format!("{}-{hash}", key_of(deployment))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rollout_bounds_follow_the_kubernetes_defaults() {
        let d = |replicas: u64| json!({"spec": {"replicas": replicas}});
        let r = Rollout::new(&d(4));
        assert_eq!((r.max_surge, r.max_unavailable), (1, 1));
        let r = Rollout::new(&d(2));
        assert_eq!((r.max_surge, r.max_unavailable), (1, 0));
        assert_eq!(r.scale_up(0, 2), 1, "one above desired while the old run");
        assert_eq!(r.scale_up(0, 0), 2, "nothing old: all at once");
        let explicit = json!({"spec": {"replicas": 10, "strategy": {"rollingUpdate": {"maxSurge": 3, "maxUnavailable": "50%"}}}});
        let r = Rollout::new(&explicit);
        assert_eq!((r.max_surge, r.max_unavailable), (3, 5));
        let zero = json!({"spec": {"replicas": 1, "strategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}}});
        assert_eq!(Rollout::new(&zero).max_unavailable, 1);
    }
}
