//! The Cacher's Reflector: the informer crate's one list-watch driver
//! ([`list_watch::run`]) against the store, stepped by
//! [`super::Cacher::reflect`].
//!
//! Who owns what:
//! - The Cacher owns a [`CacherReflector`]: the driver's future, boxed, and
//!   the [`super::shared::Shared`] state between that future and the Cacher. Nothing wakes
//!   the future: each step polls it with a no-op waker and it looks again.
//! - The future owns the Reflector machine and the driver's three adapters:
//!   the store's lister-watcher ([`super::store_lw`]), the sink
//!   ([`FeedSink`]) and the timer ([`ClockTimer`]), each holding a handle
//!   to the shared state.
//! - The store belongs to the control plane, which lends it to each step.
//!   The driver leaves the read it needs in the shared state and waits
//!   ([`super::shared::read_store`]); the step runs that read against the store and polls
//!   the driver again, until the driver waits for something else.
//! - What the driver delivers waits in the shared state as [`Fed`] items
//!   until the step ends; the Cacher then applies them, in order, to its
//!   watch cache, `incoming`, watchers and ready state.
//! - The step says how many changes the driver may deliver ([`super::shared::Shared`]'s
//!   room): one while `incoming` has room, none otherwise and between steps.
//!   The sink is ready only with room, so a full `incoming` holds the
//!   store's watch back, as `processEvent` blocks on the channel.
//!
//! The shared state's lock is taken for a moment at a time, never across an
//! await, and the future borrows nothing from the Cacher.

use super::shared::{Fed, Handle, Waits, lock};
use super::store_lw::{StoreItem, StoreListerWatcher};
use crate::clock::Clock;
use crate::resource::ResourceType;
use crate::store::Store;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use watchlife_informer::list_watch::{self, Listed, Sink, Timer};
use watchlife_informer::reflector::Config;
use watchlife_informer::reflector::ReflectorState;
use watchlife_informer::{EventType, Micros};

/// The Cacher's Reflector: the driver's future and what it shares.
pub(super) struct CacherReflector {
    /// Runs forever; polled by each step.
    driver: Pin<Box<dyn Future<Output = ()> + Send>>,
    shared: Handle,
}

impl CacherReflector {
    /// The Reflector of `rt`'s Cacher, following `config`, not started: the
    /// first step starts it.
    pub(super) fn new(rt: ResourceType, config: Config, seed: u64, clock: Clock) -> Self {
        let shared = Handle::default();
        let lw = StoreListerWatcher::new(rt.key_prefix(), shared.clone());
        let timer = ClockTimer {
            clock,
            shared: shared.clone(),
        };
        let mut sink = FeedSink(shared.clone());
        let driver = Box::pin(async move {
            list_watch::run(&lw, &mut sink, &timer, config, seed).await;
        });
        CacherReflector { driver, shared }
    }

    /// Runs the driver until it waits, lending it `store` (with none, a read
    /// of the store waits for the next step); it may deliver one change if
    /// `room`. Returns what it delivered and what it waits for.
    pub(super) fn step(&mut self, store: Option<&Store>, room: bool) -> (Vec<Fed>, Waits) {
        lock(&self.shared).room = usize::from(room);
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            // Never ready: the driver runs forever.
            let _ = self.driver.as_mut().poll(&mut cx);
            let Some(store) = store else { break };
            let read = lock(&self.shared).read.take();
            let Some(read) = read else { break };
            read(store);
        }
        let mut shared = lock(&self.shared);
        shared.room = 0;
        let waits = if shared.waits_for_room {
            Waits::ForRoom
        } else {
            Waits::Until(shared.wake_at)
        };
        (std::mem::take(&mut shared.fed), waits)
    }

    /// Fails the open store watch at its next read, as a compaction past it
    /// or an etcd failure would; a Reflector between watches is unaffected.
    pub(super) fn break_watch(&mut self) {
        lock(&self.shared).broken = true;
    }
}

/// The driver's sink: what the Cacher needs of its deliveries, kept for
/// the step's end.
struct FeedSink(Handle);

impl FeedSink {
    fn feed(&self, fed: Fed) {
        lock(&self.0).fed.push(fed);
    }
}

impl Sink<StoreItem> for FeedSink {
    fn report(&mut self, state: ReflectorState) {
        match state {
            ReflectorState::ListStarted { .. } => self.feed(Fed::ListStarted),
            // The store refuses no watch for a lost connection or a 429,
            // the only waits within a cycle: a backoff ends the ListAndWatch.
            ReflectorState::Backoff { .. } => self.feed(Fed::Ended),
            _ => {}
        }
    }

    fn replace(&mut self, objects: Vec<Listed<StoreItem>>, resource_version: &str, _at: Micros) {
        let objects = objects
            .into_iter()
            .filter_map(|listed| listed.object.listed())
            .collect();
        let revision = resource_version.parse().unwrap_or(0);
        self.feed(Fed::Replace { objects, revision });
    }

    fn delta(&mut self, _event_type: EventType, object: StoreItem, at: Micros) {
        if let Some(event) = object.changed() {
            let mut shared = lock(&self.0);
            shared.room = shared.room.saturating_sub(1);
            shared.fed.push(Fed::Change { event, at });
        }
    }

    fn marker(&mut self, event_type: EventType, resource_version: &str, _at: Micros) {
        if event_type == EventType::Bookmark
            && let Ok(revision) = resource_version.parse()
        {
            self.feed(Fed::Progress(revision));
        }
    }

    /// The Cacher's Reflector never resyncs: its resync period is zero.
    fn resync(&mut self) {}

    async fn ready(&mut self) {
        poll_fn(|_| {
            let mut shared = lock(&self.0);
            shared.waits_for_room = shared.room == 0;
            if shared.waits_for_room {
                Poll::Pending
            } else {
                Poll::Ready(())
            }
        })
        .await
    }
}

/// The control plane's clock; a wait ends at the first step past its end.
struct ClockTimer {
    clock: Clock,
    shared: Handle,
}

impl Timer for ClockTimer {
    fn now(&self) -> Micros {
        self.clock.now()
    }

    async fn sleep(&self, duration: Duration) {
        let micros = duration.as_micros().min(Micros::MAX as u128) as Micros;
        let until = self.now().saturating_add(micros);
        lock(&self.shared).wake_at = Some(until);
        poll_fn(|_| {
            if self.now() >= until {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
        lock(&self.shared).wake_at = None;
    }
}
