//! List-watch of the embedded demo control plane, in process.
//!
//! For each resource: LIST, then WATCH from the list's resourceVersion,
//! re-watching from the last resourceVersion seen when a watch ends and
//! listing again when the watch cache answers that it is too old (410 Gone).
//! Each step is published as a `reflector` frame and each event as an `event`
//! frame carrying the stage times the control plane measured (commit, watch
//! cache, dispatch) and the time the Reflector received it.

use crate::hub::Hub;
use crate::pipeline::Pipeline;
use serde_json::Value;
use std::sync::Arc;
use watchlife_controlplane::resource::ResourceType;
use watchlife_controlplane::{ControlPlane, Delivery, object};
use watchlife_protocol::{
    EventType, FrameBody, ObjectRef, ReflectorState, ReflectorUpdate, Stage, StageMark, StageTimes,
    WatchEvent,
};

/// The stages this source measures: all of them, the control plane's own
/// (commit, watch cache, dispatch) and the informer's.
pub const OBSERVED: [Stage; 9] = Stage::ALL;

/// Runs the list-watch loop of one resource until the task is dropped,
/// feeding `pipeline` (the informer stages) and reporting to `hub`.
pub async fn reflect(cp: ControlPlane, rt: ResourceType, hub: Hub, pipeline: Pipeline) {
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
        report(ReflectorState::ListFinished {
            count: items.len() as u64,
            resource_version: listed_rv.to_string(),
        });
        let listed_at = cp.clock().now();
        pipeline.deliver_list(
            items
                .iter()
                .map(|item| {
                    let stages = StageTimes::from([(Stage::Reflector, StageMark::at(listed_at))]);
                    (event_frame(rt, EventType::Added, item, stages, true), item.clone())
                })
                .collect(),
        );
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
                pipeline.deliver(
                    event_frame(rt, e.event_type, &e.object, stages, false),
                    e.object.clone(),
                );
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
) -> WatchEvent {
    WatchEvent {
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
    }
}
