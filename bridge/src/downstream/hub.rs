//! The fan-out hub: one ordered stream of frames, serialized once, shared by
//! every viewer.
//!
//! Stream frames are numbered, encoded to JSON once, kept in a sliding window
//! for viewers that reconnect, and broadcast to every connected viewer as the
//! same bytes. The hub also keeps the current objects, so a viewer that joins
//! (or falls behind) gets a snapshot consistent with a known `seq`; the
//! snapshot too is encoded once per `seq`, however many viewers need it.
//!
//! # The slow-viewer policy
//!
//! Each viewer reads the broadcast ring at its own pace: the ring *is* its
//! bounded queue, and [`Hub::publish`] never waits for anyone, so one slow
//! viewer cannot delay the others or the Reflector. A viewer that falls more
//! than [`VIEWER_LAG`] frames behind the newest loses its place in the ring;
//! the next thing it receives is `resync` and a fresh snapshot, never a silent
//! gap. Memory is bounded for all viewers together (the ring, the window, one
//! cached snapshot); per viewer it is bounded by the socket's send buffer
//! ([`crate::downstream::server::SEND_BUFFER_BYTES`]) and one batch of frames
//! ([`crate::downstream::outbox::MAX_BATCH`]).

use crate::downstream::deflate::{Deflated, SharedDeflate};
use crate::downstream::frame_text::encode;
use crate::downstream::metrics::Metrics;
use crate::downstream::patched::lean_frame;
use crate::downstream::tap_history::TapHistory;
use axum::extract::ws::Utf8Bytes;
use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;
use tokio::sync::broadcast;
use watchlife_informer::Object;
use watchlife_informer_frames::Finished;
use watchlife_protocol::summary::{Known, columns, needs_text, summarize};
use watchlife_protocol::{
    EventType, FrameBody, ObjectJson, ObjectRef, ReflectorState, ReflectorUpdate, ServerFrame,
    Snapshot, SnapshotObject, WatchEvent,
};

/// Stream frames kept for resuming viewers. At the demo's pace this is many
/// minutes; at 1,000 events/s, about four seconds — enough to ride out a
/// reconnect, after which a snapshot is cheaper than a replay anyway.
pub const WINDOW: usize = 4096;

/// Bytes of frames kept for resuming viewers, whatever their number: 4,096
/// frames of large objects (each up to the bridge's 64 KiB cut) would
/// otherwise hold a quarter of a gigabyte. A viewer whose cursor left the
/// window gets a snapshot, as it does when the window is full of frames.
pub const WINDOW_BYTES: usize = 32 * 1024 * 1024;

/// Frames one viewer may fall behind the newest before it is resynced. The
/// broadcast ring is shared, so this bounds memory for all viewers at once.
/// At the demo's pace that is minutes of slack; at 1,000 events/s it is one
/// second, longer than a phone's radio takes to wake up, and well under the
/// point where replaying would cost more than a snapshot.
pub const VIEWER_LAG: usize = 1024;

/// A stream frame as broadcast: its number, its bytes, and what viewers filter on.
#[derive(Debug, Clone)]
pub struct Published {
    pub seq: u64,
    pub text: Utf8Bytes,
    /// Resource of the frame (events and reflector updates); `None` for
    /// frames about the whole source, which every filter lets through.
    pub resource: Option<Arc<str>>,
    /// Namespace of the event's object, if any.
    pub namespace: Option<Arc<str>>,
    /// The frame with its update's body as a merge patch, when that is
    /// shorter, while any viewer takes bodies so (see
    /// [`crate::downstream::patched`]).
    pub lean: Option<Utf8Bytes>,
    /// Its bytes in the hub's compressed stream (of the lean frames, where
    /// there is one), while any viewer takes it compressed (see
    /// [`crate::downstream::deflate`]).
    pub deflated: Option<Deflated>,
}

impl Published {
    /// The frame as a viewer that asked for patches takes it.
    pub fn patched_text(&self) -> &Utf8Bytes {
        self.lean.as_ref().unwrap_or(&self.text)
    }

    /// Bytes it holds in the window.
    fn bytes(&self) -> usize {
        self.text.len() + self.lean.as_ref().map_or(0, |l| l.len())
    }
}

/// Bodies a live viewer's snapshot carries at most, in bytes of JSON. Below
/// it (a demo, a small cluster) a snapshot holds every body and every diff
/// has both sides from the start; above it (150,000 objects are 150 MB and
/// more) it holds references and summaries, some 80 bytes an object, and the
/// page fetches a body when someone opens the object. 4 MiB is a second of a
/// slow link, and a few thousand typical objects.
pub const SNAPSHOT_BODIES_LIMIT: usize = 4 * 1024 * 1024;

/// Whether a snapshot carries the objects' bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bodies {
    /// What a live viewer gets: the bodies while they total at most the
    /// hub's limit ([`SNAPSHOT_BODIES_LIMIT`] by default), else references,
    /// resourceVersions and summaries only, the page fetching a body when
    /// someone opens the object (`/objects`).
    Light,
    /// Every body too: for recordings, which have no bridge to ask.
    Full,
}

/// A name for a stream started at `now`: its start time, and random bits, so
/// that two replicas started in the same microsecond still differ (a cursor
/// of one must never resume on the other).
pub fn stream_id(now: u64) -> String {
    use std::hash::{BuildHasher, Hasher};
    // std's hasher keys are random per process: no dependency for 32 bits.
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish() as u32;
    format!("{now:x}-{random:08x}")
}

/// How a viewer joins the stream.
pub enum Join {
    /// Frames after the viewer's cursor, still in the window: send them.
    Resume(Vec<Published>),
    /// A fresh viewer, or one whose cursor is gone: send this `snapshot`
    /// frame (already encoded, with `seq` the cursor).
    Snapshot(Utf8Bytes),
}

/// What [`Hub::attach`] gives a viewer.
pub struct Attached {
    /// Newest `seq` when the viewer joined.
    pub cursor: u64,
    pub join: Join,
    /// Frames after `cursor`.
    pub live: broadcast::Receiver<Published>,
}

struct State {
    seq: u64,
    window: VecDeque<Published>,
    /// The window's frames' lengths, summed.
    window_bytes: usize,
    /// The current objects, by resource: the informer's own [`Object`]s
    /// (the text and the parsed fields the Indexer holds, not a copy), as
    /// of `seq`. A snapshot takes a reference count per object under the
    /// lock, and makes its references and columns outside it.
    resources: BTreeMap<String, Filed>,
    /// The bodies' lengths, summed.
    body_bytes: usize,
    /// Each Reflector's latest state, by resource.
    reflectors: BTreeMap<String, ReflectorUpdate>,
    /// Each Reflector's latest answer from the server, by resource: kept
    /// apart, as the page keeps it beside the states that follow.
    answers: BTreeMap<String, ReflectorUpdate>,
    /// Resources whose Reflector has finished a list at least once.
    listed: BTreeSet<String>,
    /// Event frames published (only counted for a test-only fault).
    events: u64,
    /// What controllers' taps said lately, for a snapshot.
    taps: TapHistory,
    /// The stream compressed once for the viewers that take it so.
    deflate: SharedDeflate,
}

/// The hub. Cheap to clone.
#[derive(Clone)]
pub struct Hub {
    state: Arc<Mutex<State>>,
    live: broadcast::Sender<Published>,
    stream_id: Arc<str>,
    /// The newest encoded light snapshot and its `seq`. Its own lock:
    /// encoding never holds up [`Hub::publish`].
    snapshot: Arc<Mutex<Option<(u64, Utf8Bytes)>>>,
    /// Bodies a light snapshot carries at most (see [`Bodies::Light`]).
    bodies_limit: usize,
    metrics: Metrics,
}

impl Hub {
    /// An empty hub whose stream is called `stream_id`.
    pub fn new(stream_id: impl Into<Arc<str>>) -> Self {
        Hub {
            state: Arc::new(Mutex::new(State {
                seq: 0,
                window: VecDeque::with_capacity(WINDOW),
                window_bytes: 0,
                resources: BTreeMap::new(),
                body_bytes: 0,
                reflectors: BTreeMap::new(),
                answers: BTreeMap::new(),
                listed: BTreeSet::new(),
                events: 0,
                taps: TapHistory::default(),
                deflate: SharedDeflate::default(),
            })),
            live: broadcast::channel(VIEWER_LAG).0,
            stream_id: stream_id.into(),
            snapshot: Arc::new(Mutex::new(None)),
            bodies_limit: SNAPSHOT_BODIES_LIMIT,
            metrics: Metrics::default(),
        }
    }

    /// Light snapshots carry the bodies while they total at most `bytes`.
    pub fn with_snapshot_bodies_limit(mut self, bytes: usize) -> Self {
        self.bodies_limit = bytes;
        self
    }

    /// The bridge's metrics: the Reflector counts its watches and relists
    /// here, the viewers their frames.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Name of this stream (see [`watchlife_protocol::Hello::stream`]).
    pub fn stream_id(&self) -> &str {
        &self.stream_id
    }

    /// Newest `seq`.
    pub fn cursor(&self) -> u64 {
        self.lock().seq
    }

    /// Numbers, encodes and broadcasts one stream frame; an ADDED, MODIFIED
    /// or DELETED event also updates the current objects, with the object
    /// read again from the event's text (see [`Hub::publish_finished`] for
    /// the informer's own).
    /// Returns its `seq`.
    pub fn publish(&self, body: FrameBody) -> u64 {
        let object = match &body {
            FrameBody::Event(e)
                if !matches!(e.event_type, EventType::Bookmark | EventType::Error) =>
            {
                Some(Object::from_json(e.object.clone()))
            }
            _ => None,
        };
        self.publish_frame(body, object)
    }

    /// Publishes an event out of the informer, keeping its object as the
    /// informer does. Returns its `seq`.
    pub fn publish_finished(&self, finished: Finished) -> u64 {
        self.publish_frame(FrameBody::Event(finished.event), Some(finished.object))
    }

    fn publish_frame(&self, body: FrameBody, object: Option<Object>) -> u64 {
        debug_assert!(body.is_stream(), "control frames belong to one connection");
        let mut state = self.lock();
        state.seq += 1;
        let seq = state.seq;
        let frame = ServerFrame { seq, body };
        let (resource, namespace) = match &frame.body {
            FrameBody::Event(e) => (
                Some(e.target.resource.as_str()),
                e.target.namespace.as_deref(),
            ),
            FrameBody::Reflector(r) => (Some(r.resource.as_str()), None),
            _ => (None, None),
        };
        let mut published = Published {
            seq,
            resource: resource.map(Into::into),
            namespace: namespace.map(Into::into),
            text: encode(&frame),
            lean: None,
            deflated: None,
        };
        let patching = self.metrics.patched_viewers() > 0;
        let is_event = matches!(frame.body, FrameBody::Event(_));
        match frame.body {
            FrameBody::Reflector(update) => {
                if matches!(
                    update.state,
                    ReflectorState::ListFinished { .. } | ReflectorState::InitialEventsEnd { .. }
                ) {
                    state.listed.insert(update.resource.clone());
                }
                let latest = match update.state {
                    ReflectorState::Answered { .. } => &mut state.answers,
                    _ => &mut state.reflectors,
                };
                latest.insert(update.resource.clone(), update);
            }
            FrameBody::Tap(relay) => state.taps.keep(seq, &relay),
            FrameBody::Event(event) => {
                self.metrics.observe_stages(&event.stages);
                self.metrics.observe_handled(&event.handled);
                let previous = object.and_then(|object| state.apply(&event, object));
                if let Some(previous) = previous.filter(|_| patching) {
                    published.lean = lean_frame(seq, event, &previous, &published.text);
                }
            }
            _ => {}
        }
        // Test-only: see crate::test_break.
        if is_event && crate::test_break::is(crate::test_break::Break::DropEvent) {
            state.events += 1;
            if state.events == crate::test_break::DROPPED_EVENT {
                tracing::warn!("WATCHLIFE_TEST_BREAK: event frame {seq} dropped");
                return seq;
            }
        }
        // Compressed while any viewer takes it so (see `Metrics::viewer_compressed`).
        if self.metrics.compressed_viewers() > 0 {
            published.deflated = state
                .deflate
                .push(seq, published.patched_text(), Instant::now());
        } else {
            state.deflate.stop();
        }
        state.window_bytes += published.bytes();
        state.window.push_back(published.clone());
        while state.window.len() > WINDOW
            || (state.window_bytes > WINDOW_BYTES && state.window.len() > 1)
        {
            if let Some(oldest) = state.window.pop_front() {
                state.window_bytes -= oldest.bytes();
            }
        }
        // Never waits: a receiver that is full lags instead (see the module
        // doc). No receiver is not an error either: nobody is watching yet.
        let _ = self.live.send(published);
        self.metrics.frame_published();
        seq
    }

    /// How many of `resources` have never finished a list.
    pub fn unlisted(&self, resources: &[String]) -> usize {
        let state = self.lock();
        resources
            .iter()
            .filter(|r| !state.listed.contains(*r))
            .count()
    }

    /// Forgets every object of `resource`: a relist replaces them all.
    pub fn clear_objects(&self, resource: &str) {
        let mut state = self.lock();
        if let Some(gone) = state.resources.remove(resource) {
            state.body_bytes -= gone.objects.iter().map(|o| o.0.json().len()).sum::<usize>();
        }
    }

    /// The current body of the object `key` (`namespace/name`, or `name`) of
    /// `resource`, and its resourceVersion.
    pub fn object(&self, resource: &str, key: &str) -> Option<(String, ObjectJson)> {
        let state = self.lock();
        let object = &state.resources.get(resource)?.objects.get(key)?.0;
        Some((object.resource_version().to_string(), object.json().clone()))
    }

    /// Joins a viewer. With `since` (a cursor in this stream), the viewer gets
    /// the frames after it when the window still has them all, or a snapshot
    /// with or without `bodies`.
    pub fn attach(&self, since: Option<u64>, bodies: Bodies) -> Attached {
        let state = self.lock();
        // Subscribing under the lock: no frame is published between the
        // cursor and the receiver, so nothing is missed or sent twice.
        let live = self.live.subscribe();
        let cursor = state.seq;
        let oldest_kept = state.window.front().map_or(cursor + 1, |p| p.seq);
        match since {
            Some(since) if since <= cursor && since + 1 >= oldest_kept => {
                let frames = state
                    .window
                    .iter()
                    .filter(|p| p.seq > since)
                    .cloned()
                    .collect();
                Attached {
                    cursor,
                    join: Join::Resume(frames),
                    live,
                }
            }
            _ => {
                let parts = SnapshotParts::take(&state, bodies, self.bodies_limit);
                drop(state);
                Attached {
                    cursor,
                    join: Join::Snapshot(self.encode_snapshot(cursor, parts, bodies)),
                    live,
                }
            }
        }
    }

    /// The `snapshot` frame of the current objects, and the `seq` it is
    /// consistent with, for a viewer that fell behind. Frames after the
    /// returned `seq` follow it.
    pub fn snapshot(&self, bodies: Bodies) -> (u64, Utf8Bytes) {
        let state = self.lock();
        let seq = state.seq;
        if bodies == Bodies::Light
            && let Some(text) = self.cached_snapshot(seq)
        {
            return (seq, text);
        }
        let parts = SnapshotParts::take(&state, bodies, self.bodies_limit);
        drop(state);
        (seq, self.encode_snapshot(seq, parts, bodies))
    }

    fn cached_snapshot(&self, seq: u64) -> Option<Utf8Bytes> {
        let cache = self.snapshot.lock().unwrap_or_else(|p| p.into_inner());
        cache
            .as_ref()
            .filter(|(at, _)| *at == seq)
            .map(|(_, text)| text.clone())
    }

    /// Encodes the snapshot taken at `seq`; a light one once: viewers that
    /// need the same one meanwhile wait for it on the cache's lock and share
    /// the bytes.
    fn encode_snapshot(&self, seq: u64, parts: SnapshotParts, bodies: Bodies) -> Utf8Bytes {
        if bodies == Bodies::Full {
            return encode(&ServerFrame {
                seq,
                body: FrameBody::Snapshot(parts.into_snapshot()),
            });
        }
        let mut cache = self.snapshot.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, text)) = cache.as_ref()
            && *at == seq
        {
            return text.clone();
        }
        let text = encode(&ServerFrame {
            seq,
            body: FrameBody::Snapshot(parts.into_snapshot()),
        });
        if cache.as_ref().is_none_or(|(at, _)| *at < seq) {
            *cache = Some((seq, text.clone()));
        }
        text
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One resource's current objects.
struct Filed {
    /// The objects' kind (`Pod`), for their references.
    kind: String,
    objects: BTreeSet<ByKey>,
}

/// An object ordered, and found, by its key (`namespace/name`, or `name`).
#[derive(Clone)]
struct ByKey(Object);

impl Borrow<str> for ByKey {
    fn borrow(&self) -> &str {
        self.0.key()
    }
}

impl PartialEq for ByKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.key() == other.0.key()
    }
}

impl Eq for ByKey {}

impl PartialOrd for ByKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ByKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.key().cmp(other.0.key())
    }
}

impl State {
    /// Files, replaces or forgets the object of `event`; returns the one
    /// the hub held for its key before, if any.
    fn apply(&mut self, event: &WatchEvent, object: Object) -> Option<Object> {
        let resource = &event.target.resource;
        match event.event_type {
            EventType::Added | EventType::Modified => {
                if !self.resources.contains_key(resource) {
                    self.resources.insert(
                        resource.clone(),
                        Filed {
                            kind: event.target.kind.clone(),
                            objects: BTreeSet::new(),
                        },
                    );
                }
                let filed = self.resources.get_mut(resource).expect("just filed");
                let added = object.json().len();
                let old = filed.objects.replace(ByKey(object));
                self.body_bytes += added;
                self.body_bytes -= old.as_ref().map_or(0, |o| o.0.json().len());
                old.map(|o| o.0)
            }
            EventType::Deleted => {
                let filed = self.resources.get_mut(resource)?;
                let old = filed.objects.take(object.key());
                self.body_bytes -= old.as_ref().map_or(0, |o| o.0.json().len());
                old.map(|o| o.0)
            }
            EventType::Bookmark | EventType::Error => None,
        }
    }
}

/// What a snapshot is made of, taken under the lock without copying objects.
struct SnapshotParts {
    /// Per resource: its name, its objects' kind, and its objects.
    resources: Vec<(String, String, Vec<Object>)>,
    reflectors: Vec<ReflectorUpdate>,
    listed: Vec<String>,
    taps: Vec<watchlife_protocol::tap::TapRelay>,
    /// Whether the snapshot carries the bodies.
    bodies: Bodies,
}

impl SnapshotParts {
    /// `bodies`, or `Full` for a light snapshot whose bodies fit `limit`.
    fn take(state: &State, bodies: Bodies, limit: usize) -> SnapshotParts {
        let bodies = if state.body_bytes <= limit {
            Bodies::Full
        } else {
            bodies
        };
        SnapshotParts {
            resources: state
                .resources
                .iter()
                .map(|(resource, filed)| {
                    let objects = filed.objects.iter().map(|o| o.0.clone()).collect();
                    (resource.clone(), filed.kind.clone(), objects)
                })
                .collect(),
            reflectors: state
                .answers
                .values()
                .chain(state.reflectors.values())
                .cloned()
                .collect(),
            listed: state.listed.iter().cloned().collect(),
            taps: state.taps.snapshot(),
            bodies,
        }
    }

    fn into_snapshot(self) -> Snapshot {
        let bodies = self.bodies;
        let mut objects = Vec::with_capacity(self.resources.iter().map(|r| r.2.len()).sum());
        for (resource, kind, filed) in self.resources {
            objects.extend(filed.into_iter().map(|object| {
                let meta = object.meta();
                SnapshotObject {
                    target: ObjectRef {
                        resource: resource.clone(),
                        kind: kind.clone(),
                        namespace: meta.namespace().map(String::from),
                        name: meta.name().to_string(),
                    },
                    resource_version: meta.resource_version.to_string(),
                    summary: summary(&kind, &object),
                    object: match bodies {
                        Bodies::Full => Some(object.json().clone()),
                        Bodies::Light => None,
                    },
                }
            }));
        }
        Snapshot {
            objects,
            reflectors: self.reflectors,
            listed: self.listed,
            taps: self.taps,
        }
    }
}

/// The columns a snapshot shows of `object`, a `kind`: from the fields the
/// informer parsed, or, for the few kinds whose columns those do not hold,
/// from its text.
fn summary(kind: &str, object: &Object) -> BTreeMap<String, String> {
    if needs_text(kind) {
        return summarize(kind, object.json());
    }
    let meta = object.meta();
    columns(
        kind,
        Known {
            deleting: meta.deleting,
            phase: meta.phase(),
            node: meta.node_name(),
            replicas: None,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use watchlife_protocol::{ObjectRef, ReflectorState, Stage, StageMark, StageTimes, WatchEvent};

    fn event(name: &str, event_type: EventType) -> FrameBody {
        FrameBody::Event(WatchEvent {
            event_type,
            target: ObjectRef {
                resource: "pods".into(),
                kind: "Pod".into(),
                namespace: Some("default".into()),
                name: name.into(),
            },
            resource_version: "1".into(),
            object: ObjectJson::from_value(
                &serde_json::json!({"metadata": {"namespace": "default", "name": name, "resourceVersion": "1"}}),
            ),
            stages: StageTimes::new(),
            initial: false,
            coalesced: false,
            handled: Default::default(),
            patch: None,
            server: None,
        })
    }

    #[test]
    fn publish_numbers_frames_and_tracks_objects() {
        let hub = Hub::new("s").with_snapshot_bodies_limit(0);
        assert_eq!(hub.publish(event("a", EventType::Added)), 1);
        hub.publish(FrameBody::Reflector(ReflectorUpdate {
            resource: "pods".into(),
            state: ReflectorState::Relist { reason: "x".into() },
        }));
        hub.publish(event("b", EventType::Added));
        hub.publish(event("a", EventType::Deleted));
        let (seq, snap) = hub.snapshot(Bodies::Light);
        assert_eq!(seq, 4);
        let snap = decode_snapshot(&snap, 4);
        let names: Vec<_> = snap
            .objects
            .iter()
            .map(|o| o.target.name.as_str())
            .collect();
        assert_eq!(names, vec!["b"]);
        assert_eq!(snap.objects[0].object, None, "a viewer's snapshot is light");
        let (_, full) = hub.snapshot(Bodies::Full);
        let full = decode_snapshot(&full, 4);
        let body = full.objects[0]
            .object
            .as_ref()
            .expect("a recording's has bodies");
        assert_eq!(body.parse()["metadata"]["name"], "b");
        let (rv, fetched) = hub.object("pods", "default/b").unwrap();
        assert_eq!(rv, "1");
        assert_eq!(&fetched, body);
        assert!(hub.object("pods", "default/a").is_none(), "deleted");
    }

    #[test]
    fn a_snapshot_keeps_each_reflectors_last_answer_beside_its_latest_state() {
        let hub = Hub::new("s");
        let report = |state| {
            hub.publish(FrameBody::Reflector(ReflectorUpdate {
                resource: "pods".into(),
                state,
            }))
        };
        report(ReflectorState::Answered {
            answer: watchlife_protocol::ServerAnswer::WatchSynthetic {
                asked: String::new(),
                events: 3,
            },
        });
        report(ReflectorState::Relist { reason: "x".into() });
        let (seq, text) = hub.snapshot(Bodies::Light);
        let states: Vec<_> = decode_snapshot(&text, seq)
            .reflectors
            .into_iter()
            .map(|r| r.state)
            .collect();
        assert!(
            matches!(
                states.as_slice(),
                [
                    ReflectorState::Answered { .. },
                    ReflectorState::Relist { .. }
                ]
            ),
            "{states:?}"
        );
    }

    #[test]
    fn a_light_snapshot_keeps_the_bodies_while_they_fit_the_limit() {
        let FrameBody::Event(a) = event("a", EventType::Added) else {
            unreachable!()
        };
        let body = a.object;
        let hub = Hub::new("s").with_snapshot_bodies_limit(2 * body.len());
        hub.publish(event("a", EventType::Added));
        hub.publish(event("b", EventType::Added));
        let bodies = |hub: &Hub| {
            let (seq, text) = hub.snapshot(Bodies::Light);
            let s = decode_snapshot(&text, seq);
            s.objects.iter().filter(|o| o.object.is_some()).count()
        };
        assert_eq!(bodies(&hub), 2, "two small bodies fit");
        hub.publish(event("c", EventType::Added));
        assert_eq!(bodies(&hub), 0, "three do not: references only");
        hub.publish(event("c", EventType::Deleted));
        assert_eq!(bodies(&hub), 2, "a deletion gives its bytes back");
        hub.publish(event("a", EventType::Modified));
        assert_eq!(bodies(&hub), 2, "a change replaces its bytes");
        hub.clear_objects("pods");
        assert_eq!(hub.lock().body_bytes, 0);
    }

    #[test]
    fn resume_inside_the_window_gets_exactly_the_missed_frames() {
        let hub = Hub::new("s");
        for i in 0..5 {
            hub.publish(event(&format!("p{i}"), EventType::Added));
        }
        let attached = hub.attach(Some(2), Bodies::Light);
        assert_eq!(attached.cursor, 5);
        match attached.join {
            Join::Resume(frames) => {
                assert_eq!(
                    frames.iter().map(|p| p.seq).collect::<Vec<_>>(),
                    vec![3, 4, 5]
                )
            }
            Join::Snapshot(_) => panic!("cursor 2 is in the window"),
        }
    }

    #[test]
    fn cursor_outside_the_window_or_ahead_gets_a_snapshot() {
        let hub = Hub::new("s");
        for i in 0..(WINDOW + 10) {
            hub.publish(event(&format!("p{}", i % 3), EventType::Added));
        }
        assert!(matches!(
            hub.attach(Some(5), Bodies::Light).join,
            Join::Snapshot(_)
        ));
        assert!(matches!(
            hub.attach(Some(10), Bodies::Light).join,
            Join::Resume(_)
        ));
        assert!(matches!(
            hub.attach(Some(10 + WINDOW as u64 * 2), Bodies::Light).join,
            Join::Snapshot(_)
        ));
        match hub.attach(None, Bodies::Light).join {
            Join::Snapshot(s) => {
                assert_eq!(decode_snapshot(&s, WINDOW as u64 + 10).objects.len(), 3)
            }
            Join::Resume(_) => panic!("a new viewer gets a snapshot"),
        }
    }

    #[test]
    fn large_frames_leave_the_window_by_its_bytes() {
        let hub = Hub::new("s");
        let big = |i: usize| match event(&format!("p{i}"), EventType::Modified) {
            FrameBody::Event(mut e) => {
                e.object = ObjectJson::from_value(&serde_json::json!({
                    "metadata": {"namespace": "default", "name": format!("p{i}")},
                    "data": "x".repeat(64 * 1024)
                }));
                FrameBody::Event(e)
            }
            _ => unreachable!(),
        };
        let frames = 2 * WINDOW_BYTES / (64 * 1024);
        for i in 0..frames {
            hub.publish(big(i % 3));
        }
        assert!(hub.lock().window_bytes <= WINDOW_BYTES);
        assert!(hub.lock().window.len() < WINDOW);
        assert!(matches!(
            hub.attach(Some(1), Bodies::Light).join,
            Join::Snapshot(_)
        ));
        let recent = frames as u64 - 10;
        assert!(
            matches!(hub.attach(Some(recent), Bodies::Light).join, Join::Resume(f) if f.len() == 10)
        );
    }

    fn decode_snapshot(text: &Utf8Bytes, seq: u64) -> Snapshot {
        let frame: ServerFrame = serde_json::from_str(text.as_str()).unwrap();
        assert_eq!(frame.seq, seq);
        match frame.body {
            FrameBody::Snapshot(s) => s,
            other => panic!("not a snapshot: {other:?}"),
        }
    }

    #[test]
    fn a_snapshot_is_encoded_once_per_seq() {
        let hub = Hub::new("s");
        hub.publish(event("a", EventType::Added));
        let (seq, first) = hub.snapshot(Bodies::Light);
        let (_, again) = hub.snapshot(Bodies::Light);
        // The same bytes, not an equal copy.
        assert_eq!(first.as_str().as_ptr(), again.as_str().as_ptr());
        match hub.attach(None, Bodies::Light).join {
            Join::Snapshot(s) => assert_eq!(s.as_str().as_ptr(), first.as_str().as_ptr()),
            Join::Resume(_) => panic!("a new viewer gets a snapshot"),
        }
        hub.publish(event("b", EventType::Added));
        let (next, newer) = hub.snapshot(Bodies::Light);
        assert_eq!(next, seq + 1);
        assert_eq!(decode_snapshot(&newer, next).objects.len(), 2);
    }

    #[test]
    fn publishing_events_feeds_the_stage_latency_metrics() {
        let hub = Hub::new("s");
        let FrameBody::Event(mut e) = event("a", EventType::Added) else {
            unreachable!()
        };
        e.stages.insert(Stage::Etcd, StageMark::at(100));
        e.stages.insert(Stage::WatchCache, StageMark::at(130));
        hub.publish(FrameBody::Event(e));
        let text = hub.metrics().render();
        assert!(text.contains("watchlife_stage_latency_seconds_count{stage=\"watch_cache\"} 1"));
        assert!(text.contains("watchlife_frames_published_total 1"));
    }

    #[tokio::test]
    async fn live_frames_follow_the_cursor_without_gap() {
        let hub = Hub::new("s");
        hub.publish(event("a", EventType::Added));
        let mut attached = hub.attach(None, Bodies::Light);
        hub.publish(event("b", EventType::Added));
        let next = attached.live.recv().await.unwrap();
        assert_eq!(next.seq, attached.cursor + 1);
        assert!(next.text.as_str().contains(r#""name":"b""#));
    }
}
