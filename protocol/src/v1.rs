//! Frames of protocol 1, read into this protocol's types: recordings made
//! before protocol 2 (the shipped scenarios of that time, users' files)
//! still play.
//!
//! Protocol 1 wrote a frame's payload beside `seq` and `type`, and an
//! object's reference (`resource`, `kind`, `namespace`, `name`) beside the
//! rest of an event or snapshot object. Protocol 2 nests the payload under
//! `data` and the reference under `target`; nothing else changed.

use crate::frame::ServerFrame;
use serde_json::{Map, Value};

/// The fields of protocol 1 that protocol 2 nests under `target`.
const TARGET_FIELDS: [&str; 4] = ["resource", "kind", "namespace", "name"];

/// Reads one protocol-1 frame (a recording's line: `t_ms` is ignored).
pub fn frame_from_v1(text: &str) -> Result<ServerFrame, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let Value::Object(mut fields) = value else {
        return Err("a frame is a JSON object".into());
    };
    let seq = fields
        .remove("seq")
        .ok_or("a protocol 1 frame has a `seq`")?;
    let kind = fields
        .remove("type")
        .ok_or("a protocol 1 frame has a `type`")?;
    fields.remove("t_ms");
    match kind.as_str() {
        Some("event") => nest_target(&mut fields),
        Some("snapshot") => {
            if let Some(Value::Array(objects)) = fields.get_mut("objects") {
                for object in objects.iter_mut().filter_map(Value::as_object_mut) {
                    nest_target(object);
                }
            }
        }
        _ => {}
    }
    let mut frame = Map::new();
    frame.insert("seq".into(), seq);
    frame.insert("type".into(), kind);
    frame.insert("data".into(), Value::Object(fields));
    // Written out and read again: the object's text becomes this
    // protocol's shared text on the way.
    let text = Value::Object(frame).to_string();
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

/// Moves an object's reference fields under `target`.
fn nest_target(fields: &mut Map<String, Value>) {
    let mut target = Map::new();
    for name in TARGET_FIELDS {
        if let Some(value) = fields.remove(name) {
            target.insert(name.into(), value);
        }
    }
    fields.insert("target".into(), Value::Object(target));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FrameBody;

    #[test]
    fn a_protocol_1_event_reads_whole() {
        let line = r#"{"t_ms":3,"seq":7,"type":"event","event":"ADDED","resource":"pods","kind":"Pod","namespace":"default","name":"web-1","resource_version":"519","object":{"kind":"Pod","metadata":{"name":"web-1"}},"stages":{"etcd":{"at":1000}},"initial":true}"#;
        let frame = frame_from_v1(line).unwrap();
        assert_eq!(frame.seq, 7);
        let FrameBody::Event(e) = frame.body else {
            panic!("not an event: {frame:?}")
        };
        assert_eq!(e.target.key(), "default/web-1");
        assert_eq!(e.target.kind, "Pod");
        assert_eq!(e.resource_version, "519");
        assert!(e.initial);
        assert_eq!(e.object.parse()["metadata"]["name"], "web-1");
    }

    #[test]
    fn a_protocol_1_snapshot_keeps_its_bodies() {
        let line = r#"{"seq":2,"type":"snapshot","objects":[{"resource":"configmaps","kind":"ConfigMap","name":"c","resource_version":"9","object":{"data":{"a":"b"}}}],"reflectors":[]}"#;
        let FrameBody::Snapshot(s) = frame_from_v1(line).unwrap().body else {
            panic!("not a snapshot")
        };
        assert_eq!(s.objects[0].target.name, "c");
        assert_eq!(s.objects[0].target.namespace, None);
        let body = s.objects[0].object.as_ref().unwrap().parse();
        assert_eq!(body["data"]["a"], "b");
    }

    #[test]
    fn other_frames_move_under_data() {
        let line = r#"{"seq":0,"type":"heartbeat","at":5}"#;
        assert_eq!(
            frame_from_v1(line).unwrap().body,
            FrameBody::Heartbeat(crate::Heartbeat {
                at: 5,
                watches_open: None
            })
        );
        assert!(frame_from_v1(r#"{"seq":0,"type":"nope"}"#).is_err());
        assert!(frame_from_v1("[1]").is_err());
        assert!(frame_from_v1(r#"{"type":"heartbeat","at":1}"#).is_err());
    }
}
