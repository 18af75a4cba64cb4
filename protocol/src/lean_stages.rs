//! An event's stage times as protocol 3 carries them: one absolute time,
//! `t0` (the first stage's, µs since the epoch), and each stage's offset from
//! it in µs, alone or with the stage's queue depth:
//!
//! ```json
//! {"t0":1795628013590889,"etcd":0,"watch_cache":[64,1],"reflector":208}
//! ```
//!
//! Protocol 2 wrote every stage as `{"at": micros, "depth": n}`, sixteen
//! digits of absolute time each; an event's nine stages cost about 150 bytes
//! more that way. Both forms are read (recordings made before keep playing),
//! even mixed in one map; only the lean one is written. An offset may be
//! negative: a stage read before the one before it (see `docs/protocol.md`).

use crate::stage::{Stage, StageMark, StageTimes};
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use std::fmt;

/// The key of the absolute time.
const T0: &str = "t0";

/// Writes `times` in the lean form (`#[serde(with)]`).
pub fn serialize<S: Serializer>(times: &StageTimes, s: S) -> Result<S::Ok, S::Error> {
    let Some(t0) = times.values().next().map(|m| m.at) else {
        return s.serialize_map(Some(0))?.end();
    };
    let mut map = s.serialize_map(Some(times.len() + 1))?;
    map.serialize_entry(T0, &t0)?;
    for (stage, mark) in times {
        let offset = mark.at as i64 - t0 as i64;
        match mark.depth {
            None => map.serialize_entry(stage, &offset)?,
            Some(depth) => map.serialize_entry(stage, &(offset, depth))?,
        }
    }
    map.end()
}

/// Reads either form, or both mixed (`#[serde(with)]`).
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<StageTimes, D::Error> {
    d.deserialize_map(TimesVisitor)
}

/// A stage's value as read: an absolute mark (protocol 2) or an offset from `t0`.
enum Read {
    Absolute(StageMark),
    Offset(i64, Option<u32>),
}

/// A key of the map: `t0` or a stage.
enum Key {
    T0,
    Stage(Stage),
}

impl<'de> serde::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("\"t0\" or a stage's name")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                if v == T0 {
                    return Ok(Key::T0);
                }
                Stage::ALL
                    .iter()
                    .find(|s| s.wire_name() == v)
                    .map(|s| Key::Stage(*s))
                    .ok_or_else(|| E::unknown_variant(v, &["t0", "etcd", "…", "reconcile"]))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

impl<'de> serde::Deserialize<'de> for Read {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Read, D::Error> {
        d.deserialize_any(ReadVisitor)
    }
}

struct ReadVisitor;

impl<'de> Visitor<'de> for ReadVisitor {
    type Value = Read;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an offset, [offset, depth], or {\"at\", \"depth\"}")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Read, E> {
        Ok(Read::Offset(v, None))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Read, E> {
        i64::try_from(v)
            .map(|v| Read::Offset(v, None))
            .map_err(|_| E::custom("a stage's offset out of range"))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Read, A::Error> {
        let offset = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(0, &self))?;
        let depth = seq.next_element()?;
        Ok(Read::Offset(offset, depth))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Read, A::Error> {
        let mark = StageMark::deserialize(de::value::MapAccessDeserializer::new(map))?;
        Ok(Read::Absolute(mark))
    }
}

struct TimesVisitor;

impl<'de> Visitor<'de> for TimesVisitor {
    type Value = StageTimes;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of stage times")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StageTimes, A::Error> {
        let mut t0: Option<u64> = None;
        let mut read: Vec<(Stage, Read)> = Vec::new();
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::T0 => t0 = Some(map.next_value()?),
                Key::Stage(stage) => read.push((stage, map.next_value()?)),
            }
        }
        read.into_iter()
            .map(|(stage, value)| {
                let mark = match value {
                    Read::Absolute(mark) => mark,
                    Read::Offset(offset, depth) => {
                        let t0 = t0.ok_or_else(|| de::Error::missing_field(T0))?;
                        let at = t0
                            .checked_add_signed(offset)
                            .ok_or_else(|| de::Error::custom("a stage's time out of range"))?;
                        StageMark { at, depth }
                    }
                };
                Ok((stage, mark))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct Carrier {
        #[serde(with = "super")]
        stages: StageTimes,
    }

    fn times() -> StageTimes {
        StageTimes::from([
            (Stage::Etcd, StageMark::at(1_795_628_013_590_889)),
            (
                Stage::WatchCache,
                StageMark {
                    at: 1_795_628_013_590_953,
                    depth: Some(1),
                },
            ),
            // Read before the watch cache's mark: a negative interval.
            (Stage::Reflector, StageMark::at(1_795_628_013_590_880)),
        ])
    }

    #[test]
    fn the_lean_form_is_one_time_and_offsets_and_reads_back() {
        let carrier = Carrier { stages: times() };
        let json = serde_json::to_string(&carrier).unwrap();
        assert_eq!(
            json,
            r#"{"stages":{"t0":1795628013590889,"etcd":0,"watch_cache":[64,1],"reflector":-9}}"#
        );
        assert_eq!(serde_json::from_str::<Carrier>(&json).unwrap(), carrier);
        let none = serde_json::to_string(&Carrier {
            stages: StageTimes::new(),
        })
        .unwrap();
        assert_eq!(none, r#"{"stages":{}}"#);
        assert_eq!(
            serde_json::from_str::<Carrier>(&none).unwrap().stages.len(),
            0
        );
    }

    #[test]
    fn protocol_2s_absolute_marks_still_read_and_mix() {
        let old = r#"{"stages":{"etcd":{"at":1795628013590889},"watch_cache":{"at":1795628013590953,"depth":1},"reflector":{"at":1795628013590880}}}"#;
        assert_eq!(
            serde_json::from_str::<Carrier>(old).unwrap().stages,
            times()
        );
        // The key t0 may come last; an absolute mark may sit beside offsets.
        let mixed = r#"{"stages":{"etcd":0,"watch_cache":{"at":1795628013590953,"depth":1},"reflector":-9,"t0":1795628013590889}}"#;
        assert_eq!(
            serde_json::from_str::<Carrier>(mixed).unwrap().stages,
            times()
        );
    }

    #[test]
    fn bad_stage_maps_are_errors_not_panics() {
        for bad in [
            r#"{"stages":{"etcd":5}}"#,
            r#"{"stages":{"t0":1,"nowhere":0}}"#,
            r#"{"stages":{"t0":1,"etcd":-5}}"#,
            r#"{"stages":{"t0":1,"etcd":[]}}"#,
            r#"{"stages":{"t0":1,"etcd":"x"}}"#,
            r#"{"stages":{"t0":18446744073709551615,"etcd":1}}"#,
        ] {
            assert!(serde_json::from_str::<Carrier>(bad).is_err(), "{bad}");
        }
    }
}
