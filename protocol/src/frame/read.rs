//! Reading a [`ServerFrame`] without buffering it first.
//!
//! Derived, a flattened and internally tagged frame is read into serde's
//! buffer before its `type` can be looked at, and the buffer is copied
//! again for each level below: an event's object was built three times.
//! The bridge writes `seq` and `type` first, so the body is read straight
//! from the rest of the map. A frame written in another order (a
//! recording's line starts with `t_ms`) is written again with `seq` and
//! `type` first and read that way: slower, the same frame, and no second
//! copy of every body's reader in the page.

use super::{FrameBody, ServerFrame};
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::fmt;

impl<'de> Deserialize<'de> for ServerFrame {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(FrameVisitor)
    }
}

struct FrameVisitor;

impl<'de> Visitor<'de> for FrameVisitor {
    type Value = ServerFrame;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a watchlife frame: an object with `seq` and `type`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ServerFrame, A::Error> {
        let mut seq = None;
        let mut tag = None;
        // Fields met before both `seq` and `type`: none, from the bridge.
        let mut before = serde_json::Map::new();
        while seq.is_none() || tag.is_none() {
            match map.next_key::<Key>()? {
                Some(Key::Seq) => seq = Some(map.next_value::<u64>()?),
                Some(Key::Type) => tag = Some(map.next_value::<Tag>()?),
                Some(Key::Other(name)) => {
                    before.insert(name, map.next_value()?);
                }
                None => break,
            }
        }
        let seq = seq.ok_or_else(|| de::Error::missing_field("seq"))?;
        let tag = tag.ok_or_else(|| de::Error::missing_field("type"))?;
        if !before.is_empty() {
            while let Some((name, value)) = map.next_entry::<String, serde_json::Value>()? {
                before.insert(name, value);
            }
            return in_order(seq, tag, before).map_err(de::Error::custom);
        }
        let body = tag.body(MapAccessDeserializer::new(map))?;
        Ok(ServerFrame { seq, body })
    }
}

/// Reads a frame whose fields came in another order: written again with
/// `seq` and `type` first, then read the usual way.
fn in_order(
    seq: u64,
    tag: Tag,
    mut fields: serde_json::Map<String, serde_json::Value>,
) -> serde_json::Result<ServerFrame> {
    // Fields of the frame itself, which the body does not read.
    fields.remove("seq");
    fields.remove("type");
    let rest = serde_json::to_string(&fields)?;
    let rest = rest.strip_prefix('{').unwrap_or(&rest);
    let comma = if rest.starts_with('}') { "" } else { "," };
    let name = serde_json::to_string(&tag)?;
    serde_json::from_str(&format!(r#"{{"seq":{seq},"type":{name}{comma}{rest}"#))
}

/// A frame's field name, as far as the frame itself is concerned.
enum Key {
    Seq,
    Type,
    Other(String),
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: de::Error>(self, name: &str) -> Result<Key, E> {
                Ok(match name {
                    "seq" => Key::Seq,
                    "type" => Key::Type,
                    other => Key::Other(other.to_string()),
                })
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

/// A frame's `type`: which [`FrameBody`] the other fields make.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Tag {
    Hello,
    Event,
    Reflector,
    WatchCache,
    Heartbeat,
    Resync,
    Snapshot,
    Error,
    ActionResult,
}

impl Tag {
    /// Reads the body of this type from the frame's other fields.
    fn body<'de, D: Deserializer<'de>>(self, fields: D) -> Result<FrameBody, D::Error> {
        Ok(match self {
            Tag::Hello => FrameBody::Hello(Deserialize::deserialize(fields)?),
            Tag::Event => FrameBody::Event(Deserialize::deserialize(fields)?),
            Tag::Reflector => FrameBody::Reflector(Deserialize::deserialize(fields)?),
            Tag::WatchCache => FrameBody::WatchCache(Deserialize::deserialize(fields)?),
            Tag::Heartbeat => FrameBody::Heartbeat(Deserialize::deserialize(fields)?),
            Tag::Resync => FrameBody::Resync(Deserialize::deserialize(fields)?),
            Tag::Snapshot => FrameBody::Snapshot(Deserialize::deserialize(fields)?),
            Tag::Error => FrameBody::Error(Deserialize::deserialize(fields)?),
            Tag::ActionResult => FrameBody::ActionResult(Deserialize::deserialize(fields)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::{FrameBody, ServerFrame};

    const EVENT: &str = r#"{"seq":7,"type":"event","event":"ADDED","resource":"pods","kind":"Pod","namespace":"default","name":"web-1","resource_version":"519","object":{"kind":"Pod","metadata":{"name":"web-1"}},"stages":{"etcd":{"at":1000},"fifo":{"at":1200,"depth":2}},"coalesced":true}"#;

    #[test]
    fn a_frame_in_any_order_reads_the_same() {
        let first: ServerFrame = serde_json::from_str(EVENT).unwrap();
        let value: serde_json::Value = serde_json::from_str(EVENT).unwrap();
        // The same fields after another one, `type` last.
        let reordered = EVENT
            .replace(r#"{"seq":7,"type":"event","#, r#"{"t_ms":3,"seq":7,"#)
            .replace(
                r#""coalesced":true}"#,
                r#""coalesced":true,"type":"event"}"#,
            );
        let again: ServerFrame = serde_json::from_str(&reordered).unwrap();
        assert_eq!(first, again);
        let FrameBody::Event(e) = &first.body else {
            panic!("an event: {first:?}");
        };
        assert_eq!((first.seq, e.target.key().as_str()), (7, "default/web-1"));
        assert!(e.coalesced && !e.initial);
        assert_eq!(e.object["metadata"]["name"], "web-1");
        assert_eq!(serde_json::to_value(&first).unwrap(), value);
    }

    #[test]
    fn a_frame_without_seq_or_type_or_with_a_bad_body_is_an_error() {
        for text in [
            r#"{"type":"heartbeat","at":1}"#,
            r#"{"seq":1,"at":1}"#,
            r#"{"seq":1,"type":"heartbeat"}"#,
            r#"{"seq":1,"type":"heartbeat","at":"soon"}"#,
            r#"{"at":1,"seq":1,"type":"heartbeat","extra":[}"#,
            r#"[1,2]"#,
        ] {
            assert!(serde_json::from_str::<ServerFrame>(text).is_err(), "{text}");
        }
        let ok: ServerFrame =
            serde_json::from_str(r#"{"at":1,"type":"heartbeat","seq":1}"#).unwrap();
        assert_eq!(ok.seq, 1);
    }
}
