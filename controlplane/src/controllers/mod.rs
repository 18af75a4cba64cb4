//! The demo's controllers, written the way client-go's are.
//!
//! # Layout
//! - [`informer`]: list-watch into a local cache, with notifications.
//! - [`handler`]: filtering event handlers (one informer, several views).
//! - [`controller`]: the runner every controller is built on, as
//!   kube-runtime's `Controller`: its informers, the keys their
//!   notifications queue, and a workqueue (the informer crate's, client-go's,
//!   with the demo's retry limit) that a [`Reconciler`] works.
//! - [`deployment`], [`replicaset`], [`scheduler`], [`kubelet`],
//!   [`garbage_collector`]: the controllers, each its reconciler.
//! - [`owner`], [`names`]: owner references and generated names;
//!   [`events`]: the Events the controllers record, as client-go's recorder.
//! - [`demo`]: [`Demo`], all of them and the story, driven by one `step`.
//!
//! Every controller is a plain struct with a `step(&mut self, cp, now)` that
//! drains its informers, works its queue and says when it next wants to run.
//! Nothing here sleeps or spawns: the caller owns time and waiting, so the
//! same controllers run in the server's tokio task and on a page's timer.

pub mod controller;
pub mod demo;
pub mod deployment;
pub mod events;
pub mod garbage_collector;
pub mod handler;
pub mod informer;
pub mod kubelet;
pub mod names;
pub mod owner;
pub mod replicaset;
pub mod scheduler;

pub use crate::limits::DEMO_NODES;
pub use controller::{
    Action, Activity, Context, Controller, RETRY_BASE, RETRY_MAX, Reconciler, workqueue,
};
pub use demo::{Demo, MAX_IDLE_MICROS};
pub use deployment::DeploymentController;
pub use garbage_collector::GarbageCollector;
pub use kubelet::Kubelet;
pub use replicaset::ReplicaSetController;
pub use scheduler::Scheduler;

#[cfg(test)]
mod tests;
