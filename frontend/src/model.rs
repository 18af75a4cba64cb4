//! What the page knows, as signals, and how each frame changes it.
//!
//! One clock: a stream frame (an event, a Reflector's change, a watch
//! cache's report, a controller's tap frame) is held in the [`Backlog`] when it arrives and applied
//! when the animation lets go of it ([`Model::show`]), so that every number,
//! notice and panel shows what the tokens have reached, no more. The page's
//! time ([`Model::now`]) is the arrival time of what is shown, and stands
//! still while the animation is paused. Control frames (hello, snapshot,
//! errors, demo actions' outcomes) are applied at once.

use crate::backlog::{Backlog, Held, Pending};
use crate::carried::Carried;
use crate::deletions::Deletions;
use crate::event_row::EventRow;
use crate::history::{ObjectHistory, ObjectKey, Version};
use crate::notice::{
    Notice, incompatible_message, reflector_alarming, reflector_caption, reflector_weight,
};
use crate::stats::{PipelineStats, RateSeries};
use crate::taps::Taps;
use futures::channel::mpsc::UnboundedSender;
use leptos::prelude::*;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use watchlife_protocol::{
    ClientMessage, EventType, FrameBody, Hello, ObjectJson, PROTOCOL_VERSION, ReflectorState,
    ServerFrame, Snapshot, WatchCacheReport, WatchEvent,
};

/// Events kept for the log. Older ones are dropped and counted, so the page's
/// memory stays bounded however long it runs.
pub const EVENT_RING: usize = 2_000;
/// Stream frames held for the animation at most: beyond it (a hidden tab,
/// where animation frames stop, or a long pause under a flood) the oldest
/// are shown at once, with no token, so that memory stays bounded.
pub const BACKLOG_CAP: usize = 4_096;

/// The state of the link to the bridge.
#[derive(Debug, Clone, PartialEq)]
pub enum Link {
    Connecting,
    Connected,
    /// No frame (not even a heartbeat) for several heartbeat periods.
    Stalled,
    /// The connection dropped; the next attempt is in `retry_ms`.
    Reconnecting {
        retry_ms: u32,
    },
    /// The bridge said the viewer missed frames; a snapshot is on its way.
    Resyncing,
    /// The bridge speaks a newer protocol than this page: the page must be
    /// reloaded to get the app that matches it.
    Incompatible {
        bridge: u32,
    },
    /// No bridge: the page plays a recording.
    Replay,
    /// No bridge: the demo control plane runs in the page.
    InPage,
}

impl Link {
    /// The word shown in the status bar.
    pub fn label(&self) -> &'static str {
        match self {
            Link::Connecting => "connecting",
            Link::Connected => "connected",
            Link::Stalled => "stalled",
            Link::Reconnecting { .. } => "reconnecting",
            Link::Resyncing => "resyncing",
            Link::Incompatible { .. } => "incompatible",
            Link::Replay => "replay",
            Link::InPage => "in this page",
        }
    }
}

/// The page's state. `Copy`: every field is a signal or stored-value handle.
#[derive(Clone, Copy)]
pub struct Model {
    pub link: RwSignal<Link>,
    pub hello: RwSignal<Option<Hello>>,
    /// Recent events, oldest first, at most [`EVENT_RING`].
    pub events: RwSignal<VecDeque<EventRow>>,
    /// Events dropped from the front of the ring.
    pub dropped: RwSignal<u64>,
    /// Latest state of each resource's Reflector.
    pub reflectors: RwSignal<BTreeMap<String, ReflectorState>>,
    /// Resources whose Reflector has finished a list at least once (from
    /// the snapshot, then from each `ListFinished` or `InitialEventsEnd`).
    pub listed: RwSignal<BTreeSet<String>>,
    /// Who answered each Reflector's last request, where the server tells.
    pub answers: RwSignal<BTreeMap<String, watchlife_protocol::ServerAnswer>>,
    /// Current objects with their recent versions.
    pub objects: RwSignal<BTreeMap<ObjectKey, ObjectHistory>>,
    /// Notified when which objects there are changes (one added, deleted or
    /// forgotten, or a snapshot), not when one is modified: what lists of
    /// names follow, so that a busy object does not rebuild them.
    pub roster: Trigger,
    /// Notified when the stream stands still (a replay jumped, ended or
    /// paused at a marker):
    /// views that redraw a few times a second redraw at once, so that the
    /// page shows the state it stopped at without waiting out a period.
    pub settled: Trigger,
    /// Rates, depths and latencies per stage.
    pub stats: RwSignal<PipelineStats>,
    /// Events received per second, for the rate plot.
    pub rates: RwSignal<RateSeries>,
    /// The demo's watch caches: rings and watchers (absent for a cluster).
    pub watch_caches: RwSignal<Option<WatchCacheReport>>,
    /// The user's controllers, as their taps tell them (written without
    /// notice inside a batch, like events: a relist's burst of watcher
    /// events redraws the lanes once).
    pub taps: RwSignal<Taps>,
    /// Last stream `seq` seen, for resuming after a reconnect.
    pub cursor: RwSignal<Option<(String, u64)>>,
    /// The last error the bridge reported, shown until the next one.
    pub last_error: RwSignal<Option<String>>,
    /// The latest notice for the caption bar.
    pub notice: RwSignal<Option<Notice>>,
    /// Stream frames arrived and not shown yet, in order (not reactive:
    /// the animation lets go of them frame by frame).
    pub backlog: StoredValue<Backlog>,
    /// Events shown with no token because the backlog was full.
    pub overflowed: StoredValue<u64>,
    /// Tokens on their way to their last stage, as the animation last said.
    pub in_flight: StoredValue<usize>,
    /// The open connection's writer, when there is one.
    pub outbox: StoredValue<Option<UnboundedSender<String>>>,
    /// The deleted objects in `objects`, oldest deletion first.
    deletions: StoredValue<Deletions>,
    /// The recording's clock while replaying (ms since it started): what
    /// arrives is stamped with it, not the wall, so that rates, windows and
    /// expiry follow the recording and a replay always ends in one state.
    clock: StoredValue<Option<f64>>,
    /// The page's time as shown (see [`Model::now`]).
    shown: StoredValue<f64>,
    /// The signals every event writes, written without notice and notified
    /// once at the end of the frame or batch ([`Model::batch`]).
    unnotified: StoredValue<Unnotified>,
}

/// Which of the signals events write have changed since they were last
/// notified, and whether a batch is under way.
#[derive(Debug, Default, Clone, Copy)]
struct Unnotified {
    batching: bool,
    /// The weight of the weightiest notice told in the batch under way.
    told: Option<u8>,
    events: bool,
    objects: bool,
    roster: bool,
    taps: bool,
}

impl Model {
    pub fn new() -> Self {
        Model {
            link: RwSignal::new(Link::Connecting),
            hello: RwSignal::new(None),
            events: RwSignal::new(VecDeque::new()),
            dropped: RwSignal::new(0),
            reflectors: RwSignal::new(BTreeMap::new()),
            listed: RwSignal::new(BTreeSet::new()),
            answers: RwSignal::new(BTreeMap::new()),
            objects: RwSignal::new(BTreeMap::new()),
            roster: Trigger::new(),
            settled: Trigger::new(),
            stats: RwSignal::new(PipelineStats::default()),
            rates: RwSignal::new(RateSeries::default()),
            watch_caches: RwSignal::new(None),
            taps: RwSignal::new(Taps::default()),
            cursor: RwSignal::new(None),
            last_error: RwSignal::new(None),
            notice: RwSignal::new(None),
            backlog: StoredValue::new(Backlog::default()),
            overflowed: StoredValue::new(0),
            in_flight: StoredValue::new(0),
            outbox: StoredValue::new(None),
            deletions: StoredValue::new(Deletions::default()),
            clock: StoredValue::new(None),
            shown: StoredValue::new(0.0),
            unnotified: StoredValue::new(Unnotified::default()),
        }
    }

    /// Takes a frame from the bridge: a stream frame is held until the
    /// animation reaches it; a control frame is applied at once, except that
    /// a hello or a snapshot (which replace what the page knows) first shows
    /// everything held, so that nothing older lands after them.
    pub fn receive(&self, frame: ServerFrame) {
        let at = self.arrival_time();
        self.cursor.update_untracked(|c| {
            if let Some((_, last)) = c {
                *last = (*last).max(frame.seq);
            }
        });
        if !frame.body.is_stream() {
            if matches!(frame.body, FrameBody::Hello(_) | FrameBody::Snapshot(_)) {
                self.show_all();
            }
            self.apply(frame);
            return;
        }
        let mut overflow = Vec::new();
        self.backlog.update_value(|b| {
            match frame.body {
                FrameBody::Event(event) => {
                    let (row, object) = split_event(frame.seq, event);
                    b.push_event(row, object, at);
                }
                _ => b.push_frame(frame, at),
            }
            b.release_beyond(BACKLOG_CAP, &mut overflow);
        });
        if !overflow.is_empty() {
            let events = overflow
                .iter()
                .filter(|p| matches!(p.held, Held::Event { .. }))
                .count() as u64;
            self.overflowed.update_value(|n| *n += events);
            self.show(overflow);
        }
    }

    /// Shows at once everything held, with no tokens (a jump, or a frame
    /// that replaces what the page knows). Returns how many events it held.
    pub fn show_all(&self) -> usize {
        let mut out = Vec::new();
        let events = self
            .backlog
            .try_update_value(|b| {
                let n = b.events();
                b.release_all(&mut out);
                n
            })
            .unwrap_or(0);
        self.show(out);
        events
    }

    /// Applies what the animation let go of, in order, as one batch; the
    /// page's time moves on to the arrival of the last of them.
    pub fn show(&self, released: Vec<Pending>) {
        if released.is_empty() {
            return;
        }
        self.batch(|| {
            for p in released {
                self.shown.update_value(|s| *s = s.max(p.at));
                match p.held {
                    Held::Event { row, object, .. } => self.apply_row(row, object, p.at),
                    Held::Frame(frame) => self.apply(*frame),
                }
            }
        });
    }

    /// Whether nothing is held and no token is on its way: the page shows
    /// all that has arrived.
    pub fn caught_up(&self) -> bool {
        self.backlog.with_value(Backlog::is_empty) && self.in_flight.get_value() == 0
    }

    /// Runs `f`, which applies frames, notifying the signals that events
    /// write once at the end instead of once per event: what depends on
    /// them is recomputed once for the whole batch. Control frames inside
    /// still notify at once.
    pub fn batch(&self, f: impl FnOnce()) {
        let outer = self
            .unnotified
            .try_update_value(|u| std::mem::replace(&mut u.batching, true))
            .unwrap_or(true);
        f();
        if !outer {
            self.unnotified.update_value(|u| u.batching = false);
            self.notify_events();
        }
    }

    /// Notifies the signals events wrote without notice, unless a batch is
    /// under way (it notifies them when it ends).
    fn notify_events(&self) {
        let Some(changed) = self
            .unnotified
            .try_update_value(|u| (!u.batching).then(|| std::mem::take(u)))
            .flatten()
        else {
            return;
        };
        if changed.events {
            self.events.notify();
            self.dropped.notify();
            self.stats.notify();
            self.rates.notify();
            self.cursor.notify();
        }
        if changed.objects {
            self.objects.notify();
        }
        if changed.roster {
            self.roster.notify();
        }
        if changed.taps {
            self.taps.notify();
        }
    }

    /// The page's time in ms, as shown: the arrival time of what the page
    /// shows, or, with nothing held, the time now. It stands still while the
    /// animation is paused, so rates and ages do too. Arrival times are the
    /// recording's clock when replaying, else `performance.now()`.
    pub fn now(&self) -> f64 {
        self.shown.get_value()
    }

    /// The time a frame arriving now is stamped with.
    pub fn arrival_time(&self) -> f64 {
        self.clock.get_value().unwrap_or_else(now_ms)
    }

    /// Sets the replay clock (see [`Model::arrival_time`]).
    pub fn set_clock(&self, ms: f64) {
        self.clock.set_value(Some(ms));
    }

    /// Moves the page's time on to the arrival time now, when nothing is
    /// held: what the animation does each frame it runs.
    pub fn keep_time(&self) {
        if self.backlog.with_value(Backlog::is_empty) {
            let now = self.arrival_time();
            self.shown.update_value(|s| *s = s.max(now));
        }
    }

    /// Sets the page's time (a replay's seek, which may go back).
    pub fn set_shown(&self, ms: f64) {
        self.shown.set_value(ms);
    }

    /// Forgets every frame applied: the state of a page that has received
    /// nothing yet (the link and the clock are left as they are).
    pub fn reset(&self) {
        self.hello.set(None);
        self.events.set(VecDeque::new());
        self.dropped.set(0);
        self.reflectors.set(BTreeMap::new());
        self.listed.set(BTreeSet::new());
        self.answers.set(BTreeMap::new());
        self.objects.set(BTreeMap::new());
        self.roster.notify();
        self.stats.set(PipelineStats::default());
        self.rates.set(RateSeries::default());
        self.watch_caches.set(None);
        self.taps.set(Taps::default());
        self.cursor.set(None);
        self.last_error.set(None);
        self.notice.set(None);
        self.backlog.set_value(Backlog::default());
        self.deletions.set_value(Deletions::default());
    }

    /// Says the stream stands still (see [`Model::settled`]).
    pub fn settle(&self) {
        self.settled.notify();
    }

    /// Sends a message to the bridge. False when there is no connection.
    pub fn send(&self, message: &ClientMessage) -> bool {
        let Ok(text) = serde_json::to_string(message) else {
            return false;
        };
        self.outbox
            .with_value(|o| o.as_ref().map(|tx| tx.unbounded_send(text).is_ok()))
            .unwrap_or(false)
    }

    /// Shows a sentence in the caption bar, unless a batch under way has
    /// told a weightier one (see [`reflector_weight`]): of the notices shown
    /// at one moment, the one that matters most is the one read.
    fn tell_weighted(&self, text: String, alarming: bool, weight: u8) {
        let outweighed = self
            .unnotified
            .try_update_value(|u| {
                if !u.batching {
                    return false;
                }
                let outweighed = u.told.is_some_and(|w| w > weight);
                if !outweighed {
                    u.told = Some(weight);
                }
                outweighed
            })
            .unwrap_or(false);
        if !outweighed {
            self.tell(text, alarming);
        }
    }

    /// Shows a sentence in the caption bar.
    pub fn tell(&self, text: String, alarming: bool) {
        let serial = self
            .notice
            .with_untracked(|n| n.as_ref().map_or(0, |n| n.serial))
            + 1;
        self.notice.set(Some(Notice {
            text,
            alarming,
            serial,
            at: self.now(),
        }));
    }

    /// Applies one frame from the bridge.
    pub fn apply(&self, frame: ServerFrame) {
        let seq = frame.seq;
        match frame.body {
            FrameBody::Hello(hello) if hello.protocol > PROTOCOL_VERSION => {
                self.link.set(Link::Incompatible {
                    bridge: hello.protocol,
                });
                self.tell(incompatible_message(hello.protocol), true);
                return;
            }
            FrameBody::Hello(hello) => {
                self.cursor.set(Some((hello.stream.clone(), seq)));
                self.hello.set(Some(hello));
                self.connected();
            }
            FrameBody::Event(event) => {
                let (row, object) = split_event(seq, event);
                self.apply_row(row, object, self.arrival_time());
                return;
            }
            FrameBody::Reflector(update) => {
                if let Some(text) = reflector_caption(&update.resource, &update.state) {
                    let weight = reflector_weight(&update.state);
                    self.tell_weighted(text, reflector_alarming(&update.state), weight);
                }
                if matches!(
                    update.state,
                    ReflectorState::ListFinished { .. } | ReflectorState::InitialEventsEnd { .. }
                ) && !self.listed.with_untracked(|l| l.contains(&update.resource))
                {
                    self.listed.update(|l| {
                        l.insert(update.resource.clone());
                    });
                }
                match update.state {
                    // An answer stays beside the states that follow it.
                    ReflectorState::Answered { answer } => self
                        .answers
                        .update(|a| drop(a.insert(update.resource, answer))),
                    state => self
                        .reflectors
                        .update(|r| drop(r.insert(update.resource, state))),
                }
            }
            FrameBody::Snapshot(snapshot) => {
                self.replace_objects(snapshot);
                self.connected();
            }
            FrameBody::Resync(r) => {
                if self.link.get_untracked() != Link::Replay {
                    self.link.set(Link::Resyncing);
                }
                self.tell(format!("Resyncing: {}", r.reason), true);
            }
            FrameBody::Heartbeat(_) => {}
            FrameBody::Error(e) => {
                self.tell(e.message.clone(), true);
                self.last_error.set(Some(e.message));
            }
            FrameBody::ActionResult(r) => self.tell(r.message, false),
            FrameBody::WatchCache(report) => self.watch_caches.set(Some(report)),
            FrameBody::Tap(relay) => {
                self.taps.try_update_untracked(|t| t.record(relay));
                self.unnotified.update_value(|u| u.taps = true);
                self.notify_events();
            }
        }
        self.cursor.update(|c| {
            if let Some((_, last)) = c {
                *last = (*last).max(seq);
            }
        });
    }

    /// The link is up, unless the page is replaying (which has none).
    fn connected(&self) {
        if !matches!(self.link.get_untracked(), Link::Replay | Link::InPage) {
            self.link.set(Link::Connected);
        }
    }

    /// Records one event that arrived at page time `now`, and notifies the
    /// signals it writes unless a batch is under way.
    fn apply_row(&self, row: EventRow, object: Carried, now: f64) {
        let seq = row.seq;
        self.stats.try_update_untracked(|s| {
            s.record(&row.event.stages, now);
            s.listeners
                .record(&row.event.target.resource, &row.event.handled.calls);
        });
        self.rates
            .try_update_untracked(|r| r.record(row.event.event_type, now));
        self.cursor.try_update_untracked(|c| {
            if let Some((_, last)) = c {
                *last = (*last).max(seq);
            }
        });
        self.track_object(&row, object, now);
        let full = self.events.try_update_untracked(|events| {
            let full = events.len() >= EVENT_RING;
            if full {
                events.pop_front();
            }
            events.push_back(row);
            full
        });
        if full == Some(true) {
            self.dropped.try_update_untracked(|d| *d += 1);
        }
        self.unnotified.update_value(|u| u.events = true);
        self.notify_events();
    }

    fn track_object(&self, row: &EventRow, carried: Carried, now: f64) {
        let e = &row.event;
        if matches!(e.event_type, EventType::Bookmark | EventType::Error) {
            return;
        }
        let key = (e.target.resource.clone(), e.target.key());
        let roster_changed = self.objects.try_update_untracked(|objects| {
            let mut changed = !objects.contains_key(&key);
            let history = objects
                .entry(key.clone())
                .or_insert_with(|| ObjectHistory::new(e.target.clone()));
            let (object, patch) = carried.into_body(history.versions.back());
            let version = Version {
                event_type: e.event_type,
                resource_version: e.resource_version.clone(),
                initial: e.initial,
                resync: e.handled.resync,
                final_state_unknown: e.handled.final_state_unknown,
                object,
                patch,
            };
            let was_deleted = history.deleted;
            let deleted_before = history.deleted_at;
            if history.deleted && e.event_type != EventType::Deleted {
                // The name is used again: a new object, with a new history.
                *history = ObjectHistory::new(e.target.clone());
            }
            history.push(version);
            changed |= was_deleted != history.deleted;
            // A deleted object has left the Indexer; the page keeps it a
            // while, greyed, so its history can still be read.
            history.deleted_at = history.deleted.then_some(now);
            let deleted_after = history.deleted_at;
            self.deletions.update_value(|d| {
                d.changed(&key, deleted_before, deleted_after);
                changed |= d.forget(objects, now);
            });
            changed
        });
        self.unnotified.update_value(|u| {
            u.objects = true;
            u.roster |= roster_changed == Some(true);
        });
    }

    /// Keeps a body fetched for the object `key` at `resource_version`, on
    /// the version that lacks it. Returns whether a version took it.
    pub fn fill_body(&self, key: &ObjectKey, resource_version: &str, body: ObjectJson) -> bool {
        let filled = self.objects.try_update_untracked(|objects| {
            let Some(history) = objects.get_mut(key) else {
                return false;
            };
            let mut filled = false;
            for v in history.versions.iter_mut() {
                if v.object.is_none() && v.resource_version == resource_version {
                    v.object = Some(body.clone());
                    filled = true;
                }
            }
            filled
        }) == Some(true);
        if filled {
            self.unnotified.update_value(|u| u.objects = true);
            self.notify_events();
        }
        filled
    }

    fn replace_objects(&self, snapshot: Snapshot) {
        // The taps' lanes as those who watched them drew them: the
        // snapshot carries what each tap said lately.
        self.listed.set(snapshot.listed.into_iter().collect());
        let mut taps = Taps::default();
        for relay in snapshot.taps {
            taps.record(relay);
        }
        self.taps.set(taps);
        let (answers, states): (Vec<_>, Vec<_>) = snapshot
            .reflectors
            .into_iter()
            .partition(|r| matches!(r.state, ReflectorState::Answered { .. }));
        self.answers.set(
            answers
                .into_iter()
                .filter_map(|r| match r.state {
                    ReflectorState::Answered { answer } => Some((r.resource, answer)),
                    _ => None,
                })
                .collect(),
        );
        self.reflectors
            .set(states.into_iter().map(|r| (r.resource, r.state)).collect());
        let now = self.now();
        self.objects.update(|objects| {
            let mut next = BTreeMap::new();
            for o in snapshot.objects {
                let key = (o.target.resource.clone(), o.target.key());
                let mut history = objects
                    .remove(&key)
                    .filter(|h| !h.deleted)
                    .unwrap_or_else(|| ObjectHistory::new(o.target.clone()));
                if history.resource_version() != o.resource_version {
                    history.push(Version {
                        event_type: EventType::Added,
                        resource_version: o.resource_version,
                        initial: true,
                        resync: false,
                        final_state_unknown: false,
                        object: o.object,
                        patch: None,
                    });
                }
                next.insert(key, history);
            }
            // Recently deleted objects are not in the snapshot: keep them.
            for (key, history) in std::mem::take(objects) {
                if history.deleted && !next.contains_key(&key) {
                    next.insert(key, history);
                }
            }
            let mut deletions = Deletions::of(&next);
            deletions.forget(&mut next, now);
            self.deletions.set_value(deletions);
            *objects = next;
        });
        self.roster.notify();
    }
}

/// An event as the page keeps it, and its object apart (see [`EventRow`]).
fn split_event(seq: u64, mut event: WatchEvent) -> (EventRow, Carried) {
    let object = Carried::take(&mut event);
    let row = EventRow {
        seq,
        event: Arc::new(event),
    };
    (row, object)
}

impl Default for Model {
    fn default() -> Self {
        Model::new()
    }
}

/// Page time in ms (monotonic: `performance.now()`).
pub fn now_ms() -> f64 {
    thread_local! {
        // Looked up once: the page reads the clock for every frame it receives.
        static PERFORMANCE: Option<web_sys::Performance> =
            web_sys::window().and_then(|w| w.performance());
    }
    PERFORMANCE.with(|p| p.as_ref().map_or(0.0, |p| p.now()))
}
