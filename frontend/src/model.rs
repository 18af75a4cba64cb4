//! What the page knows, as signals, and how each frame changes it.

use leptos::prelude::*;
use std::collections::{BTreeMap, VecDeque};
use watchlife_protocol::{FrameBody, Hello, ReflectorState, ServerFrame, Snapshot, WatchEvent};

/// Events kept for the log. Older ones are dropped and counted, so the page's
/// memory stays bounded however long it runs.
pub const EVENT_RING: usize = 500;

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
        }
    }
}

/// One event in the log.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRow {
    pub seq: u64,
    pub event: WatchEvent,
}

/// The page's state. `Copy`: every field is a signal handle.
#[derive(Clone, Copy)]
pub struct Model {
    pub link: RwSignal<Link>,
    pub hello: RwSignal<Option<Hello>>,
    /// Recent events, oldest first.
    pub events: RwSignal<VecDeque<EventRow>>,
    /// Events dropped from the front of the ring.
    pub dropped: RwSignal<u64>,
    /// Latest state of each resource's Reflector.
    pub reflectors: RwSignal<BTreeMap<String, ReflectorState>>,
    /// Current objects, by resource and key, with their resourceVersion.
    pub objects: RwSignal<BTreeMap<(String, String), String>>,
    /// Last stream `seq` seen, for resuming after a reconnect.
    pub cursor: RwSignal<Option<(String, u64)>>,
    /// The last error the bridge reported, shown until the next one.
    pub last_error: RwSignal<Option<String>>,
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
            cursor: RwSignal::new(None),
            last_error: RwSignal::new(None),
        }
    }

    /// Applies one frame from the bridge.
    pub fn apply(&self, frame: ServerFrame) {
        let seq = frame.seq;
        match frame.body {
            FrameBody::Hello(hello) => {
                self.cursor.set(Some((hello.stream.clone(), seq)));
                self.hello.set(Some(hello));
                self.link.set(Link::Connected);
            }
            FrameBody::Event(event) => {
                self.track_object(&event);
                self.events.update(|events| {
                    if events.len() == EVENT_RING {
                        events.pop_front();
                        self.dropped.update(|d| *d += 1);
                    }
                    events.push_back(EventRow { seq, event });
                });
            }
            FrameBody::Reflector(update) => {
                self.reflectors
                    .update(|r| drop(r.insert(update.resource, update.state)));
            }
            FrameBody::Snapshot(snapshot) => {
                self.replace_objects(snapshot);
                self.link.set(Link::Connected);
            }
            FrameBody::Resync(_) => self.link.set(Link::Resyncing),
            FrameBody::Heartbeat(_) => {}
            FrameBody::Error(e) => self.last_error.set(Some(e.message)),
            FrameBody::ActionResult(_) => {}
        }
        self.cursor.update(|c| {
            if let Some((_, last)) = c {
                *last = (*last).max(seq);
            }
        });
    }

    fn track_object(&self, event: &WatchEvent) {
        use watchlife_protocol::EventType::*;
        let key = (event.target.resource.clone(), event.target.key());
        self.objects.update(|objects| match event.event_type {
            Added | Modified => drop(objects.insert(key, event.resource_version.clone())),
            Deleted => drop(objects.remove(&key)),
            Bookmark | Error => {}
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
        self.objects.set(
            snapshot
                .objects
                .into_iter()
                .map(|o| {
                    (
                        (o.target.resource.clone(), o.target.key()),
                        o.resource_version,
                    )
                })
                .collect(),
        );
    }
}

impl Default for Model {
    fn default() -> Self {
        Model::new()
    }
}
