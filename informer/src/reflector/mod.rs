//! The Reflector: client-go's `ListAndWatch` (v1.20, `tools/cache/reflector.go`)
//! as a state machine that does no IO.
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
//! A driver performs what [`Step::request`] asks (a LIST page, a WATCH, a
//! wait) and tells the machine how it went; it applies [`Step::effects`] in
//! order: reports for viewers, and "replace the store with the pages
//! gathered". The same machine runs against a real apiserver (the bridge,
//! through kube), against the demo's HTTP API, against the demo control
//! plane in-process (its own controllers), and in a page.
//!
//! The rules, each as client-go has it:
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
//! - A WATCH refused for "connection refused" waits (its own backoff) and
//!   watches again: the server is likely restarting, and a relist would not
//!   help.
//! - Anything else that ends a watch (an ERROR event such as 410 Gone, a
//!   watch that closed within a second with no event, a refused WATCH) ends
//!   the list-watch cycle, and so does a failed LIST: the next cycle LISTs
//!   again after the backoff. Two cycles never run without the backoff
//!   between them (`wait.BackoffUntil` in client-go).

pub mod backoff;

use crate::Micros;
use backoff::Backoff;
use std::time::Duration;
use watchlife_protocol::ReflectorState;

/// Shortest server-side timeout asked for a watch: each watch asks for a
/// random time between this and twice this (client-go's `minWatchTimeout`,
/// 5 minutes), so that many clients do not all re-watch at once.
pub const MIN_WATCH_TIMEOUT: Duration = Duration::from_secs(300);

/// Items per LIST page: client-go's pager asks for 500.
pub const PAGE_SIZE: u64 = 500;

/// A watch that ends sooner than this with no event is an error, not a
/// normal close (client-go: "very short watch").
pub const SHORT_WATCH: Duration = Duration::from_secs(1);

/// How a Reflector behaves; the defaults are client-go's.
#[derive(Debug, Clone)]
pub struct Config {
    /// See [`MIN_WATCH_TIMEOUT`]. Shorter only for demos and tests.
    pub min_watch_timeout: Duration,
    /// See [`PAGE_SIZE`].
    pub page_size: u64,
    /// How often the store is resynced while watching; zero for never (the
    /// default of most controllers).
    pub resync_period: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            min_watch_timeout: MIN_WATCH_TIMEOUT,
            page_size: PAGE_SIZE,
            resync_period: Duration::ZERO,
        }
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
    /// A WATCH with bookmarks allowed.
    Watch {
        resource_version: String,
        timeout_seconds: u64,
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
    /// The pages gathered since the LIST started are the whole list, at this
    /// resourceVersion: replace the store with them (client-go's `syncWith`).
    Replace { resource_version: String },
    /// The pages gathered are void: the LIST is asked again.
    DiscardPages,
}

/// The machine's answer to each input.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub effects: Vec<Effect>,
    pub request: Request,
}

/// How a request failed, sorted as client-go sorts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// 410: the resourceVersion asked for is older than the server keeps
    /// (`IsResourceExpired` or `IsGone`).
    Expired(String),
    /// The server's cache has not reached the resourceVersion asked for
    /// (the `ResourceVersionTooLarge` cause).
    TooLargeResourceVersion(String),
    /// The TCP connection was refused: the server is likely down.
    ConnectionRefused(String),
    /// Anything else (forbidden, a bad selector, a server error, a broken
    /// stream, an undecodable event), with its message.
    Other(String),
}

impl Failure {
    pub fn message(&self) -> &str {
        match self {
            Failure::Expired(m)
            | Failure::TooLargeResourceVersion(m)
            | Failure::ConnectionRefused(m)
            | Failure::Other(m) => m,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

/// How a watch stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchEnd {
    /// The stream ended without an error (its timeout, or the server or the
    /// connection closed it).
    Closed,
    /// An ERROR event, or a stream that could not be read or decoded.
    Failed(Failure),
}

/// Where the machine is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    /// Not started.
    Idle,
    Listing(Listing),
    Watching {
        started: Micros,
        events: u64,
    },
    /// Waiting to watch again after "connection refused".
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

/// Counts a viewer may show of one Reflector's life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub lists: u64,
    pub watches: u64,
    pub events: u64,
    pub cycles_failed: u64,
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
    /// `backoffManager`: between list-watch cycles.
    backoff: Backoff,
    /// `initConnBackoffManager`: between WATCHes refused for "connection refused".
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
            config,
            phase: Phase::Idle,
            last_sync: String::new(),
            last_sync_unavailable: false,
            paginated_result: false,
            backoff: Backoff::default(),
            conn_backoff: Backoff::default(),
            ended_because: None,
            resync_at: None,
            random: SplitMix64(seed),
            stats: Stats::default(),
        }
    }

    /// The first request.
    pub fn start(&mut self, now: Micros) -> Step {
        debug_assert_eq!(self.phase, Phase::Idle, "started twice");
        let mut effects = Vec::new();
        let request = self.begin_cycle(&mut effects);
        let _ = now;
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
        let unavailable = matches!(
            failure,
            Failure::Expired(_) | Failure::TooLargeResourceVersion(_)
        );
        if unavailable && !listing.retried {
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

    /// The WATCH request failed before a stream opened.
    pub fn watch_failed(&mut self, failure: Failure, now: Micros) -> Step {
        if !matches!(self.phase, Phase::Watching { .. }) {
            return self.out_of_turn("a failed WATCH");
        }
        let mut effects = Vec::new();
        if let Failure::ConnectionRefused(message) = &failure {
            let delay = self.conn_backoff.next_delay(now, self.random.unit());
            self.phase = Phase::WaitingToWatch;
            effects.push(Effect::Report(ReflectorState::Backoff {
                delay_ms: delay.as_millis() as u64,
                error: format!("WATCH refused: {message}; watching again"),
            }));
            return Step {
                effects,
                request: Request::Wait(delay),
            };
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
    /// BOOKMARK. Returns what to tell viewers (a bookmark is reported; an
    /// object's event goes to the store by the driver).
    pub fn watch_event(&mut self, resource_version: &str, bookmark: bool) -> Vec<Effect> {
        let Phase::Watching { events, .. } = &mut self.phase else {
            return Vec::new();
        };
        *events += 1;
        self.stats.events += 1;
        self.last_sync = resource_version.to_string();
        if bookmark {
            vec![Effect::Report(ReflectorState::Bookmark {
                resource_version: resource_version.to_string(),
            })]
        } else {
            Vec::new()
        }
    }

    /// The watch stream ended.
    pub fn watch_ended(&mut self, end: WatchEnd, now: Micros) -> Step {
        let Phase::Watching { started, events } = self.phase else {
            return self.out_of_turn("the end of a watch");
        };
        let mut effects = Vec::new();
        let failure = match end {
            WatchEnd::Failed(failure) => failure,
            WatchEnd::Closed
                if events == 0 && now.saturating_sub(started) < SHORT_WATCH.as_micros() as u64 =>
            {
                Failure::Other(
                    "very short watch: it closed within a second with no event".to_string(),
                )
            }
            WatchEnd::Closed => {
                effects.push(Effect::Report(ReflectorState::WatchEnded {
                    resource_version: self.last_sync.clone(),
                    reason: "the watch ended (its timeout, or the server closed it)".into(),
                }));
                let request = self.watch(now, &mut effects);
                return Step { effects, request };
            }
        };
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
            Phase::WaitingToList => self.begin_cycle(&mut effects),
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

    /// A new list-watch cycle: its LIST.
    fn begin_cycle(&mut self, effects: &mut Vec<Effect>) -> Request {
        let asked = self.relist_resource_version();
        // The pager's page size, as client-go chooses it.
        let limit = if self.paginated_result || asked.is_empty() || asked == "0" {
            self.config.page_size
        } else {
            0
        };
        if let Some(reason) = self.ended_because.take() {
            effects.push(Effect::Report(ReflectorState::Relist { reason }));
        }
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

    /// A WATCH from the last resourceVersion.
    fn watch(&mut self, now: Micros, effects: &mut Vec<Effect>) -> Request {
        let min = self.config.min_watch_timeout.as_secs_f64();
        let timeout_seconds = (min * (self.random.unit() + 1.0)) as u64;
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
        }
    }

    /// The cycle is over: wait, then list again.
    fn end_cycle(&mut self, reason: String, now: Micros, effects: &mut Vec<Effect>) -> Request {
        let delay = self.backoff.next_delay(now, self.random.unit());
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
