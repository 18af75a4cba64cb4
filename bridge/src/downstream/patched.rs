//! The lean form of an update's frame, for viewers that ask for bodies as
//! merge patches (`/ws?bodies=patch`): the same frame with the object's body
//! replaced by what changed since the object's previous version in the
//! stream (see [`watchlife_protocol::patch`]).

use crate::downstream::frame_text::encode;
use axum::extract::ws::Utf8Bytes;
use watchlife_informer::Object;
use watchlife_protocol::patch::{BodyPatch, merge_patch};
use watchlife_protocol::{EventType, FrameBody, ObjectJson, ServerFrame, WatchEvent};

/// The frame `seq` of the MODIFIED `event` with its body as a merge patch
/// against `previous` (the object the stream held before it), when that
/// frame is shorter than `full`, the frame as everyone else gets it.
/// `None` for other events, for a body no merge patch can reach, and for a
/// patch that saves nothing.
pub fn lean_frame(
    seq: u64,
    mut event: WatchEvent,
    previous: &Object,
    full: &Utf8Bytes,
) -> Option<Utf8Bytes> {
    if event.event_type != EventType::Modified || event.object.is_null() {
        return None;
    }
    let merge = merge_patch(previous.json().as_str(), event.object.as_str())?;
    event.object = ObjectJson::null();
    event.patch = Some(Box::new(BodyPatch {
        base: previous.resource_version().to_string(),
        merge: ObjectJson::from_value(&merge),
    }));
    let lean = encode(&ServerFrame {
        seq,
        body: FrameBody::Event(event),
    });
    (lean.len() < full.len()).then_some(lean)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use watchlife_protocol::ObjectRef;
    use watchlife_protocol::patch::apply_merge_patch;

    fn configmap(rv: &str, mode: &str) -> Value {
        json!({"metadata": {"name": "settings", "namespace": "default", "resourceVersion": rv},
               "data": {"mode": mode, "application.properties": "x".repeat(1000)}})
    }

    fn modified(object: &Value) -> WatchEvent {
        WatchEvent {
            event_type: EventType::Modified,
            target: ObjectRef {
                resource: "configmaps".into(),
                kind: "ConfigMap".into(),
                namespace: Some("default".into()),
                name: "settings".into(),
            },
            resource_version: object["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .into(),
            object: ObjectJson::from_value(object),
            patch: None,
            stages: Default::default(),
            initial: false,
            coalesced: false,
            handled: Default::default(),
            server: None,
        }
    }

    fn full(seq: u64, event: &WatchEvent) -> Utf8Bytes {
        encode(&ServerFrame {
            seq,
            body: FrameBody::Event(event.clone()),
        })
    }

    #[test]
    fn an_update_becomes_its_change_and_rebuilds_the_whole() {
        let (before, after) = (configmap("7", "old"), configmap("9", "new"));
        let event = modified(&after);
        let full = full(3, &event);
        let lean = lean_frame(3, event.clone(), &Object::from_value(&before), &full).unwrap();
        assert!(
            lean.len() * 4 < full.len(),
            "{} of {}",
            lean.len(),
            full.len()
        );
        let ServerFrame { seq, body } = serde_json::from_str(lean.as_str()).unwrap();
        let FrameBody::Event(lean) = body else {
            panic!("not an event")
        };
        assert_eq!(seq, 3);
        assert!(lean.object.is_null());
        let patch = lean.patch.clone().unwrap();
        assert_eq!(patch.base, "7");
        let mut rebuilt = before;
        apply_merge_patch(&mut rebuilt, &patch.merge.parse());
        assert_eq!(rebuilt, after);
        // Every other field is the full frame's.
        assert_eq!(
            WatchEvent {
                object: event.object.clone(),
                patch: None,
                ..lean
            },
            event
        );
    }

    #[test]
    fn other_events_and_unreachable_bodies_stay_whole() {
        let before = Object::from_value(&configmap("7", "old"));
        let mut added = modified(&configmap("9", "new"));
        added.event_type = EventType::Added;
        assert_eq!(
            lean_frame(1, added.clone(), &before, &full(1, &added)),
            None
        );
        // A field set to null: no merge patch can say it.
        let mut nulled = configmap("9", "old");
        nulled["data"]["mode"] = Value::Null;
        let nulled = modified(&nulled);
        assert_eq!(
            lean_frame(1, nulled.clone(), &before, &full(1, &nulled)),
            None
        );
        // A small object whose change is all of it: the patch saves nothing.
        let tiny = Object::from_value(&json!({"metadata": {"resourceVersion": "1"}}));
        let all = modified(&json!({"metadata": {"resourceVersion": "2", "name": "settings"}}));
        assert_eq!(lean_frame(1, all.clone(), &tiny, &full(1, &all)), None);
    }
}
