//! List-watch of the embedded demo control plane, in process.
//!
//! For each resource: LIST, then WATCH from the list's resourceVersion,
//! re-watching from the last resourceVersion seen when a watch ends and
//! listing again when the watch cache answers that it is too old (410 Gone).
//! Each step is published as a `reflector` frame and each event as an `event`
//! frame carrying the stage times the control plane measured (commit, watch
//! cache, dispatch) and the time the Reflector received it.

use crate::hub::Hub;
use serde_json::Value;
use std::sync::Arc;
use watchlife_controlplane::resource::ResourceType;
use watchlife_controlplane::{ControlPlane, Delivery, object};
use watchlife_protocol::{
    EventType, FrameBody, ObjectRef, ReflectorState, ReflectorUpdate, Stage, StageMark, StageTimes,
    WatchEvent,
};

/// The stages this source measures.
pub const OBSERVED: [Stage; 4] = [
    Stage::Etcd,
    Stage::WatchCache,
    Stage::WatchStream,
    Stage::Reflector,
];

/// Runs the list-watch loop of one resource until the task is dropped.
pub async fn reflect(cp: ControlPlane, rt: ResourceType, hub: Hub) {
    let resource = rt.qualified_name();
    let report = |state| {
        hub.publish(FrameBody::Reflector(ReflectorUpdate {
            resource: resource.clone(),
            state,
        }))
    };
    loop {
        report(ReflectorState::ListStarted {
            resource_version: String::new(),
        });
        let (items, listed_rv) = cp.list(rt, None);
        hub.clear_objects(&resource);
        report(ReflectorState::ListFinished {
            count: items.len() as u64,
            resource_version: listed_rv.to_string(),
        });
        for item in &items {
            let mut stages = StageTimes::new();
            stages.insert(Stage::Reflector, StageMark::at(cp.clock().now()));
            hub.publish(event_frame(rt, EventType::Added, item, stages, true));
        }
        let mut last_rv = listed_rv;
        loop {
            report(ReflectorState::WatchStarted {
                resource_version: last_rv.to_string(),
            });
            let mut watch = match cp.watch(rt, Some(last_rv), None) {
                Ok(watch) => watch,
                Err(e) => {
                    report(ReflectorState::Gone {
                        resource_version: last_rv.to_string(),
                        message: e.to_string(),
                    });
                    report(ReflectorState::Relist {
                        reason:
                            "410 Gone: the resourceVersion is older than the watch cache's window"
                                .into(),
                    });
                    break;
                }
            };
            while let Some(delivery) = watch.recv().await {
                last_rv = delivery.event.revision;
                let stages = stages_of(&delivery, cp.clock().now());
                let e = &delivery.event;
                hub.publish(event_frame(rt, e.event_type, &e.object, stages, false));
            }
            report(ReflectorState::WatchEnded {
                resource_version: last_rv.to_string(),
                reason: "the server closed the watch".into(),
            });
        }
    }
}

fn stages_of(delivery: &Delivery, received_at: u64) -> StageTimes {
    let e = &delivery.event;
    StageTimes::from([
        (Stage::Etcd, StageMark::at(e.committed_at)),
        (Stage::WatchCache, StageMark::at(e.cached_at)),
        (Stage::WatchStream, StageMark::at(delivery.dispatched_at)),
        (Stage::Reflector, StageMark::at(received_at)),
    ])
}

fn event_frame(
    rt: ResourceType,
    event_type: EventType,
    obj: &Arc<Value>,
    stages: StageTimes,
    initial: bool,
) -> FrameBody {
    FrameBody::Event(WatchEvent {
        event_type,
        target: ObjectRef {
            resource: rt.qualified_name(),
            kind: rt.kind.into(),
            namespace: object::namespace(obj).map(Into::into),
            name: object::name(obj).into(),
        },
        resource_version: object::resource_version(obj).unwrap_or_default().into(),
        object: (**obj).clone(),
        stages,
        initial,
        coalesced: false,
    })
}
