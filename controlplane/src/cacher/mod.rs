//! The apiserver's Cacher for one resource type, as separate stages with
//! real queues between them:
//!
//! ```text
//! store commit ─▶ store's watch ─▶ Cacher's Reflector ─▶ watch cache ─▶ incoming
//!     ─▶ dispatcher ─▶ each watcher's buffer ─▶ its writer (the watch stream)
//! ```
//!
//! - [`Cacher::reflect`]: the Cacher's Reflector (the informer crate's one
//!   list-watch driver, adapted in the `reflect` module) lists the store,
//!   then reads its watch one change at a time into the [`WatchCache`] and
//!   the `incoming` queue. When `incoming` is full it waits, as
//!   `processEvent` blocks on the channel.
//! - [`Cacher::dispatch`]: the dispatcher takes one event from `incoming`
//!   and puts it in the buffer of every watcher that wants it, without
//!   blocking first; on full buffers it blocks for at most the time budget,
//!   then closes the watchers still full (`dispatchEvent`, `cacheWatcher.add`).
//!   It also sends bookmarks on the apiserver's schedule.
//! - The writer of each watch reads its buffer (see [`watcher`]).
//!
//! Every hop stamps the event when it happens. Nothing here sleeps: each
//! step says what it waits for, and the caller runs each stage as its own
//! task ([`crate::control_plane::stages`]) or, in tests, all of them in turn.

pub mod budget;
pub mod ready;
mod reflect;
mod shared;
mod store_lw;
pub mod watcher;

use crate::clock::Clock;
use crate::resource::ResourceType;
use crate::store::{Revision, Store};
use crate::watch_cache::{CachedEvent, Delivery, Origin, WatchCache, WatchError, WindowBounds};
use budget::TimeBudget;
use ready::Ready;
use reflect::CacherReflector;
use shared::{Fed, Waits};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use watcher::{Refused, WatchOptions, Watcher, WatcherId};
use watchlife_informer::reflector;
use watchlife_protocol::Micros;

/// Events `incoming` holds between the watch cache and the dispatcher
/// (`incoming: make(chan watchCacheEvent, 100)`, `cacher.go`).
pub const INCOMING_CAPACITY: usize = 100;

/// The dispatcher's bookmark timer: every second, with up to 25% jitter
/// (`wait.Jitter(time.Second, 0.25)`, `dispatchEvents`).
pub const BOOKMARK_TICK: Micros = 1_000_000;

/// Closed watchers a Cacher remembers, so a viewer that looks a little later
/// still sees which watcher fell behind.
pub const CLOSED_WATCHERS_KEPT: usize = 16;

/// One attached watcher, as the UI draws its lane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatcherInfo {
    pub id: WatcherId,
    pub name: String,
    /// Live events waiting in its buffer: put there by the dispatcher, not
    /// yet written (the watch's initial events are not counted).
    pub buffered: usize,
    /// Live events its buffer holds now.
    pub capacity: usize,
    /// Whether the dispatcher is blocked on it right now.
    pub blocking: bool,
}

/// A watcher closed because its buffer stayed full past the budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClosedWatcher {
    pub id: WatcherId,
    pub name: String,
    /// The revision of the event it could not take.
    pub revision: Revision,
    pub closed_at: Micros,
}

/// The watchers of one Cacher: its fan-out, and the queue before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchersInfo {
    pub resource: ResourceType,
    pub watchers: Vec<WatcherInfo>,
    /// Watchers closed for being too slow since the cache started.
    pub closed_slow: u64,
    /// The last [`CLOSED_WATCHERS_KEPT`] of them, oldest first.
    pub recently_closed: Vec<ClosedWatcher>,
    /// Events waiting in `incoming` for the dispatcher.
    pub incoming: usize,
    /// Events the dispatcher has put in watchers' buffers since the Cacher
    /// started (each watcher counted).
    pub delivered: u64,
}

/// What one step of a stage did, and what it waits for before the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// It moved an event (or a request) on: step again.
    Moved,
    /// Nothing to do until its input changes, or until this time.
    Idle { until: Option<Micros> },
    /// Its output is full: it waits for the next stage to take something
    /// (or, for the dispatcher, at most until this time).
    Blocked { until: Option<Micros> },
}

/// A dispatch blocked on full buffers (`blockedWatchers`).
struct Blocked {
    event: Arc<CachedEvent>,
    /// The watchers it still has to reach, with what each is to be sent.
    waiting: Vec<(WatcherId, Arc<CachedEvent>)>,
    deadline: Micros,
}

/// The Cacher of one resource type.
pub struct Cacher {
    resource: ResourceType,
    cache: WatchCache,
    incoming: VecDeque<Arc<CachedEvent>>,
    watchers: Vec<Watcher>,
    next_watcher_id: WatcherId,
    blocked: Option<Blocked>,
    budget: TimeBudget,
    /// When the dispatcher's bookmark timer next fires.
    bookmark_tick: Micros,
    bookmark_frequency: Micros,
    /// The revision of the last event the dispatcher took
    /// (`lastProcessedResourceVersion`).
    last_dispatched: Revision,
    reflector: CacherReflector,
    /// LISTs its Reflector made of the store: one at start, one after each
    /// failed ListAndWatch.
    lists: u64,
    /// Whether the cache may serve (see [`ready`]).
    ready: Ready,
    closed_slow: u64,
    recently_closed: VecDeque<ClosedWatcher>,
    /// Counts for metrics: events dispatched, and events put in buffers.
    dispatched: u64,
    delivered: u64,
    jitter: u64,
    clock: Clock,
}

impl Cacher {
    /// A Cacher of `rt` whose window stays within `bounds` and who sends
    /// bookmarks every `bookmark_frequency`. It has not listed yet: its
    /// first [`Cacher::reflect`] does.
    pub fn new(
        rt: ResourceType,
        bounds: WindowBounds,
        revision: Revision,
        bookmark_frequency: Micros,
        clock: Clock,
    ) -> Self {
        let now = clock.now();
        let seed = rt
            .plural
            .bytes()
            .fold(17u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
        Cacher {
            resource: rt,
            cache: WatchCache::with_window(rt, bounds, [], revision, clock.clone()),
            incoming: VecDeque::with_capacity(INCOMING_CAPACITY),
            watchers: Vec::new(),
            next_watcher_id: 1,
            blocked: None,
            budget: TimeBudget::new(now),
            bookmark_tick: now + BOOKMARK_TICK,
            bookmark_frequency,
            last_dispatched: 0,
            reflector: CacherReflector::new(rt, reflector_config(), seed, clock.clone()),
            lists: 0,
            ready: Ready::pending(now),
            closed_slow: 0,
            recently_closed: VecDeque::new(),
            dispatched: 0,
            delivered: 0,
            jitter: seed,
            clock,
        }
    }

    pub fn resource(&self) -> ResourceType {
        self.resource
    }

    /// The watch cache.
    pub fn cache(&self) -> &WatchCache {
        &self.cache
    }

    /// The watch cache, to compact or advance.
    pub fn cache_mut(&mut self) -> &mut WatchCache {
        &mut self.cache
    }

    /// Events waiting in `incoming`.
    pub fn incoming_len(&self) -> usize {
        self.incoming.len()
    }

    /// LISTs the Cacher's Reflector has made of the store.
    pub fn lists(&self) -> u64 {
        self.lists
    }

    /// Events the dispatcher has taken, and deliveries it has made.
    pub fn dispatch_counts(&self) -> (u64, u64) {
        (self.dispatched, self.delivered)
    }

    /// Watchers currently attached.
    pub fn watcher_count(&self) -> usize {
        self.watchers.len()
    }

    /// Whether the Cacher's last LIST replaced the cache and its watch of
    /// the store has not failed since (see [`ready`]).
    pub fn is_ready(&self) -> bool {
        self.ready.is_ready()
    }

    /// `Ok` when ready, else how long the cache has not been.
    pub fn check_ready(&self) -> Result<(), Micros> {
        self.ready.check(self.clock.now())
    }

    /// The attached watchers and the ones recently closed for being slow.
    /// A watcher whose client has gone away is no longer listed.
    pub fn watchers_info(&self) -> WatchersInfo {
        let blocking: Vec<WatcherId> = self
            .blocked
            .iter()
            .flat_map(|b| b.waiting.iter().map(|(id, _)| *id))
            .collect();
        WatchersInfo {
            resource: self.resource,
            watchers: self
                .watchers
                .iter()
                .filter(|w| !w.tx.is_closed())
                .map(|w| WatcherInfo {
                    id: w.id,
                    name: w.name.clone(),
                    buffered: w.live_buffered(),
                    capacity: w.live_capacity(),
                    blocking: blocking.contains(&w.id),
                })
                .collect(),
            closed_slow: self.closed_slow,
            recently_closed: self.recently_closed.iter().cloned().collect(),
            incoming: self.incoming.len(),
            delivered: self.delivered,
        }
    }

    /// One step of the Cacher's Reflector: the list-watch driver runs, with
    /// `store` lent to it, until it waits (for a change of the store, for
    /// room in `incoming`, or for the next ListAndWatch). It LISTs the store
    /// or reads at most one change from the store's watch into the cache
    /// and `incoming`; what it did is applied here (see the `reflect` module).
    pub fn reflect(&mut self, store: &Store) -> Progress {
        let room = self.incoming.len() < INCOMING_CAPACITY;
        let (fed, waits) = self.reflector.step(Some(store), room);
        if self.absorb(fed) {
            return Progress::Moved;
        }
        match waits {
            Waits::ForRoom => Progress::Blocked { until: None },
            Waits::Until(until) => Progress::Idle { until },
        }
    }

    /// Ends the current ListAndWatch as a failed store watch does: the
    /// cache is not ready from `now` until the next ListAndWatch, which
    /// begins [`ready::RELIST_PERIOD`] after the Reflector finds its watch
    /// ended (at once, unless it waits for room in `incoming`). A demo's
    /// speaker may call it to show a relist.
    pub fn end_list_and_watch(&mut self, now: Micros) {
        self.ready.set(false, now);
        self.reflector.break_watch();
        // No store: the broken watch needs no read to end.
        let (fed, _) = self.reflector.step(None, false);
        self.absorb(fed);
    }

    /// Applies what the Reflector delivered, in order; true if it moved
    /// anything on (a progress notification alone moves nothing).
    fn absorb(&mut self, fed: Vec<Fed>) -> bool {
        let mut moved = false;
        for item in fed {
            let now = self.clock.now();
            match item {
                // One ListAndWatch begins (`startCaching`, `cacher.go`):
                // every watcher is terminated first (`terminateAllWatchers`),
                // so that none stays attached across the relist and misses
                // the changes the LIST folds in.
                Fed::ListStarted => self.drop_watchers(),
                Fed::Replace { objects, revision } => {
                    self.lists += 1;
                    self.cache.replace(objects, revision);
                    // `SetOnReplace`: the cache is ready once replaced.
                    self.ready.set(true, now);
                }
                Fed::Change { event, at } => {
                    let depth = (self.incoming.len() + 1) as u32;
                    let event = self.cache.process(&event, at, depth);
                    self.incoming.push_back(event);
                }
                Fed::Progress(revision) => {
                    self.cache.advance(revision);
                    continue;
                }
                // The watch failed: ListAndWatch returns, and the cache is
                // no longer ready (`startCaching`'s deferred
                // `ready.set(false)`).
                Fed::Ended => self.ready.set(false, now),
            }
            moved = true;
        }
        moved
    }

    /// One step of the dispatcher: finishes a blocked dispatch, sends the
    /// bookmarks that are due, or dispatches the next event of `incoming`.
    /// Returns the event it took from `incoming`, if any, with the watchers
    /// it reached so far.
    pub fn dispatch(&mut self) -> (Progress, Option<Arc<CachedEvent>>) {
        let now = self.clock.now();
        if self.blocked.is_some() {
            return (self.retry_blocked(now), None);
        }
        if now >= self.bookmark_tick {
            self.send_bookmarks(now);
        }
        let Some(event) = self.incoming.pop_front() else {
            return (
                Progress::Idle {
                    until: Some(self.next_wake()),
                },
                None,
            );
        };
        event.mark_dispatched(now);
        self.last_dispatched = event.revision;
        self.dispatched += 1;
        let mut waiting = Vec::new();
        self.watchers.retain_mut(|w| {
            if event.revision <= w.after {
                return !w.tx.is_closed();
            }
            let Some(view) = w.filter.view(&event) else {
                return !w.tx.is_closed();
            };
            let d = delivery(view.clone(), Origin::Live, now, w);
            match w.push_live(d) {
                Ok(()) => {
                    self.delivered += 1;
                    true
                }
                Err(Refused::Full) => {
                    waiting.push((w.id, view));
                    true
                }
                // The client stopped watching.
                Err(Refused::Closed) => false,
            }
        });
        if waiting.is_empty() {
            return (Progress::Moved, Some(event));
        }
        let timeout = self.budget.take_available(now);
        self.blocked = Some(Blocked {
            event: event.clone(),
            waiting,
            deadline: now + timeout,
        });
        let progress = self.retry_blocked(now);
        (progress, Some(event))
    }

    /// Tries the blocked watchers again; closes those still full once the
    /// budget is spent.
    fn retry_blocked(&mut self, now: Micros) -> Progress {
        let Some(mut blocked) = self.blocked.take() else {
            return Progress::Moved;
        };
        let watchers = &mut self.watchers;
        let mut delivered = 0;
        blocked.waiting.retain(|(id, view)| {
            let Some(w) = watchers.iter_mut().find(|w| w.id == *id) else {
                return false;
            };
            let d = delivery(view.clone(), Origin::Live, now, w);
            match w.push_live(d) {
                Ok(()) => {
                    delivered += 1;
                    false
                }
                Err(Refused::Full) => true,
                Err(Refused::Closed) => false,
            }
        });
        self.delivered += delivered;
        if blocked.waiting.is_empty() {
            self.budget
                .return_unused(blocked.deadline.saturating_sub(now), now);
            return Progress::Moved;
        }
        if now < blocked.deadline {
            let until = Some(blocked.deadline);
            self.blocked = Some(blocked);
            return Progress::Blocked { until };
        }
        // The budget is spent: "Forcing watcher close due to unresponsiveness".
        for (id, _) in &blocked.waiting {
            if let Some(at) = self.watchers.iter().position(|w| w.id == *id) {
                let w = self.watchers.remove(at);
                self.closed_slow += 1;
                if self.recently_closed.len() == CLOSED_WATCHERS_KEPT {
                    self.recently_closed.pop_front();
                }
                self.recently_closed.push_back(ClosedWatcher {
                    id: w.id,
                    name: w.name,
                    revision: blocked.event.revision,
                    closed_at: now,
                });
            }
        }
        Progress::Moved
    }

    /// The bookmark timer fired: every watcher whose bookmark is due gets one
    /// at the last dispatched revision, if its buffer has room (never
    /// blocking), and is scheduled for the next.
    fn send_bookmarks(&mut self, now: Micros) {
        self.jitter = self
            .jitter
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let jitter = (self.jitter >> 33) % (BOOKMARK_TICK / 4 + 1);
        self.bookmark_tick = now + BOOKMARK_TICK + jitter;
        // "Never send a bookmark event if we did not see an event here." The
        // demo also counts the store's progress once `incoming` is drained.
        let revision = if self.incoming.is_empty() {
            self.last_dispatched.max(self.cache.revision())
        } else {
            self.last_dispatched
        };
        if revision == 0 {
            return;
        }
        let mut bookmark = None;
        let frequency = self.bookmark_frequency;
        for w in &mut self.watchers {
            let Some(due) = w.next_bookmark else { continue };
            // Only past the watch's own position: the watcher sends an event
            // only if its resourceVersion is above the one it started from
            // (`cacheWatcher.process`, v1.20.2 `cacher.go`), bookmarks
            // included, so a watch that has seen nothing gets no bookmark
            // at its own resourceVersion.
            if due > now || revision <= w.after {
                continue;
            }
            let event = bookmark
                .get_or_insert_with(|| Arc::new(CachedEvent::bookmark(self.resource, revision)))
                .clone();
            let d = delivery(event, Origin::Bookmark, now, w);
            let _ = w.push_live(d);
            w.next_bookmark = watcher::next_bookmark(now, w.deadline, frequency);
        }
    }

    /// When the dispatcher wants to run again with nothing in `incoming`: at
    /// its bookmark tick.
    pub fn next_wake(&self) -> Micros {
        self.bookmark_tick
    }

    /// Starts a watch: the events it missed (replayed from the window, or the
    /// current objects as synthetic ADDED events) go into its channel at once,
    /// ahead of and apart from its buffer of live events (see
    /// [`watcher::Watcher`]), then live ones from the dispatcher. A revision
    /// older than the window fails with [`WatchError::TooOld`]; a Cacher
    /// that is not ready refuses with [`WatchError::NotReady`] (the caller
    /// waits or answers 429, see [`ready`]).
    pub fn watch(
        &mut self,
        options: WatchOptions,
    ) -> Result<(WatcherId, mpsc::Receiver<Delivery>), WatchError> {
        self.check_ready()
            .map_err(|downtime| WatchError::NotReady { downtime })?;
        let (mut backlog, after) = match options.initial_events {
            None => self.cache.since(options.from, &options.filter)?,
            // The whole current state, at the cache's revision.
            Some(true) => self.cache.since(None, &options.filter)?,
            Some(false) => {
                let from = options.from.filter(|&r| r > 0);
                let from = from.unwrap_or(self.cache.revision());
                self.cache.since(Some(from), &options.filter)?
            }
        };
        if options.initial_events == Some(true) && options.initial_events_end {
            let end = CachedEvent::initial_events_end(self.resource, self.cache.revision());
            backlog.push((Arc::new(end), Origin::Bookmark));
        }
        let buffer = options
            .buffer
            .unwrap_or_else(|| watcher::buffer_size(self.resource, &options.filter))
            .max(1);
        let (tx, rx) = mpsc::channel(backlog.len() + buffer);
        let now = self.clock.now();
        let id = self.next_watcher_id;
        self.next_watcher_id += 1;
        let mut watcher = Watcher {
            id,
            name: options.name,
            tx,
            filter: options.filter,
            after,
            next_bookmark: options
                .bookmarks
                .then(|| watcher::next_bookmark(now, options.deadline, self.bookmark_frequency))
                .flatten(),
            deadline: options.deadline,
            buffer,
            backlog: backlog.len(),
            sent: 0,
        };
        for (event, origin) in backlog {
            let d = delivery(event, origin, now, &watcher);
            let _ = watcher.push(d);
        }
        self.watchers.push(watcher);
        Ok((id, rx))
    }

    /// Ends a blocked dispatch now, as if its budget were spent: the inline
    /// schedule, where no time passes for a buffer to drain.
    pub fn close_blocked(&mut self) {
        let now = self.clock.now();
        if let Some(blocked) = &mut self.blocked {
            blocked.deadline = now;
        }
        self.retry_blocked(now);
    }

    /// Closes every watch; clients re-watch from their last resourceVersion.
    pub fn drop_watchers(&mut self) {
        self.watchers.clear();
        self.blocked = None;
    }
}

/// The rules of the Cacher's Reflector: client-go's v1.20 Reflector (the
/// store offers no streaming list), whose ListAndWatch the Cacher runs from
/// `wait.Until(..., time.Second)`: a failed one is followed by
/// [`ready::RELIST_PERIOD`], not by client-go's backoff.
fn reflector_config() -> reflector::Config {
    reflector::Config {
        wait_until_period: Some(Duration::from_micros(ready::RELIST_PERIOD)),
        ..reflector::Config::default()
    }
}

/// `event` put in `w`'s buffer now.
fn delivery(event: Arc<CachedEvent>, origin: Origin, now: Micros, w: &Watcher) -> Delivery {
    Delivery {
        event,
        origin,
        buffered_at: now,
        buffer_depth: (w.buffered() + 1) as u32,
    }
}

#[cfg(test)]
mod tests;
