//! Watch events for the unit tests: a pod's, with the stage marks a test
//! gives it and nothing else set.

use watchlife_protocol::{EventType, ObjectJson, ObjectRef, Stage, StageMark, WatchEvent};

/// `default/name`'s pod event of `event_type` at `resource_version`, read at
/// each stage of `stages` at its time (µs): delivered on the watch, not
/// merged, no handler called, no server stamps, no body.
pub fn pod_event(
    event_type: EventType,
    name: &str,
    resource_version: &str,
    stages: &[(Stage, u64)],
) -> WatchEvent {
    WatchEvent {
        event_type,
        target: ObjectRef {
            resource: "pods".into(),
            kind: "Pod".into(),
            namespace: Some("default".into()),
            name: name.to_string(),
        },
        resource_version: resource_version.to_string(),
        object: ObjectJson::null(),
        stages: stages
            .iter()
            .map(|(s, at)| (*s, StageMark::at(*at)))
            .collect(),
        initial: false,
        coalesced: false,
        handled: Default::default(),
        patch: None,
        server: None,
    }
}
