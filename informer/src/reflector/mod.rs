//! The Reflector: client-go's `ListAndWatch` as a state machine that does
//! no IO, with the rules of the release its [`Profile`] names.
//!
//! **v1.20** (`tools/cache/reflector.go` of client-go v1.20.2): LIST, then
//! WATCH.
//!
//! ```text
//!                 ┌──────────── Wait (backoffManager: 0.8 s doubling to 30 s) ◄──────────┐
//!                 ▼                                                                       │
//!   LIST from relistResourceVersion() ──ok──► WATCH from the last RV ──410 / error──► cycle ends
//!     │  ("0" first; the last RV after;          │  ▲     │ closed normally            ▲
//!     │   "" once a LIST said expired)           │  │     └──► re-WATCH at once       │
//!     │ expired / too large: once, at once       │  └─ connection refused:            │
//!     └──► LIST from "" ────────────────────────►│     Wait (initConnBackoffManager)  │
//!     └── any other error ──────────────────────────────────────────────────────────┘
//! ```
//!
//! **v1.36** (client-go v0.36.4, `reflector.go`: `ListAndWatchWithContext`,
//! `watchList`, `watch`), with `WatchListClient` on: a cycle opens a
//! *streaming list*, one WATCH with `sendInitialEvents=true`,
//! `resourceVersionMatch=NotOlderThan` from `rewatchResourceVersion()` ("" at
//! first). Its first events are the current objects as synthetic ADDEDs,
//! which the driver gathers apart (client-go's `temporaryStore`); the BOOKMARK
//! annotated `k8s.io/initial-events-end: "true"` closes the initial list, the
//! gathered objects replace the store at its resourceVersion, and the same
//! stream goes on as a plain watch.
//!
//! ```text
//!   WATCH sendInitialEvents from rewatchResourceVersion() ─ADDED…─► gathered
//!     │ initial-events-end BOOKMARK ──► Replace, keep watching on the same stream
//!     │ closed before it ──► stream again at once
//!     │ 410 / too large ──► unavailable: stream again at once from ""
//!     │ connection refused / 429 ──► Wait (the one backoff), stream again
//!     └ anything else (422: the server has no WatchList; 403; a very short
//!       watch) ──► fall back, in the same cycle, to v1.20's LIST, then WATCH
//! ```
//!
//! With the gate off, v1.36 lists as v1.20 does. Its watch differs in two
//! ways: a 429 (refused or in the stream) waits and watches again instead
//! of ending the cycle, and one backoff (`delayHandler`) paces both the
//! cycles and those retries, where v1.20 had a second one for
//! "connection refused".
//!
//! A driver performs what [`Step::request`] asks (a LIST page, a WATCH, a
//! wait) and tells the machine how it went; it applies [`Step::effects`] in
//! order: reports for viewers, and "replace the store with the objects
//! gathered". [`crate::list_watch`] is the one driver, over a small
//! list-watch trait that each place adapts.
//!
//! The rules shared by both releases, each as client-go has it:
//! - The first LIST asks for resourceVersion "0" (any state the watch cache
//!   holds), in pages of 500 (the watch cache ignores the limit for "0").
//! - A later LIST asks for the last resourceVersion seen, **unpaged**: only
//!   an unpaged LIST from a resourceVersion can be served by the watch cache;
//!   a paged one goes to etcd at exactly that revision (an apiserver restart
//!   would otherwise turn into a LIST storm against etcd).
//! - A LIST that answers "expired" or "too large resource version" is asked
//!   again at once from "" (a consistent read), with the same page size; the
//!   next cycles list from "" until a LIST succeeds.
//! - A continuation page that answers "expired" is replaced by the whole list,
//!   unpaged, at the resourceVersion first asked (the pager's fallback).
//! - A WATCH goes from the LIST's resourceVersion, then from the last one an
//!   event or BOOKMARK carried, with bookmarks, timing out after a random
//!   5–10 minutes. A watch that closes normally is started again at once.
//! - Anything else that ends a watch (an ERROR event such as 410 Gone, a
//!   watch that closed within a second with no event, a refused WATCH) ends
//!   the list-watch cycle, and so does a failed LIST: the next cycle begins
//!   after the backoff (`wait.BackoffUntil`, v1.36's `delayHandler.Until`),
//!   or after [`Config::wait_until_period`] for a caller that runs each
//!   cycle from `wait.Until` (the apiserver's Cacher).

pub mod backoff;
mod failure;
pub mod silence;

use crate::Micros;
use crate::profile::{Profile, Release};
use backoff::Backoff;
use std::time::Duration;

pub use failure::{Failure, WatchEnd};
pub use silence::SilentWatch;
pub use watchlife_watch::ReflectorState;

/// Shortest server-side timeout asked for a watch: each watch asks for a
/// random time between this and twice this (client-go's `minWatchTimeout`,
/// 5 minutes), so that many clients do not all re-watch at once.
pub const MIN_WATCH_TIMEOUT: Duration = Duration::from_secs(300);

/// Items per LIST page: client-go's pager asks for 500.
pub const PAGE_SIZE: u64 = 500;

/// A watch that ends sooner than this with no event is an error, not a
/// normal close (client-go: "very short watch").
pub const SHORT_WATCH: Duration = Duration::from_secs(1);

/// The annotation of the BOOKMARK that ends a streaming list's initial
/// events (`metav1.InitialEventsAnnotationKey`).
pub const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// How a Reflector behaves.
#[derive(Debug, Clone)]
pub struct Config {
    /// See [`MIN_WATCH_TIMEOUT`]. Shorter only for demos and tests.
    pub min_watch_timeout: Duration,
    /// See [`PAGE_SIZE`].
    pub page_size: u64,
    /// client-go's `Reflector.WatchListPageSize`: when not zero, every LIST
    /// is paged by it, a relist from a resourceVersion included (which the
    /// watch cache then cannot serve: the store answers, at exactly that
    /// revision, or 410 once it is compacted). Zero, the default, leaves
    /// the pager's choice ([`PAGE_SIZE`], or unpaged from a resourceVersion).
    pub watch_list_page_size: u64,
    /// How often the store is resynced while watching; zero for never (the
    /// default of most controllers).
    pub resync_period: Duration,
    /// The release (and gates) whose rules apply.
    pub profile: Profile,
    /// How a failed list-watch cycle is followed. `None`, client-go's
    /// `Reflector.Run`: by the backoff (`wait.BackoffUntil` with the
    /// backoff manager, see [`backoff`]). `Some(period)`: by exactly
    /// `period`, with no jitter and no growth, as for a caller that runs
    /// each `ListAndWatch` from `wait.Until(f, period, stopCh)`; the
    /// apiserver's Cacher does, with one second
    /// (`wait.Until(func() { c.startCaching(stopCh) }, time.Second, stopCh)`,
    /// `NewCacherFromConfig` in `cacher.go`, v1.20.2 and v0.36.4). Waits
    /// within a cycle (a refused WATCH tried again) keep their backoff.
    pub wait_until_period: Option<Duration>,
    /// When a watch that says nothing is taken for dead (see [`silence`]):
    /// never by default, for in-process streams; a client over a network
    /// takes [`SilentWatch::ByRelease`].
    pub silent_watch: SilentWatch,
    /// The longest base delay of the backoff ([`backoff::CAP`], client-go's
    /// 30 s). Lower only for drills and tests that fail the source again
    /// and again within two minutes; the first delay stays 0.8 s.
    pub backoff_cap: Duration,
}

impl Default for Config {
    /// client-go v1.20.2's Reflector: LIST, then WATCH. The rules of a
    /// client that never streams lists, as the apiserver's own Cacher (its
    /// storage offers no initial events) and the in-process drivers; a
    /// client of a cluster takes [`Config::for_profile`].
    fn default() -> Self {
        Config::for_profile(Profile::new(Release::V1_20))
    }
}

impl Config {
    /// client-go's defaults, with the rules of `profile`.
    pub fn for_profile(profile: Profile) -> Self {
        Config {
            min_watch_timeout: MIN_WATCH_TIMEOUT,
            page_size: PAGE_SIZE,
            watch_list_page_size: 0,
            resync_period: Duration::ZERO,
            profile,
            wait_until_period: None,
            silent_watch: SilentWatch::Trusted,
            backoff_cap: backoff::CAP,
        }
    }

    /// How long a watch that asked for `timeout_seconds` may say nothing
    /// before it is taken for dead; `None` when silence is trusted. A
    /// request, or a read of its body, is held to the same bound.
    pub fn silence_bound(&self, timeout_seconds: u64) -> Option<Duration> {
        self.silent_watch
            .bound(self.profile.release(), timeout_seconds)
    }
}

/// What the driver must do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// One LIST page. `limit` 0 asks for everything at once.
    List {
        resource_version: String,
        limit: u64,
        continue_token: Option<String>,
    },
    /// A WATCH with bookmarks allowed; with `send_initial_events`, a
    /// streaming list (`sendInitialEvents=true`,
    /// `resourceVersionMatch=NotOlderThan`; an empty `resource_version` is
    /// then sent as no resourceVersion at all, asking for the most recent).
    Watch {
        resource_version: String,
        timeout_seconds: u64,
        send_initial_events: bool,
    },
    /// Sleep, then call [`Reflector::waited`].
    Wait(Duration),
}

/// What the driver must do to the store and tell viewers, in this order,
/// before it performs the next request.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Tell viewers (in stream order with the deltas).
    Report(ReflectorState),
    /// The objects gathered since the LIST (or the streaming list) started
    /// are the whole list, at this resourceVersion: replace the store with
    /// them (client-go's `syncWith`, or `store.Replace(temporaryStore.List())`).
    Replace { resource_version: String },
    /// The objects gathered are void: the list is asked again.
    DiscardPages,
}

/// The machine's answer to each input.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub effects: Vec<Effect>,
    pub request: Request,
}

/// One event read from a watch stream, as the machine needs to know it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen<'a> {
    Added(&'a str),
    Modified(&'a str),
    Deleted(&'a str),
    /// A BOOKMARK; `initial_events_end` when it carries the
    /// [`INITIAL_EVENTS_END`] annotation.
    Bookmark {
        resource_version: &'a str,
        initial_events_end: bool,
    },
}

impl<'a> Seen<'a> {
    pub fn resource_version(&self) -> &'a str {
        match *self {
            Seen::Added(rv) | Seen::Modified(rv) | Seen::Deleted(rv) => rv,
            Seen::Bookmark {
                resource_version, ..
            } => resource_version,
        }
    }
}

/// Where the driver puts an object event's object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// To the store (the FIFO), as a delta.
    Deliver,
    /// Among the objects gathered for the next [`Effect::Replace`] (the
    /// initial events of a streaming list): added or updated there for
    /// ADDED and MODIFIED, removed for DELETED.
    Gather,
}

/// Where the machine is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    /// Not started.
    Idle,
    Listing(Listing),
    /// A streaming list's initial events are coming in.
    Streaming(Streaming),
    Watching {
        started: Micros,
        events: u64,
    },
    /// Waiting to stream again after "connection refused" or 429.
    WaitingToStream,
    /// Waiting to watch again after "connection refused" (or, in v1.36, 429).
    WaitingToWatch,
    /// Waiting between two list-watch cycles.
    WaitingToList,
}

/// One LIST of a cycle, across its pages and its retry.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Listing {
    /// The resourceVersion the cycle's LIST asked for first.
    asked: String,
    /// The page size the cycle's pager uses.
    limit: u64,
    /// True once the LIST was asked again from "".
    retried: bool,
    /// True once a page came with a continue token.
    paginated: bool,
    /// True while the pages being read are continuation pages.
    continuing: bool,
    /// Items in the pages gathered.
    items: u64,
}

/// One streaming list, until its initial-events-end bookmark.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Streaming {
    /// The resourceVersion asked for ("" for the most recent).
    asked: String,
    started: Micros,
    /// Events read on this stream.
    events: u64,
    /// Objects gathered (ADDED less DELETED).
    items: u64,
    /// The resourceVersion of the last event other than ADDED: the initial
    /// ADDEDs come in no order of resourceVersion (`watchList`'s
    /// `resourceVersion`, set only when `eventReceivedBesidesAdded`).
    resource_version: String,
}

/// Counts a viewer may show of one Reflector's life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub lists: u64,
    /// WATCH requests, streaming lists included.
    pub watches: u64,
    pub events: u64,
    pub cycles_failed: u64,
    /// Streaming lists asked for.
    pub streaming_lists: u64,
}

/// The Reflector of one resource. See the module documentation.
#[derive(Debug, Clone)]
pub struct Reflector {
    config: Config,
    phase: Phase,
    /// client-go's `lastSyncResourceVersion`: the list's, then each event's.
    last_sync: String,
    /// client-go's `isLastSyncResourceVersionUnavailable`.
    last_sync_unavailable: bool,
    /// client-go's `paginatedResult`: a LIST from "0" came back in pages, so
    /// the server has no watch cache for this resource; keep paging.
    paginated_result: bool,
    /// `backoffManager` (v1.20), `delayHandler` (v1.36): between list-watch
    /// cycles, and in v1.36 also before retrying a refused watch.
    backoff: Backoff,
    /// v1.20's `initConnBackoffManager`: between WATCHes refused for
    /// "connection refused".
    conn_backoff: Backoff,
    /// Why the last cycle ended, said when the next one starts.
    ended_because: Option<String>,
    resync_at: Option<Micros>,
    random: SplitMix64,
    stats: Stats,
}

impl Reflector {
    /// A Reflector whose jitter comes from `seed` (any value; a driver
    /// gives a random one, a test a fixed one).
    pub fn new(config: Config, seed: u64) -> Self {
        Reflector {
            backoff: Backoff::capped(config.backoff_cap),
            conn_backoff: Backoff::capped(config.backoff_cap),
            config,
            phase: Phase::Idle,
            last_sync: String::new(),
            last_sync_unavailable: false,
            paginated_result: false,
            ended_because: None,
            resync_at: None,
            random: SplitMix64(seed),
            stats: Stats::default(),
        }
    }

    /// The rules this machine follows.
    pub fn profile(&self) -> Profile {
        self.config.profile
    }

    /// The first request.
    pub fn start(&mut self, now: Micros) -> Step {
        debug_assert_eq!(self.phase, Phase::Idle, "started twice");
        let mut effects = Vec::new();
        let request = self.begin_cycle(now, &mut effects);
        Step { effects, request }
    }

    /// A LIST page came back with `items` objects, the list's
    /// resourceVersion, and a continue token when more pages follow.
    pub fn list_page(
        &mut self,
        items: u64,
        resource_version: &str,
        continue_token: Option<&str>,
        now: Micros,
    ) -> Step {
        let Phase::Listing(listing) = &mut self.phase else {
            return self.out_of_turn("a LIST page");
        };
        listing.items += items;
        if let Some(token) = continue_token.filter(|t| !t.is_empty()) {
            listing.paginated = true;
            listing.continuing = true;
            // The pager sends no resourceVersion with a continue token: the
            // token carries it.
            return Step {
                effects: Vec::new(),
                request: Request::List {
                    resource_version: String::new(),
                    limit: listing.limit,
                    continue_token: Some(token.to_string()),
                },
            };
        }
        let listing = listing.clone();
        if listing.asked == "0" && listing.paginated {
            self.paginated_result = true;
        }
        self.last_sync_unavailable = false;
        self.last_sync = resource_version.to_string();
        self.resync_at = self.next_resync(now);
        let mut effects = vec![
            Effect::Replace {
                resource_version: resource_version.to_string(),
            },
            Effect::Report(ReflectorState::ListFinished {
                count: listing.items,
                resource_version: resource_version.to_string(),
            }),
        ];
        let request = self.watch(now, &mut effects);
        Step { effects, request }
    }

    /// A LIST page failed.
    pub fn list_failed(&mut self, failure: Failure, now: Micros) -> Step {
        let Phase::Listing(listing) = &mut self.phase else {
            return self.out_of_turn("a failed LIST");
        };
        let mut effects = vec![Effect::DiscardPages];
        if listing.continuing && matches!(failure, Failure::Expired(_)) {
            // The pager's fallback: the whole list, unpaged, at the
            // resourceVersion first asked.
            listing.continuing = false;
            listing.items = 0;
            let resource_version = if listing.retried {
                String::new()
            } else {
                listing.asked.clone()
            };
            self.stats.lists += 1;
            effects.push(Effect::Report(ReflectorState::ListStarted {
                resource_version: resource_version.clone(),
                limit: 0,
            }));
            return Step {
                effects,
                request: Request::List {
                    resource_version,
                    limit: 0,
                    continue_token: None,
                },
            };
        }
        if failure.is_unavailable() && !listing.retried {
            // Retry at once from "", a consistent read, so that the
            // Reflector makes progress; the pager keeps its page size.
            self.last_sync_unavailable = true;
            listing.retried = true;
            listing.continuing = false;
            listing.paginated = false;
            listing.items = 0;
            let limit = listing.limit;
            self.stats.lists += 1;
            if let Failure::Expired(message) = &failure {
                effects.push(Effect::Report(ReflectorState::Gone {
                    resource_version: listing.asked.clone(),
                    message: message.clone(),
                }));
            }
            effects.push(Effect::Report(ReflectorState::ListStarted {
                resource_version: String::new(),
                limit,
            }));
            return Step {
                effects,
                request: Request::List {
                    resource_version: String::new(),
                    limit,
                    continue_token: None,
                },
            };
        }
        let request = self.end_cycle(format!("LIST failed: {failure}"), now, &mut effects);
        Step { effects, request }
    }

    /// The WATCH request (or the streaming list) failed before a stream
    /// opened.
    pub fn watch_failed(&mut self, failure: Failure, now: Micros) -> Step {
        match self.phase {
            Phase::Streaming(_) => return self.stream_failed(failure, now, Vec::new()),
            Phase::Watching { .. } => {}
            _ => return self.out_of_turn("a failed WATCH"),
        }
        let mut effects = Vec::new();
        if self.retries_watch(&failure) {
            let error = format!("WATCH refused: {}; watching again", failure.message());
            return self.watch_again_after_backoff(error, now, effects);
        }
        if let Failure::Expired(message) = &failure {
            effects.push(Effect::Report(ReflectorState::Gone {
                resource_version: self.last_sync.clone(),
                message: message.clone(),
            }));
        }
        let request = self.end_cycle(format!("WATCH failed: {failure}"), now, &mut effects);
        Step { effects, request }
    }

    /// A watch event arrived with this resourceVersion; `bookmark` for a
    /// BOOKMARK. Returns what to tell viewers. For drivers that never
    /// stream lists; the others call [`Reflector::observe`].
    pub fn watch_event(&mut self, resource_version: &str, bookmark: bool) -> Vec<Effect> {
        let seen = if bookmark {
            Seen::Bookmark {
                resource_version,
                initial_events_end: false,
            }
        } else {
            Seen::Modified(resource_version)
        };
        self.observe(seen, 0).1
    }

    /// An event read from the open stream: where its object goes, and what
    /// to do (a streaming list's last initial event brings the Replace).
    pub fn observe(&mut self, seen: Seen<'_>, now: Micros) -> (Route, Vec<Effect>) {
        let resource_version = seen.resource_version();
        match &mut self.phase {
            Phase::Watching { events, .. } => {
                *events += 1;
                self.stats.events += 1;
                self.last_sync = resource_version.to_string();
                let effects = match seen {
                    Seen::Bookmark { .. } => vec![Effect::Report(ReflectorState::Bookmark {
                        resource_version: resource_version.to_string(),
                    })],
                    _ => Vec::new(),
                };
                (Route::Deliver, effects)
            }
            Phase::Streaming(streaming) => {
                streaming.events += 1;
                self.stats.events += 1;
                match seen {
                    Seen::Added(_) => streaming.items += 1,
                    Seen::Deleted(_) => streaming.items = streaming.items.saturating_sub(1),
                    _ => {}
                }
                if !matches!(seen, Seen::Added(_)) {
                    streaming.resource_version = resource_version.to_string();
                }
                let Seen::Bookmark {
                    initial_events_end: true,
                    ..
                } = seen
                else {
                    let effects = match seen {
                        Seen::Bookmark { .. } => {
                            vec![Effect::Report(ReflectorState::Bookmark {
                                resource_version: resource_version.to_string(),
                            })]
                        }
                        _ => Vec::new(),
                    };
                    return (Route::Gather, effects);
                };
                let streaming = streaming.clone();
                self.initial_list_ended(streaming, now)
            }
            _ => (Route::Deliver, Vec::new()),
        }
    }

    /// The watch stream ended.
    pub fn watch_ended(&mut self, end: WatchEnd, now: Micros) -> Step {
        let (started, events) = match &self.phase {
            Phase::Watching { started, events } => (*started, *events),
            Phase::Streaming(s) => (s.started, s.events),
            _ => return self.out_of_turn("the end of a watch"),
        };
        let very_short =
            events == 0 && now.saturating_sub(started) < SHORT_WATCH.as_micros() as u64;
        let mut effects = Vec::new();
        if let Phase::Streaming(_) = self.phase {
            let failure = match end {
                WatchEnd::Failed(failure) => failure,
                WatchEnd::Closed if very_short => Failure::Other(VERY_SHORT.to_string()),
                WatchEnd::Closed => {
                    // The initial events did not end: stream again, at once
                    // (`watchList`'s loop).
                    effects.push(Effect::DiscardPages);
                    effects.push(Effect::Report(ReflectorState::WatchEnded {
                        resource_version: self.rewatch_resource_version(),
                        reason: "the streaming list ended before its initial-events-end bookmark"
                            .into(),
                    }));
                    let request = self.stream(now, &mut effects);
                    return Step { effects, request };
                }
            };
            effects.push(Effect::DiscardPages);
            return self.stream_failed(failure, now, effects);
        }
        let failure = match end {
            WatchEnd::Failed(failure) => failure,
            WatchEnd::Closed if very_short => Failure::Other(VERY_SHORT.to_string()),
            WatchEnd::Closed => {
                effects.push(Effect::Report(ReflectorState::WatchEnded {
                    resource_version: self.last_sync.clone(),
                    reason: "the watch ended (its timeout, or the server closed it)".into(),
                }));
                let request = self.watch(now, &mut effects);
                return Step { effects, request };
            }
        };
        if self.release() == Release::V1_36 && matches!(failure, Failure::TooManyRequests(_)) {
            // v0.36 `watch`: "Watch returned 429 - backing off", then
            // watches again from the same resourceVersion.
            let error = format!("the watch ended: {failure}; watching again");
            return self.watch_again_after_backoff(error, now, effects);
        }
        if let Failure::Expired(message) = &failure {
            // A LIST from this resourceVersion still returns state at least
            // as fresh, so it is not marked unavailable (client-go).
            effects.push(Effect::Report(ReflectorState::Gone {
                resource_version: self.last_sync.clone(),
                message: message.clone(),
            }));
        } else {
            effects.push(Effect::Report(ReflectorState::WatchEnded {
                resource_version: self.last_sync.clone(),
                reason: failure.to_string(),
            }));
        }
        let request = self.end_cycle(format!("the watch ended: {failure}"), now, &mut effects);
        Step { effects, request }
    }

    /// The wait asked for is over.
    pub fn waited(&mut self, now: Micros) -> Step {
        let mut effects = Vec::new();
        let request = match self.phase {
            Phase::WaitingToWatch => self.watch(now, &mut effects),
            Phase::WaitingToStream => self.stream(now, &mut effects),
            Phase::WaitingToList => self.begin_cycle(now, &mut effects),
            _ => return self.out_of_turn("the end of a wait"),
        };
        Step { effects, request }
    }

    /// When the store is next due for a resync, while a cycle watches.
    pub fn resync_at(&self) -> Option<Micros> {
        self.resync_at
    }

    /// The resync due at [`Reflector::resync_at`] happened (the driver
    /// queued it); the next one is a period later.
    pub fn resynced(&mut self, now: Micros) {
        self.resync_at = self.next_resync(now);
    }

    /// client-go's `lastSyncResourceVersion`.
    pub fn last_sync_resource_version(&self) -> &str {
        &self.last_sync
    }

    pub fn stats(&self) -> Stats {
        self.stats
    }

    fn release(&self) -> Release {
        self.config.profile.release()
    }

    /// How long the watch just asked for (with `timeout_seconds`) may say
    /// nothing before it is taken for dead; `None` for never.
    pub fn silence_bound(&self, timeout_seconds: u64) -> Option<Duration> {
        self.config.silence_bound(timeout_seconds)
    }

    /// client-go's `relistResourceVersion`.
    fn relist_resource_version(&self) -> String {
        if self.last_sync_unavailable {
            String::new()
        } else if self.last_sync.is_empty() {
            "0".to_string()
        } else {
            self.last_sync.clone()
        }
    }

    /// client-go v0.36's `rewatchResourceVersion`: where a streaming list
    /// starts ("" for the most recent, as a consistent read).
    fn rewatch_resource_version(&self) -> String {
        if self.last_sync_unavailable {
            String::new()
        } else {
            self.last_sync.clone()
        }
    }

    /// Whether a refused or broken watch is tried again after a wait rather
    /// than ending the cycle (`isWatchErrorRetriable`).
    fn retries_watch(&self, failure: &Failure) -> bool {
        match failure {
            Failure::ConnectionRefused(_) => true,
            Failure::TooManyRequests(_) => self.release() == Release::V1_36,
            _ => false,
        }
    }

    /// The wait before watching again after a retriable refusal.
    fn watch_retry_delay(&mut self, now: Micros) -> Duration {
        let jitter = self.random.unit();
        match self.release() {
            Release::V1_20 => self.conn_backoff.next_delay(now, jitter),
            Release::V1_36 => self.backoff.next_delay(now, jitter),
        }
    }

    /// Waits the watch backoff, reporting `error`, then watches again from
    /// the same resourceVersion.
    fn watch_again_after_backoff(
        &mut self,
        error: String,
        now: Micros,
        mut effects: Vec<Effect>,
    ) -> Step {
        let delay = self.watch_retry_delay(now);
        self.phase = Phase::WaitingToWatch;
        effects.push(Effect::Report(ReflectorState::Backoff {
            delay_ms: delay.as_millis() as u64,
            error,
        }));
        Step {
            effects,
            request: Request::Wait(delay),
        }
    }

    /// A new list-watch cycle: a streaming list, or a LIST.
    fn begin_cycle(&mut self, now: Micros, effects: &mut Vec<Effect>) -> Request {
        if let Some(reason) = self.ended_because.take() {
            effects.push(Effect::Report(ReflectorState::Relist { reason }));
        }
        if self.config.profile.streams_lists() {
            self.stream(now, effects)
        } else {
            self.list(effects)
        }
    }

    /// A LIST from `relistResourceVersion()`.
    fn list(&mut self, effects: &mut Vec<Effect>) -> Request {
        let asked = self.relist_resource_version();
        // The pager's page size, as client-go chooses it (`list()` in
        // tools/cache/reflector.go, v1.20.2 and v0.36.4).
        let limit = if self.config.watch_list_page_size != 0 {
            self.config.watch_list_page_size
        } else if self.paginated_result || asked.is_empty() || asked == "0" {
            self.config.page_size
        } else {
            0
        };
        effects.push(Effect::Report(ReflectorState::ListStarted {
            resource_version: asked.clone(),
            limit,
        }));
        self.stats.lists += 1;
        self.phase = Phase::Listing(Listing {
            asked: asked.clone(),
            limit,
            retried: false,
            paginated: false,
            continuing: false,
            items: 0,
        });
        Request::List {
            resource_version: asked,
            limit,
            continue_token: None,
        }
    }

    /// A streaming list from `rewatchResourceVersion()`.
    fn stream(&mut self, now: Micros, effects: &mut Vec<Effect>) -> Request {
        let asked = self.rewatch_resource_version();
        let timeout_seconds = self.watch_timeout();
        self.stats.watches += 1;
        self.stats.streaming_lists += 1;
        self.phase = Phase::Streaming(Streaming {
            asked: asked.clone(),
            started: now,
            events: 0,
            items: 0,
            resource_version: String::new(),
        });
        effects.push(Effect::Report(ReflectorState::StreamingListStarted {
            resource_version: asked.clone(),
            timeout_seconds,
        }));
        Request::Watch {
            resource_version: asked,
            timeout_seconds,
            send_initial_events: true,
        }
    }

    /// The streaming list failed (refused, or broken before its initial
    /// events ended): `watchList`'s `isErrorRetriableWithSideEffectsFn`,
    /// then `ListAndWatch`'s fall-back to LIST.
    fn stream_failed(&mut self, failure: Failure, now: Micros, mut effects: Vec<Effect>) -> Step {
        let request = if self.retries_watch(&failure) {
            let delay = self.backoff.next_delay(now, self.random.unit());
            self.phase = Phase::WaitingToStream;
            effects.push(Effect::Report(ReflectorState::Backoff {
                delay_ms: delay.as_millis() as u64,
                error: format!("streaming list refused: {failure}; streaming again"),
            }));
            Request::Wait(delay)
        } else if failure.is_unavailable() {
            // Stream again at once, from "": the most recent state, served
            // as a consistent read.
            let asked = self.rewatch_resource_version();
            self.last_sync_unavailable = true;
            if let Failure::Expired(message) = &failure {
                effects.push(Effect::Report(ReflectorState::Gone {
                    resource_version: asked,
                    message: message.clone(),
                }));
            }
            self.stream(now, &mut effects)
        } else {
            effects.push(Effect::Report(ReflectorState::StreamingListFailed {
                reason: failure.to_string(),
            }));
            self.list(&mut effects)
        };
        Step { effects, request }
    }

    /// The initial-events-end bookmark: the gathered objects replace the
    /// store, and the stream goes on as a plain watch.
    fn initial_list_ended(&mut self, streaming: Streaming, now: Micros) -> (Route, Vec<Effect>) {
        let resource_version = streaming.resource_version;
        self.last_sync_unavailable = false;
        self.last_sync = resource_version.clone();
        self.resync_at = self.next_resync(now);
        self.phase = Phase::Watching {
            started: streaming.started,
            events: streaming.events,
        };
        let effects = vec![
            Effect::Replace {
                resource_version: resource_version.clone(),
            },
            Effect::Report(ReflectorState::InitialEventsEnd {
                count: streaming.items,
                resource_version,
            }),
        ];
        (Route::Gather, effects)
    }

    /// A random server-side timeout in `[min, 2 × min)`.
    fn watch_timeout(&mut self) -> u64 {
        let min = self.config.min_watch_timeout.as_secs_f64();
        (min * (self.random.unit() + 1.0)) as u64
    }

    /// A WATCH from the last resourceVersion.
    fn watch(&mut self, now: Micros, effects: &mut Vec<Effect>) -> Request {
        let timeout_seconds = self.watch_timeout();
        self.phase = Phase::Watching {
            started: now,
            events: 0,
        };
        self.stats.watches += 1;
        effects.push(Effect::Report(ReflectorState::WatchStarted {
            resource_version: self.last_sync.clone(),
            timeout_seconds,
        }));
        Request::Watch {
            resource_version: self.last_sync.clone(),
            timeout_seconds,
            send_initial_events: false,
        }
    }

    /// The cycle is over: wait, then list again.
    fn end_cycle(&mut self, reason: String, now: Micros, effects: &mut Vec<Effect>) -> Request {
        let delay = match self.config.wait_until_period {
            Some(period) => period,
            None => self.backoff.next_delay(now, self.random.unit()),
        };
        self.stats.cycles_failed += 1;
        self.phase = Phase::WaitingToList;
        self.resync_at = None;
        effects.push(Effect::Report(ReflectorState::Backoff {
            delay_ms: delay.as_millis() as u64,
            error: reason.clone(),
        }));
        self.ended_because = Some(reason);
        Request::Wait(delay)
    }

    fn next_resync(&self, now: Micros) -> Option<Micros> {
        let period = self.config.resync_period;
        (!period.is_zero()).then(|| now.saturating_add(period.as_micros() as u64))
    }

    /// An input the current phase does not expect: a driver bug. The
    /// machine stays where it is and asks for a short wait rather than
    /// panicking on a driver's mistake.
    fn out_of_turn(&self, what: &str) -> Step {
        debug_assert!(false, "{what} in phase {:?}", self.phase);
        Step {
            effects: Vec::new(),
            request: Request::Wait(backoff::INITIAL),
        }
    }
}

/// client-go's `VeryShortWatchError`.
const VERY_SHORT: &str = "very short watch: it closed within a second with no event";

/// A small pseudo-random generator for jitter (splitmix64): no dependency,
/// runs in a page, repeatable in tests.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    /// A number in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests;
