//! The fan-out hub: one ordered stream of frames, serialized once, shared by
//! every viewer.
//!
//! Stream frames are numbered, encoded to JSON once, kept in a sliding window
//! for viewers that reconnect, and broadcast to every connected viewer as the
//! same bytes. The hub also keeps the current objects, so a viewer that joins
//! (or falls behind) gets a snapshot consistent with a known `seq`.

use axum::extract::ws::Utf8Bytes;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::broadcast;
use watchlife_protocol::frame::SnapshotObject;
use watchlife_protocol::{EventType, FrameBody, ObjectRef, ReflectorUpdate, ServerFrame, Snapshot};

/// Stream frames kept for resuming viewers. At the demo's pace this is many
/// minutes; at 1,000 events/s, about four seconds — enough to ride out a
/// reconnect, after which a snapshot is cheaper than a replay anyway.
pub const WINDOW: usize = 4096;

/// Frames one viewer may fall behind the newest before it is resynced. The
/// broadcast ring is shared, so this bounds memory for all viewers at once.
pub const VIEWER_LAG: usize = 1024;

/// A stream frame as broadcast: its number, its bytes, and what viewers filter on.
#[derive(Debug, Clone)]
pub struct Published {
    pub seq: u64,
    pub text: Utf8Bytes,
    /// Resource of the frame (events and reflector updates both have one).
    pub resource: Arc<str>,
    /// Namespace of the event's object, if any.
    pub namespace: Option<Arc<str>>,
}

/// How a viewer joins the stream.
pub enum Join {
    /// Frames after the viewer's cursor, still in the window: send them.
    Resume(Vec<Published>),
    /// A fresh viewer, or one whose cursor is gone: send this snapshot.
    Snapshot(Snapshot),
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
    objects: BTreeMap<ObjectRef, SnapshotObject>,
    reflectors: BTreeMap<String, ReflectorUpdate>,
}

/// The hub. Cheap to clone.
#[derive(Clone)]
pub struct Hub {
    state: Arc<Mutex<State>>,
    live: broadcast::Sender<Published>,
    stream_id: Arc<str>,
}

impl Hub {
    /// An empty hub whose stream is called `stream_id`.
    pub fn new(stream_id: impl Into<Arc<str>>) -> Self {
        Hub {
            state: Arc::new(Mutex::new(State {
                seq: 0,
                window: VecDeque::with_capacity(WINDOW),
                objects: BTreeMap::new(),
                reflectors: BTreeMap::new(),
            })),
            live: broadcast::channel(VIEWER_LAG).0,
            stream_id: stream_id.into(),
        }
    }

    /// Name of this stream (see [`watchlife_protocol::Hello::stream`]).
    pub fn stream_id(&self) -> &str {
        &self.stream_id
    }

    /// Newest `seq`.
    pub fn cursor(&self) -> u64 {
        self.lock().seq
    }

    /// Numbers, encodes and broadcasts one stream frame, and updates the
    /// current objects when it is an event. Returns its `seq`.
    pub fn publish(&self, body: FrameBody) -> u64 {
        debug_assert!(body.is_stream(), "control frames belong to one connection");
        let mut state = self.lock();
        state.seq += 1;
        let seq = state.seq;
        let (resource, namespace) = match &body {
            FrameBody::Event(e) => (e.target.resource.as_str(), e.target.namespace.as_deref()),
            FrameBody::Reflector(r) => (r.resource.as_str(), None),
            _ => ("", None),
        };
        let published = Published {
            seq,
            resource: resource.into(),
            namespace: namespace.map(Into::into),
            text: encode(&ServerFrame {
                seq,
                body: body.clone(),
            }),
        };
        if let FrameBody::Reflector(update) = &body {
            state
                .reflectors
                .insert(update.resource.clone(), update.clone());
        }
        if let FrameBody::Event(event) = body {
            match event.event_type {
                EventType::Added | EventType::Modified => {
                    state.objects.insert(
                        event.target.clone(),
                        SnapshotObject {
                            target: event.target,
                            resource_version: event.resource_version,
                            object: event.object,
                        },
                    );
                }
                EventType::Deleted => {
                    state.objects.remove(&event.target);
                }
                EventType::Bookmark | EventType::Error => {}
            }
        }
        if state.window.len() == WINDOW {
            state.window.pop_front();
        }
        state.window.push_back(published.clone());
        // No receiver is not an error: nobody is watching yet.
        let _ = self.live.send(published);
        seq
    }

    /// Forgets every object of `resource`: a relist replaces them all.
    pub fn clear_objects(&self, resource: &str) {
        self.lock().objects.retain(|k, _| k.resource != resource);
    }

    /// Joins a viewer. With `since` (a cursor in this stream), the viewer gets
    /// the frames after it when the window still has them all, or a snapshot.
    pub fn attach(&self, since: Option<u64>) -> Attached {
        let state = self.lock();
        // Subscribing under the lock: no frame is published between the
        // cursor and the receiver, so nothing is missed or sent twice.
        let live = self.live.subscribe();
        let cursor = state.seq;
        let oldest_kept = state.window.front().map_or(cursor + 1, |p| p.seq);
        let join = match since {
            Some(since) if since <= cursor && since + 1 >= oldest_kept => Join::Resume(
                state
                    .window
                    .iter()
                    .filter(|p| p.seq > since)
                    .cloned()
                    .collect(),
            ),
            _ => Join::Snapshot(snapshot(&state)),
        };
        Attached { cursor, join, live }
    }

    /// The current objects and the `seq` they are consistent with, for a
    /// viewer that fell behind. Frames after the returned `seq` follow it.
    pub fn snapshot(&self) -> (u64, Snapshot) {
        let state = self.lock();
        (state.seq, snapshot(&state))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn snapshot(state: &State) -> Snapshot {
    Snapshot {
        objects: state.objects.values().cloned().collect(),
        reflectors: state.reflectors.values().cloned().collect(),
    }
}

/// Encodes a frame as one JSON text message.
pub fn encode(frame: &ServerFrame) -> Utf8Bytes {
    serde_json::to_string(frame)
        .expect("frames are plain data and always serialize")
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use watchlife_protocol::{ReflectorState, StageTimes, WatchEvent};

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
            object: serde_json::Value::Null,
            stages: StageTimes::new(),
            initial: false,
            coalesced: false,
        })
    }

    #[test]
    fn publish_numbers_frames_and_tracks_objects() {
        let hub = Hub::new("s");
        assert_eq!(hub.publish(event("a", EventType::Added)), 1);
        hub.publish(FrameBody::Reflector(ReflectorUpdate {
            resource: "pods".into(),
            state: ReflectorState::Relist { reason: "x".into() },
        }));
        hub.publish(event("b", EventType::Added));
        hub.publish(event("a", EventType::Deleted));
        let (seq, snap) = hub.snapshot();
        assert_eq!(seq, 4);
        let names: Vec<_> = snap
            .objects
            .iter()
            .map(|o| o.target.name.as_str())
            .collect();
        assert_eq!(names, vec!["b"]);
    }

    #[test]
    fn resume_inside_the_window_gets_exactly_the_missed_frames() {
        let hub = Hub::new("s");
        for i in 0..5 {
            hub.publish(event(&format!("p{i}"), EventType::Added));
        }
        let attached = hub.attach(Some(2));
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
        assert!(matches!(hub.attach(Some(5)).join, Join::Snapshot(_)));
        assert!(matches!(hub.attach(Some(10)).join, Join::Resume(_)));
        assert!(matches!(
            hub.attach(Some(10 + WINDOW as u64 * 2)).join,
            Join::Snapshot(_)
        ));
        match hub.attach(None).join {
            Join::Snapshot(s) => assert_eq!(s.objects.len(), 3),
            Join::Resume(_) => panic!("a new viewer gets a snapshot"),
        }
    }

    #[tokio::test]
    async fn live_frames_follow_the_cursor_without_gap() {
        let hub = Hub::new("s");
        hub.publish(event("a", EventType::Added));
        let mut attached = hub.attach(None);
        hub.publish(event("b", EventType::Added));
        let next = attached.live.recv().await.unwrap();
        assert_eq!(next.seq, attached.cursor + 1);
        assert!(next.text.as_str().contains(r#""name":"b""#));
    }
}
