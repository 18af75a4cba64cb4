//! The `snapshot` frame: every current object, and every Reflector's state.
//!
//! On the wire the objects are grouped by resource, so that a light
//! snapshot of 150,000 objects says `"resource":"configmaps","kind":…` once
//! rather than 150,000 times: about 70 bytes an object instead of 120.

use crate::event::ObjectRef;
use crate::object::ObjectJson;
use crate::reflector::ReflectorUpdate;
use crate::tap::TapRelay;
use serde::{Deserialize, Serialize, Serializer};
use std::collections::BTreeMap;

/// One current object in a snapshot.
///
/// A live viewer's snapshot is light on a big cluster: each object's
/// reference, its resourceVersion and a few columns ([`crate::summary`]),
/// without its body, which the viewer fetches when someone opens the object
/// (`GET /objects/…`). A recording's snapshot carries the bodies: it has no
/// bridge to ask.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotObject {
    pub target: ObjectRef,
    pub resource_version: String,
    /// A few columns of the object, by name (a pod's phase and node).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub summary: BTreeMap<String, String>,
    /// The object's body, as [`crate::WatchEvent::object`]; absent in a
    /// light snapshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<ObjectJson>,
}

/// Every current object the bridge knows, and the state of every Reflector,
/// as of the frame's `seq`. Written grouped by resource (see the module);
/// read in that form, or as a flat `objects` list.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(from = "WireSnapshot")]
pub struct Snapshot {
    pub objects: Vec<SnapshotObject>,
    pub reflectors: Vec<ReflectorUpdate>,
    /// The resources whose Reflector has finished a list at least once:
    /// until then, whatever its latest state, its objects are not the whole
    /// set (a first list that failed and waits, say).
    pub listed: Vec<String>,
    /// What connected controllers' taps said lately (see
    /// [`crate::tap::TapRelay`]), in the stream's order, so that a viewer
    /// who joins draws their lanes as those who watched them: a bounded
    /// tail per tap, its requests, its counters and its leaving.
    pub taps: Vec<TapRelay>,
}

/// A snapshot as read.
#[derive(Deserialize)]
struct WireSnapshot {
    #[serde(default)]
    groups: Vec<Group<Member>>,
    /// The flat form: each object with its whole reference.
    #[serde(default)]
    objects: Vec<SnapshotObject>,
    #[serde(default)]
    reflectors: Vec<ReflectorUpdate>,
    #[serde(default)]
    listed: Vec<String>,
    #[serde(default)]
    taps: Vec<TapRelay>,
}

/// The objects of one resource.
#[derive(Serialize, Deserialize)]
struct Group<M> {
    resource: String,
    kind: String,
    objects: Vec<M>,
}

/// One object of a group, as read.
#[derive(Deserialize)]
struct Member {
    #[serde(default)]
    namespace: Option<String>,
    name: String,
    resource_version: String,
    #[serde(default)]
    summary: BTreeMap<String, String>,
    #[serde(default)]
    object: Option<ObjectJson>,
}

/// One object of a group, as written: borrowed, nothing copied.
#[derive(Serialize)]
struct MemberRef<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: &'a Option<String>,
    name: &'a str,
    resource_version: &'a str,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    summary: &'a BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    object: &'a Option<ObjectJson>,
}

impl From<WireSnapshot> for Snapshot {
    fn from(wire: WireSnapshot) -> Self {
        let mut objects = wire.objects;
        for group in wire.groups {
            objects.extend(group.objects.into_iter().map(|m| SnapshotObject {
                target: ObjectRef {
                    resource: group.resource.clone(),
                    kind: group.kind.clone(),
                    namespace: m.namespace,
                    name: m.name,
                },
                resource_version: m.resource_version,
                summary: m.summary,
                object: m.object,
            }));
        }
        Snapshot {
            objects,
            reflectors: wire.reflectors,
            listed: wire.listed,
            taps: wire.taps,
        }
    }
}

impl Serialize for Snapshot {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Written<'a> {
            groups: Vec<Group<MemberRef<'a>>>,
            reflectors: &'a [ReflectorUpdate],
            #[serde(skip_serializing_if = "<[String]>::is_empty")]
            listed: &'a [String],
            #[serde(skip_serializing_if = "<[TapRelay]>::is_empty")]
            taps: &'a [TapRelay],
        }
        // Consecutive objects of one resource and kind share a group.
        let mut groups: Vec<Group<MemberRef<'_>>> = Vec::new();
        for o in &self.objects {
            let member = MemberRef {
                namespace: &o.target.namespace,
                name: &o.target.name,
                resource_version: &o.resource_version,
                summary: &o.summary,
                object: &o.object,
            };
            match groups.last_mut() {
                Some(g) if g.resource == o.target.resource && g.kind == o.target.kind => {
                    g.objects.push(member)
                }
                _ => groups.push(Group {
                    resource: o.target.resource.clone(),
                    kind: o.target.kind.clone(),
                    objects: vec![member],
                }),
            }
        }
        Written {
            groups,
            reflectors: &self.reflectors,
            listed: &self.listed,
            taps: &self.taps,
        }
        .serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(resource: &str, name: &str, body: bool) -> SnapshotObject {
        SnapshotObject {
            target: ObjectRef {
                resource: resource.into(),
                kind: if resource == "pods" {
                    "Pod"
                } else {
                    "ConfigMap"
                }
                .into(),
                namespace: (resource == "pods").then(|| "default".to_string()),
                name: name.into(),
            },
            resource_version: "7".into(),
            summary: if resource == "pods" {
                [("phase".to_string(), "Running".to_string())].into()
            } else {
                BTreeMap::new()
            },
            object: body.then(|| ObjectJson::from_text(format!(r#"{{"n":"{name}"}}"#)).unwrap()),
        }
    }

    #[test]
    fn objects_are_written_grouped_by_resource_and_read_back_whole() {
        let snapshot = Snapshot {
            objects: vec![
                object("configmaps", "a", false),
                object("configmaps", "b", true),
                object("pods", "p", false),
            ],
            reflectors: vec![],
            listed: vec![],
            taps: vec![],
        };
        let text = serde_json::to_string(&snapshot).unwrap();
        assert_eq!(text.matches("\"resource\"").count(), 2, "{text}");
        assert!(
            text.contains(r#"{"name":"a","resource_version":"7"}"#),
            "{text}"
        );
        let back: Snapshot = serde_json::from_str(&text).unwrap();
        assert_eq!(back, snapshot);
    }

    #[test]
    fn the_flat_form_reads_too() {
        let text = r#"{"objects":[{"target":{"resource":"pods","kind":"Pod","name":"p"},"resource_version":"3"}],"reflectors":[]}"#;
        let s: Snapshot = serde_json::from_str(text).unwrap();
        assert_eq!(s.objects[0].target.name, "p");
        assert_eq!(s.objects[0].resource_version, "3");
    }
}
