//! What an event's frame carries of its object's body: the whole body, or,
//! for an update on a stream that sends them so (`/ws?bodies=patch`), a
//! merge patch against the object's previous version, which the page keeps
//! beside that version and applies when the body is needed.

use crate::history::{KeptPatch, Version};
use watchlife_protocol::patch::BodyPatch;
use watchlife_protocol::{ObjectJson, WatchEvent};

/// An event's body, taken out of the event (see [`crate::model`]'s rows).
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Carried {
    /// No body: an event that has none, or one the page made itself.
    #[default]
    Nothing,
    Whole(ObjectJson),
    Patch(Box<BodyPatch>),
}

impl Carried {
    /// Takes the body out of `event`, leaving `null` and no patch.
    pub fn take(event: &mut WatchEvent) -> Carried {
        match event.patch.take() {
            Some(patch) => {
                event.object = ObjectJson::null();
                Carried::Patch(patch)
            }
            None => Carried::Whole(std::mem::take(&mut event.object)),
        }
    }

    /// The body of the version this makes, and its patch: `latest` is the
    /// object's latest version the page holds. A patch is not applied here,
    /// as it arrives (at a thousand events a second that would be most of
    /// a phone's time), but kept, and the body rebuilt from the version
    /// before it when someone needs it ([`crate::history::ObjectHistory::body`]).
    pub fn into_body(self, latest: Option<&Version>) -> (Option<ObjectJson>, Option<KeptPatch>) {
        match self {
            Carried::Nothing => (None, None),
            Carried::Whole(body) => (Some(body), None),
            Carried::Patch(patch) => {
                let on_previous = latest.is_some_and(|v| v.resource_version == patch.base);
                let kept = KeptPatch {
                    merge: patch.merge,
                    on_previous,
                };
                (None, Some(kept))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::ObjectHistory;
    use serde_json::json;
    use watchlife_protocol::{EventType, ObjectRef};

    fn version(rv: &str, body: (Option<ObjectJson>, Option<KeptPatch>)) -> Version {
        Version {
            event_type: EventType::Modified,
            resource_version: rv.into(),
            initial: false,
            resync: false,
            final_state_unknown: false,
            object: body.0,
            patch: body.1,
        }
    }

    fn patch(base: &str, rv: &str, mode: serde_json::Value) -> Carried {
        Carried::Patch(Box::new(BodyPatch {
            base: base.into(),
            merge: ObjectJson::from_value(
                &json!({"metadata": {"resourceVersion": rv}, "data": {"mode": mode}}),
            ),
        }))
    }

    fn history() -> ObjectHistory {
        ObjectHistory::new(ObjectRef {
            resource: "configmaps".into(),
            kind: "ConfigMap".into(),
            namespace: Some("default".into()),
            name: "settings".into(),
        })
    }

    /// Pushes `carried` as the next version `rv`, as the model does.
    fn push(h: &mut ObjectHistory, rv: &str, carried: Carried) {
        let body = carried.into_body(h.versions.back());
        h.push(version(rv, body));
    }

    #[test]
    fn patches_on_their_base_rebuild_each_body_when_asked() {
        let mut h = history();
        let first = json!({"metadata": {"resourceVersion": "7"}, "data": {"mode": "a", "k": "v"}});
        push(&mut h, "7", Carried::Whole(ObjectJson::from_value(&first)));
        push(&mut h, "8", patch("7", "8", json!("b")));
        push(&mut h, "9", patch("8", "9", json!(null)));
        assert!(h.versions[2].object.is_none(), "not applied as it arrives");
        assert!(h.has_body(2));
        assert_eq!(
            h.body(1).unwrap().parse(),
            json!({"metadata": {"resourceVersion": "8"}, "data": {"mode": "b", "k": "v"}})
        );
        assert_eq!(
            h.body(2).unwrap().parse(),
            json!({"metadata": {"resourceVersion": "9"}, "data": {"k": "v"}})
        );
    }

    #[test]
    fn a_patch_without_its_base_only_tells_the_change() {
        let mut h = history();
        // A light snapshot's version: no body.
        h.push(version("7", (None, None)));
        push(&mut h, "8", patch("7", "8", json!("b")));
        assert!(!h.has_body(1));
        assert_eq!(h.body(1), None);
        assert!(h.versions[1].patch.is_some(), "kept as the change");
        // Another base than the latest version: not rebuilt either.
        let first = json!({"metadata": {"resourceVersion": "5"}});
        let mut h = history();
        push(&mut h, "5", Carried::Whole(ObjectJson::from_value(&first)));
        push(&mut h, "8", patch("7", "8", json!("b")));
        assert_eq!(h.body(1), None);
    }

    #[test]
    fn dropping_the_oldest_keeps_the_next_body_rebuildable() {
        let mut h = history();
        let first = json!({"metadata": {"resourceVersion": "100"}, "data": {"mode": "0"}});
        push(
            &mut h,
            "100",
            Carried::Whole(ObjectJson::from_value(&first)),
        );
        let kept = crate::history::VERSIONS_KEPT as u64;
        for rv in 101..=100 + 2 * kept {
            let mode = json!((rv - 100).to_string());
            push(
                &mut h,
                &rv.to_string(),
                patch(&(rv - 1).to_string(), &rv.to_string(), mode),
            );
        }
        let last = h.versions.len() - 1;
        assert_eq!(
            h.body(last).unwrap().parse()["data"]["mode"],
            json!((2 * kept).to_string())
        );
        assert!(h.has_body(0), "the oldest kept holds its body");
    }
}
