//! The page's Reflectors: the informer crate's one list-watch driver
//! ([`watchlife_informer::list_watch`]) adapted to the page.
//!
//! - [`PageServer`] lists and watches the page's control plane as a client
//!   of its apiserver would: a LIST is planned and read as the control
//!   plane's release plans it (the watch cache or the store), a WATCH (or,
//!   where the release has the `WatchList` gate, a streaming list) is served
//!   by the resource's Cacher. It keeps who answered each request, for the
//!   sink to report.
//! - [`PageSink`] feeds what the driver delivers into the page's informer
//!   stages: Reflector states as notes, a list as one replace, each watch
//!   event stamped with the server-side stages its Cacher recorded.
//! - [`PageTimer`] is the browser's clock and its timers.
//!
//! The rules (what to ask, when to relist, how long to back off) are the
//! Reflector machine's, for the control plane's own release.

use super::{Page, Stages, WATCHER_NAME};
use futures::StreamExt;
use futures::stream::LocalBoxStream;
use std::cell::RefCell;
use std::time::Duration;
use watchlife_controlplane::control_plane::ServedFrom;
use watchlife_controlplane::list::{ListOptions, ListPlan};
use watchlife_controlplane::list_cache;
use watchlife_controlplane::{
    ApiError, Clock, ControlPlane, Delivery, Gate, Origin, ResourceType, Revision, WatchOptions,
};
use watchlife_informer::list_watch::{
    self, ListRequest, Listed, ListerWatcher, Page as ListPage, Sink, Timer, WatchItem,
    WatchRequest, WatchStream,
};
use watchlife_informer::object::Stored;
use watchlife_informer::reflector::{Config, Failure, INITIAL_EVENTS_END, ReflectorState};
use watchlife_informer::{EventType, Micros, Object};
use watchlife_protocol::{
    self as wire, ObjectRef, ServerAnswer, ServerPath, Stage, StageMark, StageTimes, WatchEvent,
};

/// What a server without the `WatchList` gate answers a streaming list
/// (422), worded as the controllers' in-process adapter words it: the
/// Reflector then falls back to LIST, then WATCH.
const STREAMING_LIST_REFUSED: &str =
    "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled (422)";

/// Why a watch ends when its Cacher sends an ERROR event.
const CACHE_ENDED_WATCH: &str = "the watch cache ended the watch";

/// Events of a streaming list's backlog that are not initial events: the
/// BOOKMARK that ends them.
const INITIAL_EVENTS_END_BOOKMARKS: usize = 1;

/// The longest wait a browser timer keeps: `setTimeout` takes a signed
/// 32-bit count of milliseconds, and fires at once when given more.
const LONGEST_TIMER: Duration = Duration::from_millis(i32::MAX as u64);

/// ListAndWatch of `stages`' resource for the life of the page: the one
/// driver, with the rules of the control plane's release. Never returns.
pub(super) async fn list_and_watch(page: Page, stages: Stages) {
    let rt = stages.rt;
    // Jitter that differs between the page's Reflectors and between loads.
    let seed = rt.plural.len() as u64 ^ page.clock.now();
    let config = Config::for_profile(page.cp.profile());
    let server = PageServer::new(page.cp.clone(), rt, PageTimer(page.clock.clone()));
    let mut sink = PageSink {
        page: &page,
        stages: &stages,
        server: &server,
    };
    list_watch::run(&server, &mut sink, &server.timer, config, seed).await
}

/// An object as the page's Reflector read it.
#[derive(Debug, Clone)]
pub(super) struct Read {
    object: Object,
    /// How the Cacher carried it, when it came on a watch; `None` for a
    /// LIST's item.
    carried: Option<Delivery>,
    /// When the page's end of the watch took it from the watcher's buffer:
    /// the stream's write, read on the control plane's clock apart from the
    /// Reflector's own read. 0 for a LIST's item.
    written_at: Micros,
}

impl Stored for Read {
    fn key(&self) -> std::sync::Arc<str> {
        Stored::key(&self.object)
    }

    fn resource_version(&self) -> &str {
        Stored::resource_version(&self.object)
    }
}

/// The page's control plane, asked as its apiserver is asked.
///
/// Contract: after each successful [`ListerWatcher::list`] or
/// [`ListerWatcher::watch`], [`PageServer::take_answer`] returns who
/// answered it, once. Each request first gives the page's event loop a
/// turn (a sleep of zero on `timer`), as a request to a server takes a
/// round trip; a watch also ends at its timeout by `timer`.
pub(super) struct PageServer<T> {
    cp: ControlPlane,
    rt: ResourceType,
    timer: T,
    /// Who answered the last request, until the sink reports it.
    answer: RefCell<Option<ServerAnswer>>,
}

impl<T: Timer> PageServer<T> {
    fn new(cp: ControlPlane, rt: ResourceType, timer: T) -> Self {
        PageServer {
            cp,
            rt,
            timer,
            answer: RefCell::new(None),
        }
    }

    /// Who answered the request that just succeeded, if not yet taken.
    fn take_answer(&self) -> Option<ServerAnswer> {
        self.answer.borrow_mut().take()
    }
}

impl<T: Timer> ListerWatcher for PageServer<T> {
    type Object = Read;
    type Stream<'a>
        = PageWatch<'a>
    where
        T: 'a;

    /// One LIST page, read where the control plane's release reads it.
    /// Nothing waits for the watch cache to catch up (a consistent read it
    /// has not reached is read from the store), nor for a Cacher to become
    /// ready: no demo action makes one unready.
    async fn list(&self, request: ListRequest<'_>) -> Result<ListPage<Read>, Failure> {
        self.timer.sleep(Duration::ZERO).await;
        // As a client sends it: no resourceVersion when empty or with a
        // continue token (the token carries the revision), no limit for 0.
        let resource_version = Some(request.resource_version)
            .filter(|rv| !rv.is_empty() && request.continue_token.is_none());
        let opts = ListOptions {
            resource_version: resource_version.map(String::from),
            limit: Some(request.limit).filter(|&limit| limit > 0),
            continue_token: request.continue_token.map(String::from),
            ..ListOptions::default()
        };
        let plan = list_cache::plan_for(&opts, &self.cp.profile()).map_err(failure_of)?;
        // A consistent read must reach the store's revision as it is now.
        let consistent = matches!(plan, ListPlan::Consistent { .. }).then(|| self.cp.revision());
        let (list, served) = self
            .cp
            .list_planned(self.rt, None, &opts, plan)
            .map_err(failure_of)?;
        let items = list.items.len() as u64;
        *self.answer.borrow_mut() = Some(list_answer(
            request.resource_version,
            items,
            served,
            consistent,
        ));
        Ok(ListPage {
            items: list
                .items
                .iter()
                .map(|object| Read {
                    object: Object::from_value(object),
                    carried: None,
                    written_at: 0,
                })
                .collect(),
            resource_version: list.resource_version.to_string(),
            continue_token: list.continue_token,
        })
    }

    /// A WATCH through the resource's Cacher, with bookmarks, ending at its
    /// timeout on both sides; a streaming list when asked, refused with the
    /// apiserver's 422 unless the control plane has the `WatchList` gate.
    async fn watch<'a>(&'a self, request: WatchRequest<'_>) -> Result<PageWatch<'a>, Failure> {
        self.timer.sleep(Duration::ZERO).await;
        let from = request.resource_version.parse().unwrap_or(0);
        let timeout = Duration::from_secs(request.timeout_seconds);
        let mut options = WatchOptions {
            bookmarks: true,
            deadline: Some(
                self.timer
                    .now()
                    .saturating_add(timeout.as_micros().min(Micros::MAX as u128) as Micros),
            ),
            ..WatchOptions::named(WATCHER_NAME, Some(from))
        };
        if request.send_initial_events {
            if !self.cp.profile().enabled(Gate::WatchList) {
                return Err(Failure::Other(STREAMING_LIST_REFUSED.into()));
            }
            options.initial_events = Some(true);
            options.initial_events_end = true;
        }
        let (_, deliveries) = self.cp.watch_opts(self.rt, options).map_err(failure_of)?;
        let backlog = deliveries.len();
        *self.answer.borrow_mut() = Some(watch_answer(
            request.resource_version,
            from,
            backlog,
            request.send_initial_events,
        ));
        // The page's end of the watch: its timeout, as the server's.
        let deadline = self.timer.sleep(timeout);
        let deliveries = futures::stream::unfold(deliveries, |mut rx| async move {
            rx.recv().await.map(|delivery| (delivery, rx))
        })
        .take_until(deadline)
        .boxed_local();
        Ok(PageWatch {
            deliveries,
            clock: self.cp.clock().clone(),
        })
    }
}

/// Who answered a LIST of `items` asked at `asked`: served as `served`;
/// `consistent` is the store's revision a consistent read had to reach.
fn list_answer(
    asked: &str,
    items: u64,
    served: ServedFrom,
    consistent: Option<Revision>,
) -> ServerAnswer {
    let asked = asked.to_string();
    match (served, consistent) {
        (served, Some(store_revision)) => {
            let (revision, from_cache) = match served {
                ServedFrom::WatchCache { revision, .. } => (revision, true),
                ServedFrom::Store { revision } => (revision, false),
            };
            ServerAnswer::ConsistentList {
                asked,
                store_revision,
                revision,
                items,
                waited_micros: 0,
                from_cache,
            }
        }
        (ServedFrom::WatchCache { revision, waited }, None) => ServerAnswer::ListFromWatchCache {
            asked,
            revision,
            items,
            waited_micros: waited,
        },
        (ServedFrom::Store { revision }, None) => ServerAnswer::ListFromEtcd {
            asked,
            revision,
            items,
        },
    }
}

/// Who answered a WATCH asked at `asked` (`from` as a revision) that
/// started with `backlog` events already queued: synthetic ADDEDs for a
/// watch from "any" or a streaming list (whose backlog ends with the
/// initial-events-end BOOKMARK, not counted), else events replayed from the
/// watch cache's window.
fn watch_answer(asked: &str, from: Revision, backlog: usize, streaming: bool) -> ServerAnswer {
    let asked = asked.to_string();
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    if streaming {
        ServerAnswer::WatchSynthetic {
            asked,
            events: count(backlog.saturating_sub(INITIAL_EVENTS_END_BOOKMARKS)),
        }
    } else if from == 0 {
        ServerAnswer::WatchSynthetic {
            asked,
            events: count(backlog),
        }
    } else {
        ServerAnswer::WatchReplayed {
            asked,
            events: count(backlog),
        }
    }
}

/// How a request to the control plane failed, sorted as client-go sorts
/// the apiserver's answer.
fn failure_of(error: ApiError) -> Failure {
    match error {
        ApiError::Gone(message) => Failure::Expired(message),
        e @ ApiError::TooLargeResourceVersion { .. } => {
            Failure::TooLargeResourceVersion(e.to_string())
        }
        e @ ApiError::NotReady { .. } => Failure::TooManyRequests(e.to_string()),
        e => Failure::Other(e.to_string()),
    }
}

/// One watch on a Cacher, as the page reads it. Ends when the Cacher drops
/// the watch (its deadline, too slow, a relist of the cache) or at the
/// page's own timeout.
pub(super) struct PageWatch<'a> {
    deliveries: LocalBoxStream<'a, Delivery>,
    /// The control plane's clock, on which each event's writing is read.
    clock: Clock,
}

impl WatchStream<Read> for PageWatch<'_> {
    async fn next(&mut self) -> Option<Result<WatchItem<Read>, Failure>> {
        let delivery = self.deliveries.next().await?;
        let written_at = self.clock.now();
        let event = &delivery.event;
        let event_type = event.event_type;
        if event_type == wire::EventType::Bookmark {
            return Some(Ok(WatchItem::Bookmark {
                resource_version: event.revision.to_string(),
                initial_events_end: event.object["metadata"]["annotations"][INITIAL_EVENTS_END]
                    == "true",
            }));
        }
        if event_type == wire::EventType::Error {
            return Some(Err(Failure::Other(CACHE_ENDED_WATCH.into())));
        }
        let read = Read {
            object: Object::from_value(&event.object),
            carried: Some(delivery),
            written_at,
        };
        Some(Ok(match event_type {
            wire::EventType::Added => WatchItem::Added(read),
            wire::EventType::Deleted => WatchItem::Deleted(read),
            _ => WatchItem::Modified(read),
        }))
    }
}

/// Where the page's driver delivers: the informer's FIFO of `stages`, in
/// stream order, waking its processing loop.
pub(super) struct PageSink<'a> {
    page: &'a Page,
    stages: &'a Stages,
    server: &'a PageServer<PageTimer>,
}

impl Sink<Read> for PageSink<'_> {
    fn report(&mut self, state: ReflectorState) {
        self.page.note(self.stages, state);
    }

    /// The list's objects as ADDED events of the initial list, each stamped
    /// with the time the Reflector read it; the FIFO has them all at `at`,
    /// when the list was complete. A listed object is state, not a change:
    /// a streaming list's initial event shows its watcher's buffer and the
    /// stream it was written to, but no commit.
    fn replace(&mut self, objects: Vec<Listed<Read>>, _resource_version: &str, at: Micros) {
        let rt = self.stages.rt;
        let items = objects
            .into_iter()
            .map(
                |Listed {
                     object: read,
                     read_at,
                 }| {
                    let mut event = watch_event(rt, wire::EventType::Added, &read.object, read_at);
                    if let Some(delivery) = &read.carried {
                        stamp_server_path(&mut event, delivery, read.written_at);
                    }
                    event.initial = true;
                    (event, read.object)
                },
            )
            .collect();
        self.stages.informer.borrow_mut().enqueue_list(items, at);
        self.stages.fifo.wake();
    }

    /// One watch event: written to the stream when the page's end of the
    /// watch took it from the watcher's buffer, read by the Reflector at
    /// `at`: two reads of the clock, as the page has no wire between them.
    fn delta(&mut self, event_type: EventType, read: Read, at: Micros) {
        let mut event = watch_event(self.stages.rt, event_type, &read.object, at);
        if let Some(delivery) = &read.carried {
            stamp_server_path(&mut event, delivery, read.written_at);
        }
        self.stages
            .informer
            .borrow_mut()
            .enqueue(event, read.object, self.page.clock.now());
        self.stages.fifo.wake();
    }

    /// Nothing more to show: a BOOKMARK passing is the Reflector's own
    /// report of it ([`ReflectorState::Bookmark`]), and an ERROR's is the
    /// report of the watch it ended.
    fn marker(&mut self, _event_type: EventType, _resource_version: &str, _at: Micros) {}

    fn resync(&mut self) {
        let now = self.page.clock.now();
        self.stages.informer.borrow_mut().enqueue_resync(now);
        self.stages.fifo.wake();
    }

    fn answered(&mut self, _list: bool) {
        if let Some(answer) = self.server.take_answer() {
            self.page
                .note(self.stages, wire::ReflectorState::Answered { answer });
        }
    }
}

/// The server-side stages of a watch event, as the Cacher recorded them:
/// the commit and the watch cache (for a change), the dispatch (for a live
/// event), the watcher's buffer, and its writing at `written`.
fn stamp_server_path(event: &mut WatchEvent, delivery: &Delivery, written: Micros) {
    let cached = &delivery.event;
    let origin = match delivery.origin {
        Origin::Replayed => watchlife_protocol::Origin::Replayed,
        Origin::Synthetic => watchlife_protocol::Origin::Synthetic,
        _ => watchlife_protocol::Origin::Live,
    };
    if let Some(t) = cached.times {
        event.stages.extend([
            (Stage::Etcd, StageMark::at(t.committed_at)),
            (
                Stage::WatchCache,
                StageMark {
                    at: t.cached_at,
                    depth: Some(t.incoming_depth),
                },
            ),
        ]);
    }
    event.stages.insert(
        Stage::WatchStream,
        StageMark {
            at: written,
            depth: Some(delivery.buffer_depth),
        },
    );
    event.server = Some(Box::new(ServerPath {
        origin,
        reflected: cached.times.map(|t| t.reflected_at),
        dispatched: cached
            .dispatched_at()
            .filter(|_| origin == watchlife_protocol::Origin::Live)
            .map(|at| StageMark {
                at,
                depth: cached.times.map(|t| t.incoming_depth),
            }),
        buffered: StageMark {
            at: delivery.buffered_at,
            depth: Some(delivery.buffer_depth),
        },
        written,
    }));
}

/// The event the Reflector makes of an object, stamped at `now`.
fn watch_event(
    rt: ResourceType,
    event_type: wire::EventType,
    object: &Object,
    now: Micros,
) -> WatchEvent {
    let meta = object.meta();
    WatchEvent {
        event_type,
        target: ObjectRef {
            resource: rt.qualified_name(),
            kind: rt.kind.to_string(),
            namespace: meta.namespace().map(String::from),
            name: meta.name().to_string(),
        },
        resource_version: meta.resource_version.to_string(),
        object: object.json().clone(),
        stages: StageTimes::from([(Stage::Reflector, StageMark::at(now))]),
        initial: false,
        coalesced: false,
        handled: Default::default(),
        patch: None,
        server: None,
    }
}

/// The page's clock, and the browser's timers: a sleep of zero gives the
/// page's event loop a turn.
pub(super) struct PageTimer(Clock);

impl Timer for PageTimer {
    fn now(&self) -> Micros {
        self.0.now()
    }

    async fn sleep(&self, duration: Duration) {
        gloo_timers::future::sleep(duration.min(LONGEST_TIMER)).await
    }
}

#[cfg(test)]
mod tests;
