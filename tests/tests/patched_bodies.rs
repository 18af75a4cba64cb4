//! Updates' bodies as merge patches (`/ws?bodies=patch`, as the page asks),
//! against the real binary with real WebSocket clients: a viewer that takes
//! them rebuilds, from its snapshot's bodies and the patches, every body a
//! viewer of whole bodies receives, and every other field is the same.

mod fanout_support;

use fanout_support::{Client, Read, WAIT};
use serde_json::Value;
use std::collections::BTreeMap;
use watchlife_protocol::patch::apply_merge_patch;
use watchlife_protocol::{EventType, FrameBody, ObjectJson, WatchEvent};
use watchlife_tests::bridge::Bridge;

/// Stream frames both viewers read after the later one joined.
const FRAMES: u64 = 600;

/// An object's place: resource and key.
type Key = (String, String);

/// What one viewer saw: each event by `seq`, its body as a JSON value
/// (rebuilt from a patch where one came) and the rest of the event.
struct Viewer {
    client: Client,
    /// Each object's latest resourceVersion and body, as the page keeps them.
    bodies: BTreeMap<Key, (String, Value)>,
    events: BTreeMap<u64, (Option<Value>, WatchEvent)>,
    /// Events whose body came as a patch.
    patched: usize,
}

impl Viewer {
    /// Connects with `query` and reads through the snapshot; returns the
    /// viewer and its cursor.
    async fn greeted(ws: &str, query: &str) -> (Viewer, u64) {
        let mut viewer = Viewer {
            client: Client::connect(&format!("{ws}{query}")).await,
            bodies: BTreeMap::new(),
            events: BTreeMap::new(),
            patched: 0,
        };
        loop {
            let (seq, was_snapshot) = viewer.read_one().await;
            if was_snapshot {
                return (viewer, seq);
            }
        }
    }

    /// Reads through stream frame `until`.
    async fn read_through(mut self, until: u64) -> Viewer {
        while self.read_one().await.0 < until {}
        self
    }

    /// Reads one frame, keeping bodies as the page does: from the snapshot,
    /// then whole or patched. Its `seq`, and whether it was the snapshot.
    async fn read_one(&mut self) -> (u64, bool) {
        let frame = match self.client.read(WAIT).await {
            Read::Frame(frame, _) => *frame,
            Read::Closed(close) => panic!("the connection closed: {close:?}"),
        };
        match frame.body {
            FrameBody::Snapshot(snapshot) => {
                for o in snapshot.objects {
                    let body = o.object.expect("the demo's snapshot holds every body");
                    let key = (o.target.resource.clone(), o.target.key());
                    self.bodies.insert(key, (o.resource_version, body.parse()));
                }
                return (frame.seq, true);
            }
            FrameBody::Event(event) => self.keep(frame.seq, event),
            _ => {}
        }
        (frame.seq, false)
    }

    fn keep(&mut self, seq: u64, mut event: WatchEvent) {
        let key = (event.target.resource.clone(), event.target.key());
        let body = match event.patch.take() {
            Some(patch) => {
                self.patched += 1;
                let (rv, held) = self.bodies.get(&key).expect("a patch of an object held");
                assert_eq!(rv, &patch.base, "a patch applies to the version held");
                let mut body = held.clone();
                apply_merge_patch(&mut body, &patch.merge.parse());
                Some(body)
            }
            None if event.object.is_null() => None,
            None => Some(event.object.parse()),
        };
        match (event.event_type, &body) {
            (EventType::Deleted, _) => drop(self.bodies.remove(&key)),
            (_, Some(body)) => {
                let kept = (event.resource_version.clone(), body.clone());
                self.bodies.insert(key, kept);
            }
            _ => {}
        }
        event.object = ObjectJson::null();
        self.events.insert(seq, (body, event));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patched_viewer_rebuilds_every_body_a_whole_viewer_receives() {
    let bridge = Bridge::start(&["--demo", "--demo-rate", "300"]).await;
    let ws = bridge.ws_url();
    // The patched viewer first: the hub makes lean frames from then on.
    let (patched, patched_at) =
        Viewer::greeted(&ws, "?batch=true&compress=deflate&bodies=patch").await;
    let (whole, whole_at) = Viewer::greeted(&ws, "?batch=true").await;
    let until = whole_at.max(patched_at) + FRAMES;
    let (patched, whole) = tokio::join!(patched.read_through(until), whole.read_through(until));
    let both: Vec<u64> = whole
        .events
        .keys()
        .copied()
        .filter(|seq| *seq > whole_at)
        .collect();
    assert!(
        both.len() > 100,
        "only {} events in {FRAMES} frames",
        both.len()
    );
    for seq in &both {
        let (whole_body, whole_event) = &whole.events[seq];
        let (patched_body, patched_event) = patched
            .events
            .get(seq)
            .unwrap_or_else(|| panic!("event {seq} missing from the patched viewer"));
        assert_eq!(patched_body, whole_body, "the body of event {seq}");
        assert_eq!(patched_event, whole_event, "event {seq} but its body");
    }
    assert!(
        patched.patched * 4 > both.len(),
        "only {} of {} events came as patches: the demo's story is mostly updates",
        patched.patched,
        both.len()
    );
    assert_eq!(
        whole.patched, 0,
        "a viewer that did not ask gets whole bodies"
    );
    eprintln!(
        "{} events, {} of them as patches; on the wire: patched and compressed {} bytes, whole {}",
        both.len(),
        patched.patched,
        patched.client.wire_bytes,
        whole.client.wire_bytes
    );
}
