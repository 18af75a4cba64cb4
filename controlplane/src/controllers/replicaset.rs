//! The replicaset controller: ReplicaSet → Pods.
//!
//! Keeps `spec.replicas` pods alive for each ReplicaSet, creating pods from
//! its template (`web-5d9c8bf7b4-x2kqn`, owned by the ReplicaSet) and deleting
//! the least useful ones when there are too many, and reports how many exist
//! and are ready in `status`.

use super::controller::{Action, Activity, Context, Controller, Reconciler};
use super::events::{EventType, Recorder};
use super::informer::Informer;
use super::names;
use super::owner::{controller_reference, uid};
use crate::api_error::ApiError;
use crate::control_plane::ControlPlane;
use crate::object;
use crate::resource::{PODS, REPLICASETS};
use crate::update::update_if_changed;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use watchlife_protocol::Micros;

/// Name of the controller, and of its watches.
pub const NAME: &str = "replicaset-controller";

/// Pods one sync creates or deletes at most (the real controller's
/// `burstReplicas` is 500). Kept below a watcher's buffer so that one sync
/// never overflows the informers that watch pods; a larger scale-up simply
/// takes a few syncs.
pub const BURST_REPLICAS: usize = 25;

/// How long the controller waits to see its own writes before it acts on its
/// cache again regardless. client-go's `ExpectationsTimeout` is 5 minutes; the
/// demo's writes reach its informers in milliseconds.
pub const EXPECTATIONS_TIMEOUT_MICROS: Micros = 5_000_000;

/// Pods one ReplicaSet's syncs created or deleted that the pod informer has
/// not shown yet (client-go's `ControllerExpectations`, by name).
#[derive(Debug, Default)]
struct Expectations {
    creates: HashSet<String>,
    deletes: HashSet<String>,
    until: Micros,
}

/// Watches ReplicaSets and Pods; syncs one ReplicaSet per key.
///
/// Like the real controller, it keeps "expectations": after creating or
/// deleting pods for a ReplicaSet it does not create or delete more for it
/// until its informer has shown those writes (or
/// [`EXPECTATIONS_TIMEOUT_MICROS`] passed), so a cache that lags behind its
/// own writes never makes it create a pod twice.
#[derive(Debug)]
pub struct ReplicaSetController {
    controller: Controller,
    replicas: Replicas,
}

impl Default for ReplicaSetController {
    fn default() -> Self {
        ReplicaSetController::new()
    }
}

impl ReplicaSetController {
    pub fn new() -> Self {
        ReplicaSetController {
            controller: Controller::new(Informer::new(REPLICASETS, NAME))
                .owns(Informer::new(PODS, NAME), REPLICASETS.kind),
            replicas: Replicas {
                created: 0,
                events: Recorder::new(NAME, None),
                expectations: HashMap::new(),
            },
        }
    }

    /// Drains both informers, then syncs the ReplicaSets queued; returns when
    /// it next wants to run (see [`Activity`]).
    pub fn step(&mut self, cp: &ControlPlane, now: Micros) -> Activity {
        self.controller.step(cp, now, &mut self.replicas)
    }
}

/// What a sync of one ReplicaSet does: its pods, and what it expects to see
/// of its own writes.
#[derive(Debug)]
struct Replicas {
    /// Counts the pods created, to derive their names.
    created: u64,
    events: Recorder,
    expectations: HashMap<String, Expectations>,
}

impl Reconciler for Replicas {
    fn reconcile(&mut self, ctx: &mut Context<'_>, key: &str) -> Result<Action, ApiError> {
        let Some(rs) = ctx.cache(REPLICASETS).get(key).cloned() else {
            // Deleted: its pods are the garbage collector's.
            return Ok(Action::Done);
        };
        let pods = ctx.cache(PODS);
        let mut active: Vec<Arc<Value>> = pods
            .controlled_by(uid(&rs))
            .filter(|p| is_active(p))
            .cloned()
            .collect();
        let satisfied = self.expectations_met(pods, key, &rs, ctx.now);
        if let Some(e) = self.expectations.get(key) {
            // Look again once they expire, should the informer never show
            // the writes (its own events for the pods requeue it sooner).
            ctx.queue_at(key, e.until);
        }
        let mut result = Ok(());
        if satisfied && !object::is_deleting(&rs) {
            result = self.scale(ctx, key, &rs, &mut active);
        }
        // Status reports the pods as this sync found them; the next sync,
        // woken by the pods' own events, reports the change it made.
        let ready = active.iter().filter(|p| is_ready(p)).count();
        let mut status = json!({
            "replicas": active.len(),
            "fullyLabeledReplicas": active.len(),
            "readyReplicas": ready,
            "availableReplicas": ready,
        });
        if let Some(generation) = rs["metadata"]["generation"].as_u64() {
            status["observedGeneration"] = json!(generation);
        }
        let (ns, name) = (object::namespace(&rs), object::name(&rs));
        update_if_changed(ctx.cp, REPLICASETS, ns, name, |rs| rs["status"] = status)?;
        result.map(|()| Action::Done)
    }
}

impl Replicas {
    /// Whether the ReplicaSet under `key` may create or delete pods: the
    /// pod informer has shown every write it expected (those it showed are
    /// forgotten), or they expired.
    fn expectations_met(&mut self, pods: &Informer, key: &str, rs: &Value, now: Micros) -> bool {
        let ns = object::namespace(rs).unwrap_or("");
        if let Some(e) = self.expectations.get_mut(key) {
            e.creates
                .retain(|name| pods.get(&format!("{ns}/{name}")).is_none());
            e.deletes.retain(|name| {
                pods.get(&format!("{ns}/{name}"))
                    .is_some_and(|p| !object::is_deleting(p))
            });
            if (e.creates.is_empty() && e.deletes.is_empty()) || now >= e.until {
                self.expectations.remove(key);
            }
        }
        !self.expectations.contains_key(key)
    }

    /// Creates or deletes pods towards `spec.replicas`, at most
    /// [`BURST_REPLICAS`] of them; `active` are the ReplicaSet's pods.
    fn scale(
        &mut self,
        ctx: &Context<'_>,
        key: &str,
        rs: &Value,
        active: &mut [Arc<Value>],
    ) -> Result<(), ApiError> {
        let desired = rs["spec"]["replicas"].as_u64().unwrap_or(1) as usize;
        if active.len() < desired {
            for _ in 0..(desired - active.len()).min(BURST_REPLICAS) {
                let name = self.create_pod(ctx.cp, rs, ctx.now)?;
                self.expect(key, ctx.now).creates.insert(name);
            }
            return Ok(());
        }
        let mut result = Ok(());
        if active.len() > desired {
            active.sort_by_key(deletion_rank);
            let surplus = (active.len() - desired).min(BURST_REPLICAS);
            for pod in active.iter().take(surplus) {
                if let Err(e) = self.delete_pod(ctx, key, rs, pod) {
                    result = Err(e);
                }
            }
        }
        result
    }

    /// Deletes one of `rs`'s pods (gracefully); one already gone is no error.
    fn delete_pod(
        &mut self,
        ctx: &Context<'_>,
        key: &str,
        rs: &Value,
        pod: &Value,
    ) -> Result<(), ApiError> {
        let (ns, name) = (object::namespace(pod), object::name(pod));
        match ctx.cp.delete_gracefully(PODS, ns, name, None) {
            Ok(_) => {
                self.expect(key, ctx.now).deletes.insert(name.to_string());
                let _ = self.events.record(
                    ctx.cp,
                    ctx.now,
                    (REPLICASETS, rs),
                    EventType::Normal,
                    "SuccessfulDelete",
                    format!("Deleted pod: {name}"),
                );
                Ok(())
            }
            Err(ApiError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The expectations of a ReplicaSet, renewed for another timeout.
    fn expect(&mut self, key: &str, now: Micros) -> &mut Expectations {
        let e = self.expectations.entry(key.to_string()).or_default();
        e.until = now + EXPECTATIONS_TIMEOUT_MICROS;
        e
    }

    /// Creates one pod for `rs`; returns its name.
    fn create_pod(
        &mut self,
        cp: &ControlPlane,
        rs: &Value,
        now: Micros,
    ) -> Result<String, ApiError> {
        let template = &rs["spec"]["template"];
        loop {
            self.created += 1;
            let name = format!(
                "{}-{}",
                object::name(rs),
                names::pod_suffix(object::name(rs), self.created)
            );
            let pod = json!({
                "metadata": {
                    "name": name,
                    "namespace": object::namespace(rs),
                    "labels": template["metadata"]["labels"],
                    "ownerReferences": [controller_reference(rs, REPLICASETS)],
                },
                "spec": template["spec"],
                // What the apiserver sets on every new pod.
                "status": {"phase": "Pending"},
            });
            match cp.create(PODS, pod) {
                // A name already taken (rare): draw the next one.
                Err(ApiError::AlreadyExists { .. }) => continue,
                Ok(_) => {
                    let _ = self.events.record(
                        cp,
                        now,
                        (REPLICASETS, rs),
                        EventType::Normal,
                        "SuccessfulCreate",
                        format!("Created pod: {name}"),
                    );
                    return Ok(name);
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// A pod that counts towards its ReplicaSet: not finished, not being deleted.
pub fn is_active(pod: &Value) -> bool {
    !object::is_deleting(pod)
        && !matches!(
            pod["status"]["phase"].as_str(),
            Some("Succeeded" | "Failed")
        )
}

/// Whether the pod's Ready condition is True.
pub fn is_ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

/// Which pods go first when there are too many, as the real controller ranks
/// them: unscheduled before scheduled, pending before running, not ready
/// before ready, then the newest first.
fn deletion_rank(pod: &Arc<Value>) -> (bool, u8, bool, std::cmp::Reverse<(String, String)>) {
    let scheduled = pod["spec"]["nodeName"]
        .as_str()
        .is_some_and(|n| !n.is_empty());
    let phase = match pod["status"]["phase"].as_str() {
        Some("Pending") | None => 0,
        Some("Running") => 2,
        _ => 1,
    };
    let created = pod["metadata"]["creationTimestamp"]
        .as_str()
        .unwrap_or("")
        .to_string();
    (
        scheduled,
        phase,
        is_ready(pod),
        // uids are handed out in creation order: the tie-breaker within a second.
        std::cmp::Reverse((created, uid(pod).to_string())),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Clock;

    impl ReplicaSetController {
        /// Syncs the ReplicaSet under `key` at once, outside its queue.
        fn sync(&mut self, cp: &ControlPlane, key: &str, now: Micros) {
            let mut ctx = self.controller.context(cp, now);
            assert_eq!(self.replicas.reconcile(&mut ctx, key), Ok(Action::Done));
        }
    }

    #[test]
    fn a_cache_behind_its_own_writes_never_makes_it_create_a_pod_twice() {
        let cp = ControlPlane::new(Clock::new(|| 1_000_000));
        let rs = json!({
            "metadata": {"name": "web-1", "namespace": "default"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                             "spec": {"containers": [{"name": "web", "image": "nginx"}]}}
            }
        });
        cp.create(REPLICASETS, rs).unwrap();
        let mut c = ReplicaSetController::new();
        c.step(&cp, 1_000_000);
        // Its informers have not seen the two pods it just created: a second
        // sync must not create two more.
        c.sync(&cp, "default/web-1", 1_000_001);
        assert_eq!(cp.list(PODS, None).0.len(), 2);
        // Once the informer shows them, all is as expected.
        c.step(&cp, 1_000_002);
        assert!(c.replicas.expectations.is_empty());
        assert_eq!(cp.list(PODS, None).0.len(), 2);
        // And if it never does, the controller acts again after the timeout.
        c.replicas
            .expect("default/web-1", 1_000_002)
            .creates
            .insert("ghost".into());
        c.sync(
            &cp,
            "default/web-1",
            1_000_002 + EXPECTATIONS_TIMEOUT_MICROS,
        );
        assert!(c.replicas.expectations.is_empty());
    }
}
