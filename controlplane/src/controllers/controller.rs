//! The runner every demo controller is built on, in the shape of
//! kube-runtime's `Controller` and controller-runtime's builder:
//!
//! ```text
//! Controller::new(Informer::new(DEPLOYMENTS, NAME))
//!     .owns(Informer::new(REPLICASETS, NAME), DEPLOYMENTS.kind)
//! ```
//!
//! then [`Controller::step`] with the controller's [`Reconciler`]. It holds
//! the informers, the rule that turns each one's notifications into queued
//! keys, and the workqueue; the reconciler is only what a sync of one key
//! does.
//!
//! Unlike kube-runtime's, it is synchronous and polled: nothing here sleeps
//! or spawns. Each step drains every informer, then works the keys that are
//! due and says when it next wants to run; the caller owns time and waiting.

use super::informer::{Informer, Notification};
use super::owner::controller_of;
use crate::api_error::ApiError;
use crate::control_plane::ControlPlane;
use crate::object;
use crate::resource::ResourceType;
use std::time::Duration;
use watchlife_informer::rate_limiter::RateLimiter;
use watchlife_informer::workqueue::Workqueue;
use watchlife_protocol::Micros;

/// First retry delay of a key whose sync failed: client-go's per-item
/// exponential limiter starts at 5 ms.
pub const RETRY_BASE: Duration = Duration::from_millis(5);

/// Longest retry delay. client-go's stops at 1,000 s; a demo whose user is
/// watching cannot wait that long, and 10 s still spaces out a key that keeps
/// failing.
pub const RETRY_MAX: Duration = Duration::from_secs(10);

/// A controller's workqueue: client-go's, retrying failed keys from
/// [`RETRY_BASE`] doubling to [`RETRY_MAX`] (and client-go's overall bucket).
pub fn workqueue() -> Workqueue {
    Workqueue::with_limiter(RateLimiter::new(RETRY_BASE, RETRY_MAX))
}

/// What one step of a controller did, and when it wants the next.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Activity {
    /// Notifications its informers delivered.
    pub noticed: usize,
    /// Keys it synced.
    pub synced: usize,
    /// When a delayed key of its queue is due, if any.
    pub next: Option<Micros>,
}

impl Activity {
    /// When the controller wants to run again: at once after it did anything
    /// (its writes may be news to the others, or to itself), else when its
    /// next delayed key is due, else only when something changes.
    pub fn wake_at(&self, now: Micros) -> Option<Micros> {
        if self.noticed + self.synced > 0 {
            Some(now)
        } else {
            self.next
        }
    }
}

/// What became of a key a reconciler synced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Synced: its retry count starts over.
    Done,
    /// Not possible yet: look again at this time, keeping its retry count.
    RetryAt(Micros),
}

/// What a controller does with the keys its informers queue.
pub trait Reconciler {
    /// Brings the object under `key` towards what it should be. An error
    /// retries the key after the rate limiter's delay.
    fn reconcile(&mut self, ctx: &mut Context<'_>, key: &str) -> Result<Action, ApiError>;

    /// A notification from an informer added with [`Controller::watches`]:
    /// queue what it concerns. Called once every informer of the step has
    /// been drained, so the caches read here are as fresh as the step's.
    fn notified(&mut self, _ctx: &mut Context<'_>, _from: ResourceType, _n: &Notification) {}
}

/// What a reconciler may use: the control plane, the step's time, the
/// informers' caches and the queue.
pub struct Context<'a> {
    pub cp: &'a ControlPlane,
    pub now: Micros,
    watches: &'a [Watch],
    queue: &'a mut Workqueue,
}

impl<'a> Context<'a> {
    /// The cache of the controller's informer of `rt`.
    ///
    /// # Panics
    /// If the controller has no informer of `rt`: a controller reads only
    /// the types it was built to watch.
    pub fn cache(&self, rt: ResourceType) -> &'a Informer {
        cache_of(self.watches, rt)
    }

    /// Queues `key` now.
    pub fn queue(&mut self, key: &str) {
        self.queue.add(key, []);
    }

    /// Queues `key` for `at`.
    pub fn queue_at(&mut self, key: &str, at: Micros) {
        self.queue.add_after(key, at, self.now);
    }
}

/// How one informer's notifications become keys.
#[derive(Debug, Clone, Copy)]
enum Trigger {
    /// The object's own key: the controller's primary type.
    Itself,
    /// The key of the object's managing controller of this kind, before and
    /// after an update (its owner may have changed): an owned type.
    Owner(&'static str),
    /// The reconciler's [`Reconciler::notified`] decides.
    Reconciler,
    /// None: only the reconciler reads the cache.
    Nothing,
}

#[derive(Debug)]
struct Watch {
    informer: Informer,
    trigger: Trigger,
}

/// Informers, the keys they queue, and the queue a [`Reconciler`] works.
///
/// Contract of [`Controller::step`]: the informers are polled in the order
/// they were added, all of them before any notification is handled; no key
/// is synced until every informer has synced (client-go's
/// `WaitForCacheSync`) unless the controller was built
/// [`Controller::working_before_sync`]; each key due is synced once per
/// step, never two at a time.
#[derive(Debug)]
pub struct Controller {
    watches: Vec<Watch>,
    queue: Workqueue,
    wait_for_sync: bool,
}

impl Default for Controller {
    /// A controller with no informer yet.
    fn default() -> Self {
        Controller {
            watches: Vec::new(),
            queue: workqueue(),
            wait_for_sync: true,
        }
    }
}

impl Controller {
    /// A controller of `primary`'s objects: each notification queues the
    /// object's key.
    pub fn new(primary: Informer) -> Self {
        Controller::default().watch(primary, Trigger::Itself)
    }

    /// Also watches objects managed by an object of `owner_kind`: each
    /// notification queues its controller's key.
    pub fn owns(self, owned: Informer, owner_kind: &'static str) -> Self {
        self.watch(owned, Trigger::Owner(owner_kind))
    }

    /// Also watches `informer`, whose notifications go to
    /// [`Reconciler::notified`].
    pub fn watches(self, informer: Informer) -> Self {
        self.watch(informer, Trigger::Reconciler)
    }

    /// Also keeps `informer`'s cache, for the reconciler to read; its
    /// notifications queue nothing.
    pub fn reads(self, informer: Informer) -> Self {
        self.watch(informer, Trigger::Nothing)
    }

    /// Syncs keys before the informers have synced (a kubelet acts on each
    /// pod as it hears of it; the garbage collector reads the owners from
    /// the control plane itself).
    pub fn working_before_sync(mut self) -> Self {
        self.wait_for_sync = false;
        self
    }

    fn watch(mut self, informer: Informer, trigger: Trigger) -> Self {
        self.watches.push(Watch { informer, trigger });
        self
    }

    /// The cache of the informer of `rt` (see [`Context::cache`]).
    pub fn cache(&self, rt: ResourceType) -> &Informer {
        cache_of(&self.watches, rt)
    }

    /// The context a reconciler is given at `now`.
    pub fn context<'a>(&'a mut self, cp: &'a ControlPlane, now: Micros) -> Context<'a> {
        Context {
            cp,
            now,
            watches: &self.watches,
            queue: &mut self.queue,
        }
    }

    /// Drains the informers, then syncs the keys due with `reconciler`;
    /// returns what it did and when it next wants to run.
    pub fn step(
        &mut self,
        cp: &ControlPlane,
        now: Micros,
        reconciler: &mut impl Reconciler,
    ) -> Activity {
        let mut activity = Activity {
            noticed: self.notice(cp, now, reconciler),
            ..Activity::default()
        };
        if self.wait_for_sync && !self.watches.iter().all(|w| w.informer.has_synced()) {
            return activity;
        }
        for _ in 0..self.queue.ready(now) {
            let Some((key, _)) = self.queue.get(now) else {
                break;
            };
            activity.synced += 1;
            match reconciler.reconcile(&mut self.context(cp, now), &key) {
                Ok(Action::Done) => self.queue.forget(&key),
                Ok(Action::RetryAt(at)) => self.queue.add_after(&key, at, now),
                Err(_) => {
                    self.queue.add_rate_limited(&key, now);
                }
            }
            self.queue.done(&key);
        }
        activity.next = self.queue.next_due();
        activity
    }

    /// Polls every informer, then queues what their notifications concern;
    /// returns how many there were.
    fn notice(
        &mut self,
        cp: &ControlPlane,
        now: Micros,
        reconciler: &mut impl Reconciler,
    ) -> usize {
        let polled: Vec<(ResourceType, Trigger, Vec<Notification>)> = self
            .watches
            .iter_mut()
            .map(|w| (w.informer.resource(), w.trigger, w.informer.poll(cp)))
            .collect();
        let mut noticed = 0;
        for (rt, trigger, notifications) in polled {
            noticed += notifications.len();
            for n in &notifications {
                match trigger {
                    Trigger::Itself => {
                        self.queue.add(&n.key(), []);
                    }
                    Trigger::Owner(kind) => queue_owner(&mut self.queue, kind, n),
                    Trigger::Reconciler => reconciler.notified(&mut self.context(cp, now), rt, n),
                    Trigger::Nothing => {}
                }
            }
        }
        noticed
    }
}

fn cache_of(watches: &[Watch], rt: ResourceType) -> &Informer {
    watches
        .iter()
        .map(|w| &w.informer)
        .find(|i| i.resource() == rt)
        .expect("a controller reads only the types it watches")
}

/// Queues the key of the managing controller of kind `kind` of the object
/// notified, and of its previous state when it was updated.
fn queue_owner(queue: &mut Workqueue, kind: &str, n: &Notification) {
    let mut objects = vec![n.object().clone()];
    if let Notification::Updated { old, .. } = n {
        objects.push(old.clone());
    }
    for obj in objects {
        if let (Some(owner), Some(ns)) = (controller_of(&obj, kind), object::namespace(&obj)) {
            queue.add(&format!("{ns}/{}", owner.name), []);
        }
    }
}
