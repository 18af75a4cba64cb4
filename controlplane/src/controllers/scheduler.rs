//! The mini scheduler, as the talk draws it.
//!
//! It watches nodes and pods. Its pod informer feeds two filtering handlers:
//! pods with no node (`spec.nodeName` empty) go to its scheduling queue, pods
//! with a node go to its cache of scheduled pods. It takes pods from the queue
//! one by one, picks the node with the fewest pods, and binds the pod to it;
//! the binding comes back through the watch as an update that moves the pod
//! from the queue's handler to the cache's.

use super::controller::{Action, Activity, Context, Controller, Reconciler};
use super::events::{EventType, Recorder};
use super::handler::Filter;
use super::informer::{Informer, Notification, key_of, split_key};
use super::replicaset::is_active;
use crate::api_error::ApiError;
use crate::control_plane::ControlPlane;
use crate::limits::NODE_MAX_PODS;
use crate::resource::{NODES, PODS, ResourceType};
use crate::update::update_if_changed;
use serde_json::{Value, json};
use std::collections::{BTreeMap, VecDeque};
use watchlife_protocol::Micros;

/// Name of the scheduler, and of its watches.
pub const NAME: &str = "scheduler";

/// How long a pod waits in the queue when no node is ready before it is
/// tried again (the real scheduler's unschedulable pods wait up to 5 minutes,
/// or until a node event; a demo node appears within moments).
pub const NO_NODE_RETRY_MICROS: Micros = 500_000;

/// Handler decisions the scheduler remembers for the UI.
pub const HANDLER_LOG_LEN: usize = 64;

/// Pods with no node: the scheduling queue's handler.
pub const UNSCHEDULED: Filter = Filter {
    name: "scheduling-queue",
    accepts: |pod| !is_scheduled(pod),
};

/// Pods with a node: the scheduler cache's handler.
pub const SCHEDULED: Filter = Filter {
    name: "scheduler-cache",
    accepts: is_scheduled,
};

/// Whether the pod is bound to a node.
pub fn is_scheduled(pod: &Value) -> bool {
    pod["spec"]["nodeName"]
        .as_str()
        .is_some_and(|n| !n.is_empty())
}

/// What a handler did with a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandlerAction {
    Add,
    Update,
    Delete,
}

/// One pod notification, and the handler that took it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandlerRecord {
    /// `namespace/name` of the pod.
    pub pod: String,
    /// [`UNSCHEDULED`]'s or [`SCHEDULED`]'s name.
    pub handler: &'static str,
    pub action: HandlerAction,
    /// The pod's resourceVersion at that moment.
    pub resource_version: String,
}

/// How the filtering handlers split the pods: totals per handler and the
/// latest decisions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HandlerSplit {
    pub to_queue: u64,
    pub to_cache: u64,
    /// The last [`HANDLER_LOG_LEN`] decisions, oldest first.
    pub recent: VecDeque<HandlerRecord>,
}

impl HandlerSplit {
    fn record(&mut self, filter: &Filter, n: &Notification) {
        if filter.name == UNSCHEDULED.name {
            self.to_queue += 1;
        } else {
            self.to_cache += 1;
        }
        if self.recent.len() == HANDLER_LOG_LEN {
            self.recent.pop_front();
        }
        self.recent.push_back(HandlerRecord {
            pod: n.key(),
            handler: filter.name,
            action: match n {
                Notification::Added(_) => HandlerAction::Add,
                Notification::Updated { .. } => HandlerAction::Update,
                Notification::Deleted(_) => HandlerAction::Delete,
            },
            resource_version: crate::object::resource_version(n.object())
                .unwrap_or_default()
                .to_string(),
        });
    }
}

/// The mini scheduler.
///
/// Contract of its two handlers (those of client-go's filtering handler): for
/// each pod notification, at most one of them fires, except when a pod moves
/// across (bound): the queue's handler sees it deleted and the cache's sees
/// it added, in that order.
#[derive(Debug)]
pub struct Scheduler {
    /// Its queue is the scheduling queue: unscheduled pods waiting for a
    /// node.
    controller: Controller,
    binder: Binder,
}

impl Default for Scheduler {
    fn default() -> Self {
        Scheduler::new()
    }
}

impl Scheduler {
    pub fn new() -> Self {
        Scheduler {
            controller: Controller::default()
                .reads(Informer::new(NODES, NAME))
                .watches(Informer::new(PODS, NAME)),
            binder: Binder {
                cache: BTreeMap::new(),
                turn: 0,
                split: HandlerSplit::default(),
                events: Recorder::new("default-scheduler", None),
            },
        }
    }

    /// How the filtering handlers have split the pods so far.
    pub fn split(&self) -> &HandlerSplit {
        &self.binder.split
    }

    /// Scheduled pods by node, as the scheduler's cache holds them.
    pub fn pods_per_node(&self) -> BTreeMap<String, usize> {
        pods_per_node(self.controller.cache(NODES), &self.binder.cache)
    }

    /// Drains the informers through the handlers, then schedules the queued
    /// pods; returns when it next wants to run (see [`Activity`]).
    pub fn step(&mut self, cp: &ControlPlane, now: Micros) -> Activity {
        self.controller.step(cp, now, &mut self.binder)
    }
}

/// What the scheduler does with pods: its two handlers, and the binding of
/// each queued pod.
#[derive(Debug)]
struct Binder {
    /// The scheduler cache: scheduled pods and their nodes, including pods it
    /// has bound but not yet seen bound ("assumed", as the real one says).
    cache: BTreeMap<String, String>,
    /// Where the last tie between equally loaded nodes was broken.
    turn: usize,
    split: HandlerSplit,
    events: Recorder,
}

impl Reconciler for Binder {
    fn notified(&mut self, ctx: &mut Context<'_>, _from: ResourceType, n: &Notification) {
        for filter in [UNSCHEDULED, SCHEDULED] {
            if let Some(filtered) = filter.filter(n) {
                self.split.record(&filter, &filtered);
                if filter.name == UNSCHEDULED.name {
                    on_unscheduled(ctx, &filtered);
                } else {
                    self.on_scheduled(&filtered);
                }
            }
        }
    }

    fn reconcile(&mut self, ctx: &mut Context<'_>, key: &str) -> Result<Action, ApiError> {
        match self.schedule_one(ctx, key)? {
            true => Ok(Action::Done),
            false => Ok(Action::RetryAt(ctx.now + NO_NODE_RETRY_MICROS)),
        }
    }
}

/// The scheduling queue's handler.
fn on_unscheduled(ctx: &mut Context<'_>, n: &Notification) {
    match n {
        Notification::Added(_) | Notification::Updated { .. } => ctx.queue(&n.key()),
        // Bound, or gone: a stale key in the queue is skipped when popped.
        Notification::Deleted(_) => {}
    }
}

/// Scheduled pods by node: every node of `nodes`, and the pods `cache` puts
/// on each.
fn pods_per_node(nodes: &Informer, cache: &BTreeMap<String, String>) -> BTreeMap<String, usize> {
    let mut counts: BTreeMap<String, usize> = nodes
        .list()
        .map(|n| (crate::object::name(n).to_string(), 0))
        .collect();
    for node in cache.values() {
        *counts.entry(node.clone()).or_default() += 1;
    }
    counts
}

impl Binder {
    /// The scheduler cache's handler.
    fn on_scheduled(&mut self, n: &Notification) {
        match n {
            Notification::Added(pod) | Notification::Updated { new: pod, .. } => {
                let node = pod["spec"]["nodeName"].as_str().unwrap_or("").to_string();
                self.cache.insert(key_of(pod), node);
            }
            Notification::Deleted(pod) => {
                self.cache.remove(&key_of(pod));
            }
        }
    }

    /// Binds one queued pod. `Ok(false)` when no node can take it yet.
    fn schedule_one(&mut self, ctx: &Context<'_>, key: &str) -> Result<bool, ApiError> {
        let (cp, now, nodes) = (ctx.cp, ctx.now, ctx.cache(NODES));
        let Some(pod) = ctx.cache(PODS).get(key).cloned() else {
            return Ok(true);
        };
        if is_scheduled(&pod) || !is_active(&pod) {
            return Ok(true);
        }
        let Some(node) = self.pick_node(nodes) else {
            let _ = self.events.record(
                cp,
                now,
                (PODS, &pod),
                EventType::Warning,
                "FailedScheduling",
                format!(
                    "0/{} nodes are available: {} Too many pods.",
                    nodes.list().count(),
                    nodes.list().count()
                ),
            );
            return Ok(false);
        };
        let (ns, name) = split_key(key);
        let bound = update_if_changed(cp, PODS, ns, name, |pod| {
            // Someone else bound it since our cache saw it: leave it.
            if is_scheduled(pod) {
                return;
            }
            pod["spec"]["nodeName"] = json!(node);
            let scheduled = json!({"type": "PodScheduled", "status": "True"});
            match pod["status"]["conditions"].as_array_mut() {
                Some(conditions) => conditions.push(scheduled),
                None => pod["status"]["conditions"] = json!([scheduled]),
            }
        })?;
        if let Some(bound) = bound {
            let _ = self.events.record(
                cp,
                now,
                (PODS, &bound),
                EventType::Normal,
                "Scheduled",
                format!(
                    "Successfully assigned {}/{name} to {node}",
                    ns.unwrap_or("default")
                ),
            );
            // Assume it: the next pick counts it before the watch confirms it.
            self.cache.insert(key.to_string(), node);
        }
        Ok(true)
    }

    /// The ready node with room for a pod (fewer than its `allocatable.pods`)
    /// and the fewest pods; ties go round the nodes in turn. `None` when every
    /// node is full: the pod stays Pending, as "Too many pods" leaves it.
    fn pick_node(&mut self, nodes: &Informer) -> Option<String> {
        let counts = pods_per_node(nodes, &self.cache);
        let ready: Vec<(&String, usize)> = counts
            .iter()
            .filter(|(name, count)| {
                nodes
                    .get(name.as_str())
                    .is_some_and(|n| node_is_ready(n) && (**count as u64) < max_pods(n))
            })
            .map(|(name, count)| (name, *count))
            .collect();
        let fewest = ready.iter().map(|(_, c)| *c).min()?;
        let tied: Vec<&String> = ready
            .iter()
            .filter(|(_, c)| *c == fewest)
            .map(|(n, _)| *n)
            .collect();
        self.turn = self.turn.wrapping_add(1);
        Some(tied[self.turn % tied.len()].clone())
    }
}

/// The pods a node takes: its `status.allocatable.pods`, else the kubelet's
/// default.
pub fn max_pods(node: &Value) -> u64 {
    node["status"]["allocatable"]["pods"]
        .as_str()
        .and_then(|p| p.parse().ok())
        .or_else(|| node["status"]["allocatable"]["pods"].as_u64())
        .unwrap_or(NODE_MAX_PODS)
}

/// Whether the node's Ready condition is True.
pub fn node_is_ready(node: &Value) -> bool {
    node["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}
