//! The mini kubelet: one per node.
//!
//! It registers its Node, watches the pods bound to it (the real kubelet's
//! `spec.nodeName=<node>` field selector), starts them (Pending → Running,
//! Ready), and finishes their deletion: a pod marked with a
//! `deletionTimestamp` is stopped and then deleted for good, which is the
//! DELETED event every watcher sees.

use super::controller::{Action, Activity, Context, Controller, Reconciler};
use super::events::{EventType, Recorder};
use super::informer::{Informer, split_key};
use crate::api_error::ApiError;
use crate::control_plane::ControlPlane;
use crate::limits::NODE_MAX_PODS;
use crate::resource::{NODES, PODS};
use crate::selector::{FieldOp, FieldRequirement, FieldSelector};
use crate::update::update_if_changed;
use crate::watch_cache::WatchFilter;
use serde_json::{Value, json};
use std::collections::HashMap;
use watchlife_protocol::Micros;

/// The version the demo's kubelets report (`kubectl get nodes`): the
/// demo API's own.
pub const KUBELET_VERSION: &str = "v1.32.0-watchlife";

/// Time from a pod landing on the node to its containers running: a real
/// kubelet takes a second or more to pull and start; half a second keeps the
/// demo brisk while leaving Pending visible.
pub const START_MICROS: Micros = 500_000;

/// Time from a pod being marked for deletion to the kubelet deleting it: its
/// containers stopping (nginx stops at once; the grace period is only the
/// upper bound).
pub const STOP_MICROS: Micros = 800_000;

/// How soon a kubelet that could not register its node tries again.
pub const REGISTER_RETRY_MICROS: Micros = 1_000_000;

/// What the kubelet is doing to a pod, and when it will be done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Work {
    Starting(Micros),
    Stopping(Micros),
}

/// The kubelet of one node.
#[derive(Debug)]
pub struct Kubelet {
    controller: Controller,
    pods: NodePods,
    registered: bool,
}

impl Kubelet {
    /// The kubelet of node `node`; `index` (0, 1, ...) numbers its addresses.
    pub fn new(node: &str, index: u8) -> Self {
        let pods = Informer::new(PODS, format!("kubelet/{node}")).with_filter(pods_on(node));
        Kubelet {
            controller: Controller::new(pods).working_before_sync(),
            pods: NodePods {
                node: node.to_string(),
                index,
                work: HashMap::new(),
                started: 0,
                events: Recorder::new("kubelet", Some(node)),
            },
            registered: false,
        }
    }

    pub fn node(&self) -> &str {
        &self.pods.node
    }

    /// Registers the node if needed, drains the informer, and moves the pods
    /// whose time has come; returns when it next wants to run (see [`Activity`]).
    pub fn step(&mut self, cp: &ControlPlane, now: Micros) -> Activity {
        let mut registering = 0;
        if !self.registered {
            self.registered = self.pods.register(cp).is_ok();
            registering = 1;
        }
        let mut activity = self.controller.step(cp, now, &mut self.pods);
        activity.synced += registering;
        if !self.registered {
            activity.next = Some(now + REGISTER_RETRY_MICROS);
        }
        activity
    }
}

/// What the kubelet does with the pods bound to its node.
#[derive(Debug)]
struct NodePods {
    node: String,
    /// The node's number, for its addresses.
    index: u8,
    work: HashMap<String, Work>,
    started: u64,
    events: Recorder,
}

impl Reconciler for NodePods {
    fn reconcile(&mut self, ctx: &mut Context<'_>, key: &str) -> Result<Action, ApiError> {
        self.sync(ctx, key).map(|()| Action::Done)
    }
}

impl NodePods {
    /// Creates this node's Node object, as a kubelet does when it starts.
    fn register(&self, cp: &ControlPlane) -> Result<(), ApiError> {
        let node = json!({
            "metadata": {
                "name": self.node,
                "labels": {
                    "kubernetes.io/hostname": self.node,
                    "kubernetes.io/os": "linux",
                },
            },
            "status": {
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                "addresses": [{"type": "InternalIP", "address": format!("10.0.0.{}", 10 + u32::from(self.index))}],
                "capacity": {"pods": NODE_MAX_PODS.to_string()},
                "allocatable": {"pods": NODE_MAX_PODS.to_string()},
                "nodeInfo": {
                    "kubeletVersion": KUBELET_VERSION,
                    "operatingSystem": "linux",
                    "architecture": "amd64",
                    "containerRuntimeVersion": "",
                },
            },
        });
        match cp.create(NODES, node) {
            Ok(_) | Err(ApiError::AlreadyExists { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn sync(&mut self, ctx: &mut Context<'_>, key: &str) -> Result<(), ApiError> {
        let (cp, now) = (ctx.cp, ctx.now);
        let Some(pod) = ctx.cache(PODS).get(key).cloned() else {
            self.work.remove(key);
            return Ok(());
        };
        let wanted = if crate::object::is_deleting(&pod) {
            Work::Stopping(now + STOP_MICROS)
        } else if pod["status"]["phase"] != "Running" {
            Work::Starting(now + START_MICROS)
        } else {
            self.work.remove(key);
            return Ok(());
        };
        // Keep the work under way if it is the same kind; start it otherwise.
        let work = match (self.work.get(key), wanted) {
            (Some(w @ Work::Starting(_)), Work::Starting(_))
            | (Some(w @ Work::Stopping(_)), Work::Stopping(_)) => *w,
            (_, Work::Stopping(_)) => {
                // The kubelet starts stopping the containers at once.
                for c in containers(&pod) {
                    let _ = self.events.record(
                        cp,
                        now,
                        (PODS, &pod),
                        EventType::Normal,
                        "Killing",
                        format!("Stopping container {}", c.0),
                    );
                }
                wanted
            }
            _ => wanted,
        };
        self.work.insert(key.to_string(), work);
        let (Work::Starting(done) | Work::Stopping(done)) = work;
        if now < done {
            ctx.queue_at(key, done);
            return Ok(());
        }
        self.work.remove(key);
        let (ns, name) = split_key(key);
        match work {
            Work::Starting(_) => self.run(cp, ctx.cache(PODS), ns, name, now),
            Work::Stopping(_) => match cp.delete_gracefully(PODS, ns, name, Some(0)) {
                Ok(_) | Err(ApiError::NotFound { .. }) => Ok(()),
                Err(e) => Err(e),
            },
        }
    }

    /// Reports the pod's containers running and ready.
    fn run(
        &mut self,
        cp: &ControlPlane,
        pods: &Informer,
        ns: Option<&str>,
        name: &str,
        now: Micros,
    ) -> Result<(), ApiError> {
        self.started += 1;
        let at = crate::time::rfc3339(now);
        if let Some(pod) = pods.get(&format!("{}/{name}", ns.unwrap_or(""))).cloned() {
            for (container, image) in containers(&pod) {
                for (reason, message) in [
                    (
                        "Pulled",
                        format!("Container image \"{image}\" already present on machine"),
                    ),
                    ("Created", format!("Created container {container}")),
                    ("Started", format!("Started container {container}")),
                ] {
                    let _ = self.events.record(
                        cp,
                        now,
                        (PODS, &pod),
                        EventType::Normal,
                        reason,
                        message,
                    );
                }
            }
        }
        let host_ip = format!("10.0.0.{}", 10 + u32::from(self.index));
        let pod_ip = format!("10.244.{}.{}", self.index, 2 + self.started % 250);
        update_if_changed(cp, PODS, ns, name, |pod| {
            if crate::object::is_deleting(pod) {
                return;
            }
            let containers: Vec<Value> = pod["spec"]["containers"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    json!({
                        "name": c["name"],
                        "image": c["image"],
                        "ready": true,
                        "started": true,
                        "restartCount": 0,
                        "state": {"running": {"startedAt": at}},
                    })
                })
                .collect();
            let condition =
                |kind: &str| json!({"type": kind, "status": "True", "lastTransitionTime": at});
            pod["status"] = json!({
                "phase": "Running",
                "hostIP": host_ip,
                "podIP": pod_ip,
                "startTime": at,
                "conditions": [
                    condition("Initialized"),
                    condition("Ready"),
                    condition("ContainersReady"),
                    condition("PodScheduled"),
                ],
                "containerStatuses": containers,
            });
        })
        .map(drop)
    }
}

/// A pod's containers: (name, image).
fn containers(pod: &Value) -> Vec<(String, String)> {
    pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c["name"].as_str().unwrap_or("").to_string(),
                c["image"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// The kubelet's selection: `fieldSelector=spec.nodeName=<node>`.
pub fn pods_on(node: &str) -> WatchFilter {
    WatchFilter {
        fields: FieldSelector {
            requirements: vec![FieldRequirement {
                field: "spec.nodeName".into(),
                op: FieldOp::Equals,
                value: node.into(),
            }],
        },
        ..WatchFilter::default()
    }
}
