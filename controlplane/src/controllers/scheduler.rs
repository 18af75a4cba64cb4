//! The mini scheduler, as the talk draws it.
//!
//! It watches nodes and pods. Its pod informer feeds two filtering handlers:
//! pods with no node (`spec.nodeName` empty) go to its scheduling queue, pods
//! with a node go to its cache of scheduled pods. It takes pods from the queue
//! one by one, picks the node with the fewest pods, and binds the pod to it;
//! the binding comes back through the watch as an update that moves the pod
//! from the queue's handler to the cache's.

use super::events::{EventType, Recorder};
use super::handler::Filter;
use super::informer::{Informer, Notification, key_of, split_key};
use super::replicaset::is_active;
use super::{Activity, update_if_changed};
use crate::control_plane::{ApiError, ControlPlane};
use crate::limits::NODE_MAX_PODS;
use crate::resource::{NODES, PODS};
use serde_json::{Value, json};
use std::collections::{BTreeMap, VecDeque};
use watchlife_informer::workqueue::Workqueue;
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
    pods: Informer,
    nodes: Informer,
    /// The scheduling queue: unscheduled pods waiting for a node.
    queue: Workqueue,
    /// The scheduler cache: scheduled pods and their nodes, including pods it
    /// has bound but not yet seen bound ("assumed", as the real one says).
    cache: BTreeMap<String, String>,
    /// Where the last tie between equally loaded nodes was broken.
    turn: usize,
    split: HandlerSplit,
    events: Recorder,
}

impl Default for Scheduler {
    fn default() -> Self {
        Scheduler::new()
    }
}

impl Scheduler {
    pub fn new() -> Self {
        Scheduler {
            pods: Informer::new(PODS, NAME),
            nodes: Informer::new(NODES, NAME),
            queue: super::workqueue(),
            cache: BTreeMap::new(),
            turn: 0,
            split: HandlerSplit::default(),
            events: Recorder::new("default-scheduler", None),
        }
    }

    fn nodes_count(&self) -> usize {
        self.nodes.list().count()
    }

    /// How the filtering handlers have split the pods so far.
    pub fn split(&self) -> &HandlerSplit {
        &self.split
    }

    /// Scheduled pods by node, as the scheduler's cache holds them.
    pub fn pods_per_node(&self) -> BTreeMap<String, usize> {
        let mut counts: BTreeMap<String, usize> = self
            .nodes
            .list()
            .map(|n| (crate::object::name(n).to_string(), 0))
            .collect();
        for node in self.cache.values() {
            *counts.entry(node.clone()).or_default() += 1;
        }
        counts
    }

    /// Drains the informers through the handlers, then schedules the queued
    /// pods; returns when it next wants to run (see [`Activity`]).
    pub fn step(&mut self, cp: &ControlPlane, now: Micros) -> Activity {
        let mut activity = Activity::default();
        activity.noticed += self.nodes.poll(cp).len();
        for n in self.pods.poll(cp) {
            activity.noticed += 1;
            for filter in [UNSCHEDULED, SCHEDULED] {
                if let Some(filtered) = filter.filter(&n) {
                    self.split.record(&filter, &filtered);
                    if filter.name == UNSCHEDULED.name {
                        self.on_unscheduled(&filtered);
                    } else {
                        self.on_scheduled(&filtered);
                    }
                }
            }
        }
        if !self.pods.has_synced() || !self.nodes.has_synced() {
            return activity;
        }
        for _ in 0..self.queue.ready(now) {
            let Some((key, _)) = self.queue.get(now) else {
                break;
            };
            activity.synced += 1;
            match self.schedule_one(cp, &key, now) {
                Ok(true) => self.queue.forget(&key),
                Ok(false) => self.queue.add_after(&key, now + NO_NODE_RETRY_MICROS, now),
                Err(_) => {
                    self.queue.add_rate_limited(&key, now);
                }
            }
            self.queue.done(&key);
        }
        activity.next = self.queue.next_due();
        activity
    }

    /// The scheduling queue's handler.
    fn on_unscheduled(&mut self, n: &Notification) {
        match n {
            Notification::Added(_) | Notification::Updated { .. } => {
                self.queue.add(&n.key(), []);
            }
            // Bound, or gone: a stale key in the queue is skipped when popped.
            Notification::Deleted(_) => {}
        }
    }

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
    fn schedule_one(
        &mut self,
        cp: &ControlPlane,
        key: &str,
        now: Micros,
    ) -> Result<bool, ApiError> {
        let Some(pod) = self.pods.get(key).cloned() else {
            return Ok(true);
        };
        if is_scheduled(&pod) || !is_active(&pod) {
            return Ok(true);
        }
        let Some(node) = self.pick_node() else {
            let _ = self.events.record(
                cp,
                now,
                (PODS, &pod),
                EventType::Warning,
                "FailedScheduling",
                format!(
                    "0/{} nodes are available: {} Too many pods.",
                    self.nodes_count(),
                    self.nodes_count()
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
    fn pick_node(&mut self) -> Option<String> {
        let counts = self.pods_per_node();
        let ready: Vec<(&String, usize)> = counts
            .iter()
            .filter(|(name, count)| {
                self.nodes
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
