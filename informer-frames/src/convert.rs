//! Each informer record as the protocol carries it. Pure functions: a
//! frame's bytes depend on nothing else.

use watchlife_informer::informer::Options;
use watchlife_informer::trace::{HandlerCall, Handling, Mark, Marks, ReconcileRun, Traced};
use watchlife_informer::{Object, handlers::Callback as Call};
use watchlife_protocol::{
    Callback, EventType, FrameBody, Handled, ObjectRef, ReflectorState, ReflectorUpdate, Stage,
    StageMark, StageTimes, WatchEvent,
};

/// The Reflector state of `resource`'s Reflector, as a frame.
pub fn reflector_update(resource: &str, state: ReflectorState) -> FrameBody {
    FrameBody::Reflector(ReflectorUpdate {
        resource: resource.to_string(),
        state,
    })
}

/// The event a trace finishes: the caller's own event (the Reflector's,
/// with what it stamped), or for what the informer made itself one about
/// `options`' resource; either way with the informer's marks and handling.
pub fn watch_event(options: &Options, traced: Traced<WatchEvent>) -> WatchEvent {
    let Traced {
        event_type: informed,
        object,
        listed,
        coalesced,
        marks,
        handling,
        carried,
    } = traced;
    let mut event = carried.unwrap_or_else(|| made_by_informer(options, &object));
    event.event_type = informed;
    event.initial = listed;
    event.coalesced = coalesced;
    stamp(&mut event.stages, marks);
    event.handled = handled(handling);
    event
}

/// The event of a relist's deletion or a resync: no watch event is behind
/// it, so no Reflector mark.
fn made_by_informer(options: &Options, object: &Object) -> WatchEvent {
    object_event(
        &options.resource,
        &options.kind,
        EventType::Modified,
        object,
        StageTimes::new(),
        false,
    )
}

/// An event of `event_type` about `object`, of `kind`, in `resource`
/// (`initial`: it came with the initial list), as far as `stages` took it:
/// not coalesced, not handled yet, no server answer.
pub fn object_event(
    resource: &str,
    kind: &str,
    event_type: EventType,
    object: &Object,
    stages: StageTimes,
    initial: bool,
) -> WatchEvent {
    let meta = object.meta();
    WatchEvent {
        event_type,
        target: ObjectRef {
            resource: resource.to_string(),
            kind: kind.to_string(),
            namespace: meta.namespace().map(String::from),
            name: meta.name().to_string(),
        },
        resource_version: object.resource_version().to_string(),
        object: object.json().clone(),
        stages,
        initial,
        coalesced: false,
        handled: Handled::default(),
        patch: None,
        server: None,
    }
}

/// Adds the informer's marks to the stage times.
fn stamp(stages: &mut StageTimes, marks: Marks) {
    let Marks {
        fifo,
        indexer,
        handlers,
        workqueue,
        reconcile,
    } = marks;
    let marked = [
        (Stage::Fifo, fifo),
        (Stage::Indexer, indexer),
        (Stage::Handlers, handlers),
        (Stage::Workqueue, workqueue),
        (Stage::Reconcile, reconcile),
    ];
    for (stage, mark) in marked {
        if let Some(Mark { at, depth }) = mark {
            stages.insert(stage, StageMark { at, depth });
        }
    }
}

fn handled(handling: Handling) -> Handled {
    Handled {
        old_resource_version: handling.old_resource_version,
        final_state_unknown: handling.final_state_unknown,
        resync: handling.resync,
        in_initial_list: handling.in_initial_list,
        calls: handling.calls.into_iter().map(handler_call).collect(),
        reconcile: handling.reconcile.map(reconcile_run),
    }
}

fn handler_call(call: HandlerCall) -> watchlife_protocol::HandlerCall {
    watchlife_protocol::HandlerCall {
        listener: call.listener,
        callback: match call.callback {
            Call::OnAdd => Callback::OnAdd,
            Call::OnUpdate => Callback::OnUpdate,
            Call::OnDelete => Callback::OnDelete,
        },
        depth: call.depth,
        dequeued: call.dequeued,
        returned: call.returned,
    }
}

fn reconcile_run(run: ReconcileRun) -> watchlife_protocol::ReconcileRun {
    watchlife_protocol::ReconcileRun {
        worker: run.worker,
        started: run.started,
        finished: run.finished,
        seen_resource_version: run.seen_resource_version,
        requeued_after_ms: None,
    }
}
