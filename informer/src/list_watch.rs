//! The one list-watch driver: runs the [`Reflector`](crate::reflector)
//! machine against any server, through a small trait.
//!
//! Each place that list-watches is an adapter: it says how to LIST a page and
//! open a WATCH ([`ListerWatcher`]), where the results go ([`Sink`]: the
//! informer's FIFO), and what time it is and how to wait ([`Timer`]). The
//! machine decides every request; this driver performs them, gathers a
//! LIST's pages or a streaming list's initial events, and hands the sink
//! each effect in order. Nothing here spawns a task or reads a clock of its
//! own, so the same driver runs on tokio (the bridge), in a page, and
//! in-process against the demo control plane.
//!
//! Contract, for a sink:
//! - [`Sink::report`] calls come in the order the machine made them, between
//!   the deltas they happened between.
//! - [`Sink::replace`] gets the whole list at once (a LIST's pages joined, or
//!   a streaming list's objects as its initial events left them); deltas
//!   after it are the watch's.
//! - A delta is delivered once, in stream order; an object the watch sends
//!   before the streaming list's end goes to the next replace instead.
//! - The driver reads no further event until [`Sink::ready`] says the sink
//!   is ready: a sink with a bounded queue blocks the stream as the
//!   apiserver's Cacher blocks on its full `incoming` channel
//!   (`processEvent`), and the server's events wait in the stream meanwhile.

use crate::object::Stored;
use crate::reflector::{Config, Effect, Failure, Reflector, Request, Route, Seen, Step, WatchEnd};
use crate::reflector::{ReflectorState, silence};
use crate::{EventType, Micros};
use futures_util::future::{self, Either};
use std::collections::HashMap;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

/// One LIST page asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListRequest<'a> {
    /// "0", "" or exact; empty is sent as no resourceVersion.
    pub resource_version: &'a str,
    /// Items per page; 0 for everything at once.
    pub limit: u64,
    pub continue_token: Option<&'a str>,
}

/// One WATCH asked for, bookmarks allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchRequest<'a> {
    /// Where the watch starts; empty is sent as no resourceVersion.
    pub resource_version: &'a str,
    pub timeout_seconds: u64,
    /// A streaming list: `sendInitialEvents=true` with
    /// `resourceVersionMatch=NotOlderThan`.
    pub send_initial_events: bool,
}

/// One LIST page as read.
#[derive(Debug)]
pub struct Page<O> {
    pub items: Vec<O>,
    pub resource_version: String,
    /// Present when more pages follow.
    pub continue_token: Option<String>,
}

/// An object of a list, with the time the Reflector read it: its LIST
/// page's, or its own initial event's for a streaming list. The Reflector
/// holds it until the list is complete, then hands the whole list on.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed<O> {
    pub object: O,
    pub read_at: Micros,
}

/// One event read from a watch stream.
#[derive(Debug)]
pub enum WatchItem<O> {
    Added(O),
    Modified(O),
    Deleted(O),
    Bookmark {
        resource_version: String,
        /// Annotated [`crate::reflector::INITIAL_EVENTS_END`].
        initial_events_end: bool,
    },
    /// An ERROR event, sorted.
    Error(Failure),
}

/// What a server can be asked, as client-go's `ListerWatcher`.
pub trait ListerWatcher {
    type Object: Stored;
    /// An open watch stream, which may borrow the lister-watcher.
    type Stream<'a>: WatchStream<Self::Object>
    where
        Self: 'a;

    /// One LIST page, or why it failed.
    fn list(
        &self,
        request: ListRequest<'_>,
    ) -> impl Future<Output = Result<Page<Self::Object>, Failure>>;

    /// Opens a watch stream, or says why it was refused.
    fn watch<'a>(
        &'a self,
        request: WatchRequest<'_>,
    ) -> impl Future<Output = Result<Self::Stream<'a>, Failure>>;
}

/// An open watch stream.
pub trait WatchStream<O> {
    /// The next event; `None` when the stream ended without an error, an
    /// error when it broke or could not be read.
    fn next(&mut self) -> impl Future<Output = Option<Result<WatchItem<O>, Failure>>>;

    /// Told, just before the stream is dropped, that it said nothing for
    /// the silence bound: its connection is dead, and so may be the others
    /// opened the same way. Nothing by default.
    fn taken_for_dead(&mut self) {}
}

/// Where the driver delivers, in stream order: the informer's FIFO.
pub trait Sink<O> {
    /// The Reflector's state changed.
    fn report(&mut self, state: ReflectorState);
    /// The whole list at `resource_version` replaces the store; `at` is when
    /// the list was complete (its last page read, or its initial-events-end
    /// bookmark received), each object's `read_at` when the Reflector read
    /// it (never later than `at`).
    fn replace(&mut self, objects: Vec<Listed<O>>, resource_version: &str, at: Micros);
    /// A watch event's object; `at` is when it was read.
    fn delta(&mut self, event_type: EventType, object: O, at: Micros);
    /// A BOOKMARK or ERROR event read at `at`: it stops at the Reflector,
    /// but viewers see it pass. `resource_version` is the bookmark's, or the
    /// last synced for an error.
    fn marker(&mut self, event_type: EventType, resource_version: &str, at: Micros);
    /// A resync of the store is due.
    fn resync(&mut self);
    /// Ready once the sink can take another event. The driver awaits it
    /// before it reads each watch event, so a sink whose queue is full
    /// holds the stream back instead of growing. By default it never waits.
    fn ready(&mut self) -> impl Future<Output = ()> {
        async {}
    }
    /// The answer to a LIST (`list`) or WATCH has just come (the place to
    /// report who answered, where the server tells).
    fn answered(&mut self, _list: bool) {}
}

/// Time, as the caller keeps it.
pub trait Timer {
    fn now(&self) -> Micros;
    fn sleep(&self, duration: Duration) -> impl Future<Output = ()>;
}

/// Runs the Reflector against `lw`, delivering into `sink`, forever.
pub async fn run<L, S, T>(lw: &L, sink: &mut S, timer: &T, config: Config, seed: u64)
where
    L: ListerWatcher,
    S: Sink<L::Object>,
    T: Timer,
{
    let mut machine = Reflector::new(config, seed);
    let mut gathered = Gathered::default();
    let mut step = machine.start(timer.now());
    loop {
        apply(step.effects, &mut gathered, sink, timer);
        step = match step.request {
            Request::List {
                resource_version,
                limit,
                continue_token,
            } => {
                let request = ListRequest {
                    resource_version: &resource_version,
                    limit,
                    continue_token: continue_token.as_deref(),
                };
                let page = lw.list(request).await;
                let now = timer.now();
                match page {
                    Ok(page) => {
                        sink.answered(true);
                        let count = page.items.len() as u64;
                        gathered.extend(page.items, now);
                        machine.list_page(
                            count,
                            &page.resource_version,
                            page.continue_token.as_deref(),
                            now,
                        )
                    }
                    Err(failure) => machine.list_failed(failure, now),
                }
            }
            Request::Watch {
                resource_version,
                timeout_seconds,
                send_initial_events,
            } => {
                let request = WatchRequest {
                    resource_version: &resource_version,
                    timeout_seconds,
                    send_initial_events,
                };
                let silence = machine.silence_bound(timeout_seconds);
                match lw.watch(request).await {
                    Ok(stream) => {
                        sink.answered(false);
                        let mut reading = Watching {
                            machine: &mut machine,
                            gathered: &mut gathered,
                            silence,
                        };
                        reading.read(stream, sink, timer).await
                    }
                    Err(failure) => machine.watch_failed(failure, timer.now()),
                }
            }
            Request::Wait(delay) => {
                timer.sleep(delay).await;
                machine.waited(timer.now())
            }
        };
    }
}

/// One watch being read: the machine, the list being gathered, and how
/// long the stream may say nothing.
struct Watching<'a, O> {
    machine: &'a mut Reflector,
    gathered: &'a mut Gathered<O>,
    /// See [`crate::reflector::silence`]; `None`: the stream is trusted.
    silence: Option<Duration>,
}

/// What ended a wait for the watch's next item.
enum Woken<T> {
    Item(T),
    Resync,
    Silent(Duration),
}

impl<O: Stored> Watching<'_, O> {
    /// Reads one watch stream to its end, resyncing the store when due;
    /// a stream that says nothing for the silence bound has failed.
    async fn read<W, S, T>(&mut self, mut stream: W, sink: &mut S, timer: &T) -> Step
    where
        W: WatchStream<O>,
        S: Sink<O>,
        T: Timer,
    {
        let machine = &mut *self.machine;
        // Time spent waiting on the stream since its last item (a resync
        // between does not count as hearing from the server).
        let mut silent = Duration::ZERO;
        loop {
            sink.ready().await;
            let waiting_since = timer.now();
            let woken = wait(
                &mut stream,
                machine.resync_at(),
                self.silence,
                silent,
                timer,
            )
            .await;
            let item = match woken {
                Woken::Item(item) => {
                    silent = Duration::ZERO;
                    item
                }
                Woken::Resync => {
                    silent += Duration::from_micros(timer.now().saturating_sub(waiting_since));
                    sink.resync();
                    machine.resynced(timer.now());
                    continue;
                }
                Woken::Silent(bound) => {
                    stream.taken_for_dead();
                    let failure = Failure::Other(silence::silent_for(bound));
                    return machine.watch_ended(WatchEnd::Failed(failure), timer.now());
                }
            };
            let at = timer.now();
            let (event_type, object) = match item {
                None => return machine.watch_ended(WatchEnd::Closed, at),
                Some(Err(failure)) => return machine.watch_ended(WatchEnd::Failed(failure), at),
                Some(Ok(WatchItem::Error(failure))) => {
                    sink.marker(EventType::Error, machine.last_sync_resource_version(), at);
                    return machine.watch_ended(WatchEnd::Failed(failure), at);
                }
                Some(Ok(WatchItem::Bookmark {
                    resource_version,
                    initial_events_end,
                })) => {
                    let seen = Seen::Bookmark {
                        resource_version: &resource_version,
                        initial_events_end,
                    };
                    let (_, effects) = machine.observe(seen, at);
                    sink.marker(EventType::Bookmark, &resource_version, at);
                    apply(effects, self.gathered, sink, timer);
                    continue;
                }
                Some(Ok(WatchItem::Added(o))) => (EventType::Added, o),
                Some(Ok(WatchItem::Modified(o))) => (EventType::Modified, o),
                Some(Ok(WatchItem::Deleted(o))) => (EventType::Deleted, o),
            };
            // The resourceVersion is read in place: nothing is copied per event.
            let (route, effects) = {
                let rv = object.resource_version();
                let seen = match event_type {
                    EventType::Added => Seen::Added(rv),
                    EventType::Deleted => Seen::Deleted(rv),
                    _ => Seen::Modified(rv),
                };
                machine.observe(seen, at)
            };
            match route {
                Route::Deliver => sink.delta(event_type, object, at),
                Route::Gather => self.gathered.apply(event_type, object, at),
            }
            apply(effects, self.gathered, sink, timer);
        }
    }
}

/// Waits for the watch's next item, a resync due at `resync_at`, or the
/// end of the `silence` bound of which `silent` has passed already.
async fn wait<O, W: WatchStream<O>, T: Timer>(
    stream: &mut W,
    resync_at: Option<Micros>,
    silence: Option<Duration>,
    silent: Duration,
    timer: &T,
) -> Woken<Option<Result<WatchItem<O>, Failure>>> {
    let next = pin!(stream.next());
    let resync = pin!(resync_due(resync_at, timer));
    let left = silence.map(|bound| bound.saturating_sub(silent));
    let silence_over = pin!(silence_due(left, timer));
    match future::select(next, future::select(resync, silence_over)).await {
        Either::Left((item, _)) => Woken::Item(item),
        Either::Right((Either::Left(((), _)), _)) => Woken::Resync,
        Either::Right((Either::Right(((), _)), _)) => Woken::Silent(silence.unwrap_or_default()),
    }
}

/// Carries out the machine's effects, in order.
fn apply<O: Stored, S: Sink<O>, T: Timer>(
    effects: Vec<Effect>,
    gathered: &mut Gathered<O>,
    sink: &mut S,
    timer: &T,
) {
    for effect in effects {
        match effect {
            Effect::Report(state) => sink.report(state),
            Effect::DiscardPages => gathered.clear(),
            Effect::Replace { resource_version } => {
                sink.replace(gathered.take(), &resource_version, timer.now())
            }
        }
    }
}

/// Waits out what is `left` of the silence bound; forever when there is none.
async fn silence_due<T: Timer>(left: Option<Duration>, timer: &T) {
    match left {
        Some(left) => timer.sleep(left).await,
        None => future::pending().await,
    }
}

/// Waits until the next resync is due; forever when none is.
async fn resync_due<T: Timer>(at: Option<Micros>, timer: &T) {
    match at {
        Some(at) => {
            let wait = Duration::from_micros(at.saturating_sub(timer.now()));
            timer.sleep(wait).await
        }
        None => future::pending().await,
    }
}

/// The objects of the list being read: a LIST's pages, or a streaming list's
/// initial events applied as client-go's `temporaryStore` applies them.
#[derive(Debug)]
struct Gathered<O> {
    objects: Vec<Listed<O>>,
    /// Where each key is in `objects`, once a streaming list needs it.
    positions: HashMap<Arc<str>, usize>,
}

impl<O> Default for Gathered<O> {
    fn default() -> Self {
        Gathered {
            objects: Vec::new(),
            positions: HashMap::new(),
        }
    }
}

impl<O: Stored> Gathered<O> {
    /// A LIST page's items, read at `read_at`.
    fn extend(&mut self, items: Vec<O>, read_at: Micros) {
        self.objects
            .extend(items.into_iter().map(|object| Listed { object, read_at }));
    }

    /// A streaming list's initial event, read at `read_at`: ADDED and
    /// MODIFIED store the object under its key, DELETED removes it.
    fn apply(&mut self, event_type: EventType, object: O, read_at: Micros) {
        if self.positions.len() != self.objects.len() {
            self.index();
        }
        let key = object.key();
        match (event_type, self.positions.get(&key).copied()) {
            (EventType::Deleted, Some(at)) => {
                self.objects.swap_remove(at);
                self.positions.remove(&key);
                if let Some(moved) = self.objects.get(at) {
                    self.positions.insert(moved.object.key(), at);
                }
            }
            (EventType::Deleted, None) => {}
            (_, Some(at)) => self.objects[at] = Listed { object, read_at },
            (_, None) => {
                self.positions.insert(key, self.objects.len());
                self.objects.push(Listed { object, read_at });
            }
        }
    }

    fn index(&mut self) {
        self.positions = self
            .objects
            .iter()
            .enumerate()
            .map(|(i, listed)| (listed.object.key(), i))
            .collect();
    }

    fn take(&mut self) -> Vec<Listed<O>> {
        self.positions.clear();
        std::mem::take(&mut self.objects)
    }

    fn clear(&mut self) {
        self.positions.clear();
        self.objects.clear();
    }
}

#[cfg(test)]
mod tests;
