//! What the page knows, as signals, and how each frame changes it.

use crate::history::{ObjectHistory, Version};
use crate::stats::{PipelineStats, RateSeries};
use futures::channel::mpsc::UnboundedSender;
use leptos::prelude::*;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use watchlife_protocol::{
    ClientMessage, EventType, FrameBody, Hello, PROTOCOL_VERSION, ReflectorState, ServerFrame,
    Snapshot, WatchCacheReport, WatchEvent,
};

/// Events kept for the log. Older ones are dropped and counted, so the page's
/// memory stays bounded however long it runs.
pub const EVENT_RING: usize = 2_000;
/// Events waiting to be handed to the animation. It drains them every frame;
/// this bounds the queue while frames do not run (a hidden tab).
pub const ARRIVALS_CAP: usize = 1_024;
/// How long a deleted object stays in the table (greyed, its history ending
/// in DELETED), so that what happened to it can still be read.
pub const DELETED_KEPT_MS: f64 = 60_000.0;
/// Deleted objects kept at most, however many were deleted in that time.
pub const DELETED_KEPT: usize = 100;
/// Stream frames held for the next animation frame at most: beyond it (a
/// hidden tab, where animation frames stop) they are applied at once.
pub const INBOX_CAP: usize = 2_048;
/// How often (at most) deleted objects are looked through for expiry: not on
/// every event, which would cost a pass over every object at high rates.
const EXPIRY_EVERY_MS: f64 = 1_000.0;

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

/// One event as received, shared by the log, the animation and the histories.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRow {
    pub seq: u64,
    pub event: Arc<WatchEvent>,
}

/// A sentence for the caption bar that is not about one token: the outcome
/// of a demo action, an error, a Reflector's trouble.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub text: String,
    pub alarming: bool,
    /// Counts notices, so that two equal sentences still read as new.
    pub serial: u64,
}

/// An object's identity in the page: resource and `namespace/name`.
pub type ObjectKey = (String, String);

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
    /// Current objects with their recent versions.
    pub objects: RwSignal<BTreeMap<ObjectKey, ObjectHistory>>,
    /// Rates, depths and latencies per stage.
    pub stats: RwSignal<PipelineStats>,
    /// Events received per second, for the rate plot.
    pub rates: RwSignal<RateSeries>,
    /// The demo's watch caches: rings and watchers (absent for a cluster).
    pub watch_caches: RwSignal<Option<WatchCacheReport>>,
    /// Last stream `seq` seen, for resuming after a reconnect.
    pub cursor: RwSignal<Option<(String, u64)>>,
    /// The last error the bridge reported, shown until the next one.
    pub last_error: RwSignal<Option<String>>,
    /// The latest notice for the caption bar.
    pub notice: RwSignal<Option<Notice>>,
    /// Events not yet handed to the animation (not reactive: drained per frame).
    pub arrivals: StoredValue<VecDeque<EventRow>>,
    /// The open connection's writer, when there is one.
    pub outbox: StoredValue<Option<UnboundedSender<String>>>,
    /// Page time deleted objects were last looked through for expiry.
    last_expiry: StoredValue<f64>,
    /// Stream frames received and not yet applied. They are applied together
    /// once per animation frame ([`Model::flush`]), so the page recomputes
    /// and redraws once per frame however many events arrived, instead of
    /// once per event.
    inbox: StoredValue<Vec<ServerFrame>>,
    /// The recording's clock while replaying (ms since it started): rates,
    /// windows and expiry then follow the recording, not the wall, so a
    /// replay always ends in the same state.
    clock: StoredValue<Option<f64>>,
}

impl Model {
    pub fn new() -> Self {
        Model {
            link: RwSignal::new(Link::Connecting),
            hello: RwSignal::new(None),
            events: RwSignal::new(VecDeque::new()),
            dropped: RwSignal::new(0),
            reflectors: RwSignal::new(BTreeMap::new()),
            objects: RwSignal::new(BTreeMap::new()),
            stats: RwSignal::new(PipelineStats::default()),
            rates: RwSignal::new(RateSeries::default()),
            watch_caches: RwSignal::new(None),
            cursor: RwSignal::new(None),
            last_error: RwSignal::new(None),
            notice: RwSignal::new(None),
            arrivals: StoredValue::new(VecDeque::new()),
            outbox: StoredValue::new(None),
            last_expiry: StoredValue::new(0.0),
            clock: StoredValue::new(None),
            inbox: StoredValue::new(Vec::new()),
        }
    }

    /// Takes a frame from the bridge: stream frames wait for the next
    /// animation frame, a control frame is applied at once (after the
    /// frames before it, so the order is kept).
    pub fn receive(&self, frame: ServerFrame) {
        if frame.body.is_stream() {
            let held = self
                .inbox
                .try_update_value(|inbox| {
                    inbox.push(frame);
                    inbox.len()
                })
                .unwrap_or(0);
            if held >= INBOX_CAP {
                self.flush();
            }
        } else {
            self.flush();
            self.apply(frame);
        }
    }

    /// Applies the frames held by [`Model::receive`], in order.
    pub fn flush(&self) {
        let frames = self
            .inbox
            .try_update_value(std::mem::take)
            .unwrap_or_default();
        for frame in frames {
            self.apply(frame);
        }
    }

    /// The page's time in ms: the recording's clock when replaying, else
    /// `performance.now()`.
    pub fn now(&self) -> f64 {
        self.clock.get_value().unwrap_or_else(now_ms)
    }

    /// Sets the replay clock (see [`Model::now`]).
    pub fn set_clock(&self, ms: f64) {
        self.clock.set_value(Some(ms));
    }

    /// Forgets every frame applied: the state of a page that has received
    /// nothing yet (the link and the clock are left as they are).
    pub fn reset(&self) {
        self.hello.set(None);
        self.events.set(VecDeque::new());
        self.dropped.set(0);
        self.reflectors.set(BTreeMap::new());
        self.objects.set(BTreeMap::new());
        self.stats.set(PipelineStats::default());
        self.rates.set(RateSeries::default());
        self.watch_caches.set(None);
        self.cursor.set(None);
        self.last_error.set(None);
        self.notice.set(None);
        self.arrivals.set_value(VecDeque::new());
        self.last_expiry.set_value(0.0);
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
            FrameBody::Event(event) => self.apply_event(seq, event),
            FrameBody::Reflector(update) => {
                if let Some(text) =
                    crate::narration::reflector_caption(&update.resource, &update.state)
                {
                    self.tell(text, crate::narration::reflector_alarming(&update.state));
                }
                self.reflectors
                    .update(|r| drop(r.insert(update.resource, update.state)));
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

    fn apply_event(&self, seq: u64, event: WatchEvent) {
        let row = EventRow {
            seq,
            event: Arc::new(event),
        };
        let now = self.now();
        self.stats.update(|s| s.record(&row.event.stages, now));
        self.rates.update(|r| r.record(row.event.event_type, now));
        self.track_object(&row, now);
        self.arrivals.update_value(|a| {
            // Make room by dropping the oldest ordinary event: an error or a
            // listed object is always handed on.
            if a.len() >= ARRIVALS_CAP
                && let Some(i) = a.iter().position(|r| !crate::animator::protected(&r.event))
            {
                a.remove(i);
            }
            a.push_back(row.clone());
        });
        self.events.update(|events| {
            if events.len() >= EVENT_RING {
                events.pop_front();
                self.dropped.update(|d| *d += 1);
            }
            events.push_back(row);
        });
    }

    fn track_object(&self, row: &EventRow, now: f64) {
        let e = &row.event;
        if matches!(e.event_type, EventType::Bookmark | EventType::Error) {
            return;
        }
        let key = (e.target.resource.clone(), e.target.key());
        let version = Version {
            event_type: e.event_type,
            resource_version: e.resource_version.clone(),
            initial: e.initial,
            object: Arc::new(e.object.clone()),
        };
        let expire = e.event_type == EventType::Deleted
            || now - self.last_expiry.get_value() > EXPIRY_EVERY_MS;
        if expire {
            self.last_expiry.set_value(now);
        }
        self.objects.update(|objects| {
            let history = objects
                .entry(key)
                .or_insert_with(|| ObjectHistory::new(e.target.clone()));
            if history.deleted && e.event_type != EventType::Deleted {
                // The name is used again: a new object, with a new history.
                *history = ObjectHistory::new(e.target.clone());
            }
            history.push(version);
            // A deleted object has left the Indexer; the page keeps it a
            // while, greyed, so its history can still be read.
            history.deleted_at = history.deleted.then_some(now);
            if expire {
                forget_deleted(objects, now);
            }
        });
    }

    fn replace_objects(&self, snapshot: Snapshot) {
        self.reflectors.set(
            snapshot
                .reflectors
                .into_iter()
                .map(|r| (r.resource, r.state))
                .collect(),
        );
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
                        object: Arc::new(o.object),
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
            forget_deleted(&mut next, now);
            *objects = next;
        });
    }
}

impl Default for Model {
    fn default() -> Self {
        Model::new()
    }
}

/// Drops deleted objects older than [`DELETED_KEPT_MS`], and the oldest
/// ones beyond [`DELETED_KEPT`].
fn forget_deleted(objects: &mut BTreeMap<ObjectKey, ObjectHistory>, now: f64) {
    objects.retain(|_, h| h.deleted_at.is_none_or(|at| now - at < DELETED_KEPT_MS));
    let mut deleted: Vec<(f64, ObjectKey)> = objects
        .iter()
        .filter_map(|(k, h)| h.deleted_at.map(|at| (at, k.clone())))
        .collect();
    if deleted.len() > DELETED_KEPT {
        deleted.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (_, key) in &deleted[..deleted.len() - DELETED_KEPT] {
            objects.remove(key);
        }
    }
}

/// What the page says when the bridge speaks a newer protocol.
pub fn incompatible_message(bridge: u32) -> String {
    format!(
        "This page speaks watchlife protocol {PROTOCOL_VERSION}, but the bridge speaks protocol {bridge}: \
         the bridge was upgraded. Reload the page to get the app that matches it."
    )
}

/// Page time in ms (monotonic: `performance.now()`).
pub fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.now())
        .unwrap_or(0.0)
}
