//! Frames from the bridge to a viewer: one JSON object per frame, one frame
//! per WebSocket text message or several to a message (see [`crate::batch`]).

use crate::event::WatchEvent;
use crate::reflector::ReflectorUpdate;
use crate::stage::Stage;
use crate::tap::TapRelay;
use crate::watch_cache::WatchCacheReport;

pub use crate::snapshot::{Snapshot, SnapshotObject};
use crate::{Micros, client::DemoAction};
use serde::de::{DeserializeSeed, Error as _, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;

/// A frame from the bridge: `{"seq":7,"type":"event","data":{…}}`.
///
/// `seq` orders the bridge's stream. *Stream* frames (`event`, `reflector`,
/// `watch_cache`, `tap`) are numbered 1, 2, 3… in the single order the bridge
/// observed them, and a viewer that reconnects with the last `seq` it saw
/// resumes after it. *Control* frames
/// (`hello`, `heartbeat`, `resync`, `snapshot`, `error`, `action_result`) belong
/// to one connection and carry the `seq` of the latest stream frame, the cursor.
///
/// The payload sits under `data`, never beside `seq` and `type`: so it is
/// read straight into its type, an object's JSON text kept as it is
/// ([`ObjectJson`]), with no buffering of the whole frame first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerFrame {
    pub seq: u64,
    #[serde(flatten)]
    pub body: FrameBody,
}

/// What a frame says: its `type` on the wire, and its `data`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum FrameBody {
    /// First frame of every connection: what this bridge is watching and how.
    Hello(Hello),
    /// A watch event with its stage times.
    Event(WatchEvent),
    /// The Reflector of one resource changed state.
    Reflector(ReflectorUpdate),
    /// The demo's watch caches changed: their rings and their watchers.
    WatchCache(WatchCacheReport),
    /// Sent on a period so both ends notice a dead connection.
    Heartbeat(Heartbeat),
    /// The viewer missed frames it cannot be given; a `snapshot` follows.
    Resync(Resync),
    /// Every current object, after `hello` or `resync`.
    Snapshot(Snapshot),
    /// A request from the viewer failed.
    Error(ErrorFrame),
    /// A demo action the viewer asked for was carried out.
    ActionResult(ActionResult),
    /// What a connected controller's tap said (see [`crate::tap`]).
    Tap(TapRelay),
}

impl FrameBody {
    /// Whether the frame is numbered in the bridge's stream (see [`ServerFrame`]).
    pub fn is_stream(&self) -> bool {
        matches!(
            self,
            FrameBody::Event(_)
                | FrameBody::Reflector(_)
                | FrameBody::WatchCache(_)
                | FrameBody::Tap(_)
        )
    }
}

/// A frame's keys; others are skipped, as a newer bridge may add some.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Field {
    Seq,
    Type,
    Data,
    #[serde(other)]
    Other,
}

/// A frame's `type`: read as a seed, it reads `data` as the payload of
/// this type.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum FrameType {
    Hello,
    Event,
    Reflector,
    WatchCache,
    Heartbeat,
    Resync,
    Snapshot,
    Error,
    ActionResult,
    Tap,
}

impl<'de> DeserializeSeed<'de> for FrameType {
    type Value = FrameBody;

    fn deserialize<D: Deserializer<'de>>(self, data: D) -> Result<FrameBody, D::Error> {
        Ok(match self {
            FrameType::Hello => FrameBody::Hello(Deserialize::deserialize(data)?),
            FrameType::Event => FrameBody::Event(Deserialize::deserialize(data)?),
            FrameType::Reflector => FrameBody::Reflector(Deserialize::deserialize(data)?),
            FrameType::WatchCache => FrameBody::WatchCache(Deserialize::deserialize(data)?),
            FrameType::Heartbeat => FrameBody::Heartbeat(Deserialize::deserialize(data)?),
            FrameType::Resync => FrameBody::Resync(Deserialize::deserialize(data)?),
            FrameType::Snapshot => FrameBody::Snapshot(Deserialize::deserialize(data)?),
            FrameType::Error => FrameBody::Error(Deserialize::deserialize(data)?),
            FrameType::ActionResult => FrameBody::ActionResult(Deserialize::deserialize(data)?),
            FrameType::Tap => FrameBody::Tap(Deserialize::deserialize(data)?),
        })
    }
}

impl FrameType {
    /// `data`, met before `type` and kept as text, read as this type's payload.
    fn read(self, data: &str) -> serde_json::Result<FrameBody> {
        let mut text = serde_json::Deserializer::from_str(data);
        let body = self.deserialize(&mut text)?;
        text.end()?;
        Ok(body)
    }

    /// `e`, said of a frame of this type.
    fn error<E: serde::de::Error>(self, e: impl std::fmt::Display) -> E {
        E::custom(format!("{self:?} frame: {e}"))
    }
}

/// Reads a frame in one pass: the bridge writes `type` before `data`, so
/// `data` is read straight into its type. A `data` met before its `type`
/// (another writer's key order) is kept as text until `type` says what it is.
struct FrameVisitor;

impl<'de> Visitor<'de> for FrameVisitor {
    type Value = ServerFrame;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a frame: an object with `seq`, `type` and `data`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ServerFrame, A::Error> {
        let (mut seq, mut kind, mut body, mut early) = (None, None, None, None::<Box<RawValue>>);
        while let Some(field) = map.next_key::<Field>()? {
            // A key twice is an error, as serde's derived readers make it:
            // which of the two would be meant cannot be told.
            let twice = match field {
                Field::Seq => seq.is_some().then_some("seq"),
                Field::Type => kind.is_some().then_some("type"),
                Field::Data => (body.is_some() || early.is_some()).then_some("data"),
                Field::Other => None,
            };
            if let Some(name) = twice {
                return Err(A::Error::duplicate_field(name));
            }
            match field {
                Field::Seq => seq = Some(map.next_value::<u64>()?),
                Field::Type => kind = Some(map.next_value::<FrameType>()?),
                Field::Data => match kind {
                    Some(kind) => {
                        body = Some(map.next_value_seed(kind).map_err(|e| kind.error(e))?)
                    }
                    None => early = Some(map.next_value()?),
                },
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let seq = seq.ok_or_else(|| A::Error::missing_field("seq"))?;
        let kind = kind.ok_or_else(|| A::Error::missing_field("type"))?;
        let body = match (body, early) {
            (Some(body), _) => body,
            (None, Some(data)) => kind.read(data.get()).map_err(|e| kind.error(e))?,
            (None, None) => return Err(A::Error::missing_field("data")),
        };
        Ok(ServerFrame { seq, body })
    }
}

impl<'de> Deserialize<'de> for ServerFrame {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(FrameVisitor)
    }
}

/// Where the bridge's events come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// The embedded demo control plane; `api` is its Kubernetes API address.
    Demo { api: String },
    /// A real cluster, by kubeconfig context and server URL.
    Cluster { context: String, server: String },
    /// The demo control plane compiled into the viewer's own page: no bridge,
    /// and every stage time is read from the browser's clock.
    InPage,
}

/// Greeting sent first on every connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    /// [`crate::PROTOCOL_VERSION`] of the bridge.
    pub protocol: u32,
    /// Version of the `watchlife` binary.
    pub server_version: String,
    /// Names this run of the bridge: `seq` numbers are only comparable within
    /// one stream. A viewer resumes with `/ws?stream=ID&since=SEQ`.
    pub stream: String,
    pub source: Source,
    /// Resources being list-watched (`pods`, `deployments.apps`).
    pub resources: Vec<String>,
    /// Stages this source can measure; the others are drawn as not observed.
    pub observed_stages: Vec<Stage>,
    /// Whether demo actions are accepted (only with the demo source).
    pub demo_actions: bool,
    /// Heartbeat period: a viewer that hears nothing for a few periods is stalled.
    pub heartbeat_ms: u64,
    /// Whose list-watch rules the Reflectors (and the demo's apiserver)
    /// follow: `1.36`, `1.20`, or with gates changed
    /// `1.36 (WatchListClient=false)`. Empty from bridges that predate it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kubernetes: String,
    /// The apiserver's own version (`gitVersion` of its `/version`), where it
    /// answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_version: Option<String>,
}

/// Liveness frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Heartbeat {
    /// Bridge time when sent.
    pub at: Micros,
    /// How many of the bridge's WATCH requests on its source are open now
    /// (each Reflector holds at most one): a Reflector whose last request
    /// failed is watching again once this reaches the number of resources.
    /// Absent from older bridges and from recordings' synthetic beats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watches_open: Option<u64>,
}

/// The viewer's cursor fell out of the bridge's window, or the viewer fell too
/// far behind: frames were skipped, and a [`Snapshot`] follows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resync {
    pub reason: String,
}

/// Why a viewer's request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// Not valid JSON, or not a known message.
    Malformed,
    /// Larger than the bridge accepts.
    TooLarge,
    /// Too many messages too fast.
    RateLimited,
    /// Not allowed for this source (a demo action against a real cluster).
    Forbidden,
    /// Allowed, but it failed.
    ActionFailed,
}

/// An error answer to a viewer's message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorFrame {
    pub code: ErrorCode,
    pub message: String,
}

/// The outcome of a demo action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionResult {
    pub action: DemoAction,
    /// What happened, in words for a caption.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EventType, ObjectJson, ObjectRef, StageMark, StageTimes};

    fn round_trip(frame: &ServerFrame) -> serde_json::Value {
        let text = serde_json::to_string(frame).unwrap();
        let back: ServerFrame = serde_json::from_str(&text).unwrap();
        assert_eq!(&back, frame);
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn an_event_frame_nests_its_payload_and_target() {
        let mut stages = StageTimes::new();
        stages.insert(Stage::Etcd, StageMark::at(1_000));
        let frame = ServerFrame {
            seq: 7,
            body: FrameBody::Event(WatchEvent {
                event_type: EventType::Added,
                target: ObjectRef {
                    resource: "pods".into(),
                    kind: "Pod".into(),
                    namespace: Some("default".into()),
                    name: "pod1".into(),
                },
                resource_version: "519".into(),
                object: ObjectJson::from_text(r#"{"kind":"Pod"}"#.into()).unwrap(),
                stages,
                initial: false,
                coalesced: false,
                handled: Default::default(),
                patch: None,
                server: None,
            }),
        };
        let text = serde_json::to_string(&frame).unwrap();
        assert!(
            text.starts_with(r#"{"seq":7,"type":"event","data":{"event":"ADDED","target":{"#),
            "{text}"
        );
        assert!(text.contains(r#""object":{"kind":"Pod"}"#), "{text}");
        let json = round_trip(&frame);
        let data = &json["data"];
        assert_eq!(data["target"]["namespace"], "default");
        assert_eq!(data["resource_version"], "519");
        assert_eq!(
            (&data["stages"]["t0"], &data["stages"]["etcd"]),
            (&1_000.into(), &0.into())
        );
        assert!(data.get("coalesced").is_none());
    }

    #[test]
    fn fields_may_come_in_any_order() {
        let text = r#"{"data":{"at":4},"type":"heartbeat","seq":2}"#;
        let frame: ServerFrame = serde_json::from_str(text).unwrap();
        assert_eq!(frame.seq, 2);
        assert_eq!(
            frame.body,
            FrameBody::Heartbeat(Heartbeat {
                at: 4,
                watches_open: None
            })
        );
    }

    #[test]
    fn unknown_keys_are_skipped_and_missing_or_repeated_ones_named() {
        let text = r#"{"seq":2,"newer":[1,{"x":2}],"type":"heartbeat","data":{"at":4}}"#;
        let frame: ServerFrame = serde_json::from_str(text).unwrap();
        assert_eq!(frame.seq, 2);
        for (text, missing) in [
            (r#"{"type":"heartbeat","data":{"at":4}}"#, "`seq`"),
            (r#"{"seq":1,"data":{"at":4}}"#, "`type`"),
            (r#"{"seq":1,"type":"heartbeat"}"#, "`data`"),
        ] {
            let error = serde_json::from_str::<ServerFrame>(text).unwrap_err();
            assert!(error.to_string().contains(missing), "{text}: {error}");
        }
        for (text, twice) in [
            (
                r#"{"seq":1,"seq":2,"type":"heartbeat","data":{"at":4}}"#,
                "`seq`",
            ),
            (
                r#"{"seq":1,"type":"heartbeat","data":{"at":4},"type":"resync"}"#,
                "`type`",
            ),
            (
                r#"{"seq":1,"type":"heartbeat","data":{"at":4},"data":{"at":5}}"#,
                "`data`",
            ),
            (
                r#"{"seq":1,"data":{"at":4},"data":{"at":5},"type":"heartbeat"}"#,
                "`data`",
            ),
        ] {
            let error = serde_json::from_str::<ServerFrame>(text).unwrap_err();
            assert!(
                error
                    .to_string()
                    .contains(&format!("duplicate field {twice}")),
                "{text}: {error}"
            );
        }
        // A payload that does not fit its type says which type, whichever
        // key came first.
        for text in [
            r#"{"seq":1,"type":"heartbeat","data":{"at":"soon"}}"#,
            r#"{"seq":1,"data":{"at":"soon"},"type":"heartbeat"}"#,
        ] {
            let error = serde_json::from_str::<ServerFrame>(text).unwrap_err();
            assert!(
                error.to_string().starts_with("Heartbeat frame: "),
                "{error}"
            );
        }
    }

    #[test]
    fn a_light_snapshot_object_has_no_body() {
        let object = SnapshotObject {
            target: ObjectRef {
                resource: "pods".into(),
                kind: "Pod".into(),
                namespace: None,
                name: "p".into(),
            },
            resource_version: "3".into(),
            summary: [("phase".to_string(), "Running".to_string())].into(),
            object: None,
        };
        let json = serde_json::to_value(&object).unwrap();
        assert!(json.get("object").is_none());
        assert_eq!(json["summary"]["phase"], "Running");
        assert_eq!(
            serde_json::from_value::<SnapshotObject>(json).unwrap(),
            object
        );
    }

    #[test]
    fn reflector_frame_names_its_state() {
        let frame = ServerFrame {
            seq: 3,
            body: FrameBody::Reflector(ReflectorUpdate {
                resource: "pods".into(),
                state: crate::ReflectorState::WatchStarted {
                    resource_version: "42".into(),
                    timeout_seconds: 300,
                },
            }),
        };
        let json = round_trip(&frame);
        assert_eq!(json["type"], "reflector");
        assert_eq!(json["data"]["state"], "watch_started");
        assert_eq!(json["data"]["resource_version"], "42");
        assert!(frame.body.is_stream());
    }

    #[test]
    fn tap_frame_carries_the_taps_own_frame_under_data() {
        use crate::tap::{TapFrame, TapObjectRef, TapRelay, WatcherEventKind, WatcherFrame};
        let web = TapObjectRef::namespaced("apps/v1", "Deployment", "default", "web");
        let frame = ServerFrame {
            seq: 9,
            body: FrameBody::Tap(TapRelay {
                tap: 2,
                controller: "configmap-per-deployment".into(),
                received: 1_700_000_000_000_000,
                frame: Some(TapFrame::Watcher(WatcherFrame {
                    seq: 4,
                    at_us: 1_699_999_999_999_000,
                    resource: "deployments.apps".into(),
                    event: WatcherEventKind::Apply,
                    object: Some(web),
                    resource_version: Some("812".into()),
                    applied_to_store: Some(true),
                })),
                left: None,
            }),
        };
        let json = round_trip(&frame);
        assert_eq!(json["type"], "tap");
        assert_eq!(json["data"]["frame"]["type"], "watcher");
        assert_eq!(json["data"]["frame"]["seq"], 4);
        assert!(json["data"].get("left").is_none());
        assert!(frame.body.is_stream());
    }

    #[test]
    fn control_frames_round_trip() {
        let hello = ServerFrame {
            seq: 0,
            body: FrameBody::Hello(Hello {
                protocol: crate::PROTOCOL_VERSION,
                server_version: "0.1.0".into(),
                stream: "3f2a".into(),
                source: Source::Demo {
                    api: "http://127.0.0.1:8081".into(),
                },
                resources: vec!["pods".into()],
                observed_stages: Stage::ALL.to_vec(),
                demo_actions: true,
                heartbeat_ms: 5_000,
                kubernetes: "1.36".into(),
                cluster_version: None,
            }),
        };
        let json = round_trip(&hello);
        assert_eq!(json["data"]["source"]["kind"], "demo");
        assert!(!hello.body.is_stream());
        round_trip(&ServerFrame {
            seq: 9,
            body: FrameBody::Error(ErrorFrame {
                code: ErrorCode::Malformed,
                message: "expected value at line 1".into(),
            }),
        });
    }

    #[test]
    fn watch_cache_frame_is_a_stream_frame_with_its_rings_and_lanes() {
        let frame = ServerFrame {
            seq: 12,
            body: FrameBody::WatchCache(crate::WatchCacheReport {
                caches: vec![crate::CacheState {
                    resource: "pods".into(),
                    window_start: 600,
                    window_end: 705,
                    len: 105,
                    capacity: 200,
                    watchers: vec![crate::WatcherState {
                        id: 1,
                        name: "scheduler".into(),
                        buffered: 2,
                        capacity: 100,
                        blocking: false,
                    }],
                    more_watchers: 0,
                    closed_slow: 0,
                    recently_closed: vec![],
                    incoming: 0,
                }],
            }),
        };
        let json = round_trip(&frame);
        assert_eq!(json["type"], "watch_cache");
        let cache = &json["data"]["caches"][0];
        assert_eq!(cache["window_end"], 705);
        assert_eq!(cache["watchers"][0]["name"], "scheduler");
        assert!(cache.get("recently_closed").is_none());
        assert!(frame.body.is_stream());
    }

    #[test]
    fn unknown_frame_type_is_an_error_not_a_panic() {
        for text in [
            r#"{"seq":1,"type":"nope","data":{}}"#,
            r#"{"seq":1,"type":"heartbeat"}"#,
            r#"{"seq":1,"type":"heartbeat","data":{"at":"x"}}"#,
            r#"{"type":"heartbeat","data":{"at":1}}"#,
        ] {
            assert!(serde_json::from_str::<ServerFrame>(text).is_err(), "{text}");
        }
    }
}
