//! What an event's frame carries of its object's body: the whole body, or,
//! for an update on a stream that sends them so (`/ws?bodies=patch`), a
//! merge patch against the object's previous version, which the page
//! applies to the body it holds.

use crate::history::Version;
use watchlife_protocol::patch::{BodyPatch, apply_merge_patch};
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

    /// The body of the version this makes, and the patch to keep beside it
    /// when the body could not be rebuilt: `latest` is the object's latest
    /// version the page holds, whose body a patch applies to when it is
    /// the patch's base.
    pub fn resolve(self, latest: Option<&Version>) -> (Option<ObjectJson>, Option<ObjectJson>) {
        match self {
            Carried::Nothing => (None, None),
            Carried::Whole(body) => (Some(body), None),
            Carried::Patch(patch) => {
                let base = latest
                    .filter(|v| v.resource_version == patch.base)
                    .and_then(|v| v.object.as_ref());
                match base {
                    Some(base) => {
                        let mut body = base.parse();
                        apply_merge_patch(&mut body, &patch.merge.parse());
                        (Some(ObjectJson::from_value(&body)), None)
                    }
                    None => (None, Some(patch.merge)),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use watchlife_protocol::EventType;

    fn version(rv: &str, object: Option<serde_json::Value>) -> Version {
        Version {
            event_type: EventType::Added,
            resource_version: rv.into(),
            initial: false,
            resync: false,
            final_state_unknown: false,
            object: object.as_ref().map(ObjectJson::from_value),
            patch: None,
        }
    }

    fn patch(base: &str) -> Carried {
        Carried::Patch(Box::new(BodyPatch {
            base: base.into(),
            merge: ObjectJson::from_value(
                &json!({"metadata": {"resourceVersion": "9"}, "data": {"mode": null}}),
            ),
        }))
    }

    #[test]
    fn a_patch_on_its_base_rebuilds_the_body() {
        let before = json!({"metadata": {"resourceVersion": "7"}, "data": {"mode": "a", "k": "v"}});
        let latest = version("7", Some(before));
        let (body, kept) = patch("7").resolve(Some(&latest));
        assert_eq!(
            body.unwrap().parse(),
            json!({"metadata": {"resourceVersion": "9"}, "data": {"k": "v"}})
        );
        assert_eq!(kept, None);
    }

    #[test]
    fn a_patch_without_its_base_is_kept_as_the_change() {
        let before = json!({"metadata": {"resourceVersion": "7"}});
        // Another version than the base, a base without its body, no version at all.
        for latest in [version("6", Some(before)), version("7", None)] {
            let (body, kept) = patch("7").resolve(Some(&latest));
            assert_eq!(body, None);
            assert!(kept.is_some());
        }
        assert_eq!(patch("7").resolve(None).0, None);
    }
}
