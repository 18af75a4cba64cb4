//! What the Cacher's Reflector and its adapters share: the store read the
//! driver waits for, what it delivered, and the room it has (see
//! [`super::reflect`] for who owns what). The lock is taken for a moment at
//! a time, never across an await.

use crate::store::{Revision, Store, StoreEvent};
use serde_json::Value;
use std::future::poll_fn;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Poll;
use watchlife_protocol::Micros;

/// What the driver delivered, for the Cacher to apply in this order.
#[derive(Debug)]
pub(super) enum Fed {
    /// A ListAndWatch begins with its LIST: `startCaching` terminates every
    /// watcher first (`terminateAllWatchers`).
    ListStarted,
    /// The LIST's objects, by store key, replace the cache at `revision`.
    Replace {
        objects: Vec<(String, Arc<Value>)>,
        revision: Revision,
    },
    /// A change read from the store's watch at `at`.
    Change { event: StoreEvent, at: Micros },
    /// The store's watch says nothing of this type happened up to this
    /// revision (etcd's progress notification).
    Progress(Revision),
    /// The ListAndWatch ended: its watch of the store failed.
    Ended,
}

/// What the driver waits for at the end of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Waits {
    /// Room in `incoming`, to read the next change.
    ForRoom,
    /// The store to change, or this time (the end of the wait between two
    /// ListAndWatch cycles).
    Until(Option<Micros>),
}

/// A read of the store the driver waits for, left for the step to run.
type StoreRead = Box<dyn FnOnce(&Store) + Send>;

/// What the driver's adapters and the Cacher's step share.
#[derive(Default)]
pub(super) struct Shared {
    /// The store read the driver waits for.
    pub(super) read: Option<StoreRead>,
    /// Delivered since the step began.
    pub(super) fed: Vec<Fed>,
    /// Changes the driver may still deliver in this step.
    pub(super) room: usize,
    /// The driver waits for room.
    pub(super) waits_for_room: bool,
    /// When the driver's wait ends, while it waits.
    pub(super) wake_at: Option<Micros>,
    /// The open store watch is to fail at its next read
    /// ([`super::Cacher::end_list_and_watch`]).
    pub(super) broken: bool,
}

/// A handle on the shared state.
pub(super) type Handle = Arc<Mutex<Shared>>;

pub(super) fn lock(handle: &Handle) -> MutexGuard<'_, Shared> {
    handle.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Waits until a step has run `read` against the store it lends.
pub(super) async fn read_store<R: Send + 'static>(
    handle: &Handle,
    read: impl FnOnce(&Store) -> R + Send + 'static,
) -> R {
    let answer: Arc<Mutex<Option<R>>> = Arc::default();
    let slot = answer.clone();
    lock(handle).read = Some(Box::new(move |store| {
        *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(read(store));
    }));
    poll_fn(|_| {
        let answered = answer.lock().unwrap_or_else(PoisonError::into_inner).take();
        answered.map_or(Poll::Pending, Poll::Ready)
    })
    .await
}

/// Pending once: ready when the next step polls the driver again.
pub(super) async fn next_step() {
    let mut polled = false;
    poll_fn(move |_| {
        if std::mem::replace(&mut polled, true) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await
}

/// Takes the request to fail the open store watch, if any.
pub(super) fn take_broken(handle: &Handle) -> bool {
    std::mem::take(&mut lock(handle).broken)
}

/// Forgets a request to fail a store watch: a new watch opens.
pub(super) fn clear_broken(handle: &Handle) {
    lock(handle).broken = false;
}
