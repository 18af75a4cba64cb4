//! The deployment controller: Deployment → ReplicaSets.
//!
//! Each pod template gets its own ReplicaSet, named after the template's hash
//! (`web-5d9c8bf7b4`) and owned by the Deployment. When the template changes
//! (a new image), a new ReplicaSet is created and the rolling update moves
//! replicas from the old ones to it, never more than `maxSurge` above the
//! desired count, never more than `maxUnavailable` below it.

use super::events::{EventType, Recorder};
use super::informer::{Informer, Notification, key_of, split_key};
use super::owner::{controller_of, controller_reference, uid};
use super::{Activity, names, update_if_changed};
use crate::control_plane::{ApiError, ControlPlane};
use crate::object;
use crate::resource::{DEPLOYMENTS, REPLICASETS};
use serde_json::{Value, json};
use std::sync::Arc;
use watchlife_informer::workqueue::Workqueue;
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
    deployments: Informer,
    replicasets: Informer,
    queue: Workqueue,
    events: Recorder,
}

impl Default for DeploymentController {
    fn default() -> Self {
        DeploymentController::new()
    }
}

impl DeploymentController {
    pub fn new() -> Self {
        DeploymentController {
            deployments: Informer::new(DEPLOYMENTS, NAME),
            replicasets: Informer::new(REPLICASETS, NAME),
            queue: super::workqueue(),
            events: Recorder::new(NAME, None),
        }
    }

    /// Drains both informers, then syncs the Deployments queued; returns when
    /// it next wants to run (see [`Activity`]).
    pub fn step(&mut self, cp: &ControlPlane, now: Micros) -> Activity {
        let mut activity = Activity::default();
        for n in self.deployments.poll(cp) {
            activity.noticed += 1;
            self.queue.add(&n.key(), []);
        }
        for n in self.replicasets.poll(cp) {
            activity.noticed += 1;
            self.enqueue_owner(&n);
        }
        if !self.deployments.has_synced() || !self.replicasets.has_synced() {
            return activity;
        }
        for _ in 0..self.queue.ready(now) {
            let Some((key, _)) = self.queue.get(now) else {
                break;
            };
            activity.synced += 1;
            match self.sync(cp, &key, now) {
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

    /// A ReplicaSet changed: its Deployment (before and after, if the owner
    /// changed) has work to do.
    fn enqueue_owner(&mut self, n: &Notification) {
        let mut objects = vec![n.object().clone()];
        if let Notification::Updated { old, .. } = n {
            objects.push(old.clone());
        }
        for obj in objects {
            if let (Some(owner), Some(ns)) = (
                controller_of(&obj, DEPLOYMENTS.kind),
                object::namespace(&obj),
            ) {
                self.queue.add(&format!("{ns}/{}", owner.name), []);
            }
        }
    }

    fn sync(&mut self, cp: &ControlPlane, key: &str, now: Micros) -> Result<(), ApiError> {
        let Some(deployment) = self.deployments.get(key).cloned() else {
            // Deleted: its ReplicaSets are the garbage collector's.
            return Ok(());
        };
        if object::is_deleting(&deployment) {
            return Ok(());
        }
        let owner_uid = uid(&deployment).to_string();
        let mut owned: Vec<Arc<Value>> = self
            .replicasets
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
        let _ = self.events.record(
            cp,
            now,
            (DEPLOYMENTS, deployment),
            EventType::Normal,
            "ScalingReplicaSet",
            format!(
                "Scaled up replica set {} to {replicas}",
                object::name(&created)
            ),
        );
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

    /// The Deployment's status as the deployment controller writes it: the
    /// replica counts, `observedGeneration`, and the `Available` and
    /// `Progressing` conditions (a condition's times change only when its
    /// status or reason does, so an unchanged status writes nothing).
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
        let all = new.into_iter().chain(old);
        let sum = |field: &str| -> u64 {
            all.clone()
                .map(|rs| rs["status"][field].as_u64().unwrap_or(0))
                .fold(0, u64::saturating_add)
        };
        let desired = Rollout::new(deployment).desired;
        let available = sum("availableReplicas");
        let updated = new.map_or(0, |rs| rs["status"]["replicas"].as_u64().unwrap_or(0));
        let total = sum("replicas");
        let at = crate::time::rfc3339(now);
        let new_name = new
            .map(|rs| object::name(rs).to_string())
            .unwrap_or_default();
        let minimum = desired.saturating_sub(plan.max_unavailable);
        let available_condition = if available >= minimum {
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
        };
        let complete = updated == desired && total == desired && available == desired;
        let progressing = if complete {
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
        };
        let previous = deployment["status"]["conditions"].clone();
        let condition = |kind: &str, (status, reason, message): (&str, &str, String)| {
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
        };
        let mut status = json!({
            "replicas": total,
            "updatedReplicas": updated,
            "readyReplicas": sum("readyReplicas"),
            "availableReplicas": available,
            "conditions": [
                condition("Available", available_condition),
                condition("Progressing", progressing),
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
        // The deployment controller also marks the Deployment with its
        // current revision (`kubectl rollout undo` patches that annotation).
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
