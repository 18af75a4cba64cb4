//! A steady load through the bridge's own informer pipeline: a paced
//! generator of pod watch events delivers them to
//! [`watchlife::upstream::pipeline::Pipeline`] (its processing task, a task per
//! listener, its workers) on one tokio runtime shaped as the bridge's
//! upstream one, and a viewer of its hub collects every finished event.

use crate::objects::{pod, pod_name};

use crate::bridge::{Bodies, Hub, Pipeline, SlowListener};
use std::time::{Duration, Instant};
use tokio::sync::broadcast::error::RecvError;
use watchlife_controlplane::Clock;
use watchlife_informer::informer::Options;
use watchlife_protocol::{
    EventType, FrameBody, ObjectRef, ServerFrame, Stage, StageMark, StageTimes, WatchEvent,
};

/// Distinct pods the events go round: each key comes back every
/// `KEYS / rate` seconds (0.2 s at 1,000 events/s), often enough that every
/// phase of [`phase`]'s cycle occurs in a short run.
pub const KEYS: usize = 200;

/// Workqueue workers: the bridge's default (`--workers 1`).
const WORKERS: u32 = 1;

/// How long the bench waits for the last events after the load's time:
/// the slow listener's backlog at 10,000 events/s drains in 10 to 20 s a
/// second of load. Events not finished by then are reported missing.
const DRAIN_LIMIT: Duration = Duration::from_secs(300);

/// One load: so many events a second for so long, maybe with a slow listener.
#[derive(Debug, Clone)]
pub struct Load {
    pub rate: f64,
    pub seconds: f64,
    pub slow: Option<SlowListener>,
}

/// What came out of a load.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Every finished event the collector read, in publication order
    /// (their objects dropped: only their times are read).
    pub events: Vec<WatchEvent>,
    pub delivered: usize,
    /// Frames the collector fell too far behind to read (the hub's ring
    /// moved on): never expected, reported when it happens.
    pub lost: u64,
    /// The generator's achieved rate (events/s).
    pub achieved_rate: f64,
}

/// Runs `load` on a fresh runtime and returns its finished events.
pub fn run(load: &Load) -> Outcome {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(crate::bridge::UPSTREAM_THREADS)
        .enable_all()
        .build()
        .expect("a tokio runtime starts");
    runtime.block_on(drive(load.clone()))
}

async fn drive(load: Load) -> Outcome {
    let clock = Clock::system();
    let hub = Hub::new("bench");
    let mut live = hub.attach(None, Bodies::Light).live;
    let pipeline = Pipeline::start_with_slow_listener(
        hub,
        clock.clone(),
        None,
        Options::pods(),
        WORKERS,
        load.slow.clone(),
    );
    let count = (load.rate * load.seconds).round() as usize;
    let generator = tokio::spawn(generate(pipeline, clock, load.rate, count));
    let deadline =
        tokio::time::Instant::now() + Duration::from_secs_f64(load.seconds) + DRAIN_LIMIT;
    let collector = tokio::spawn(async move {
        let mut texts = Vec::with_capacity(count);
        let mut lost = 0;
        while texts.len() + (lost as usize) < count {
            match tokio::time::timeout_at(deadline, live.recv()).await {
                Ok(Ok(published)) => texts.push(published.text),
                Ok(Err(RecvError::Lagged(n))) => lost += n,
                Ok(Err(RecvError::Closed)) | Err(_) => break,
            }
        }
        (texts, lost)
    });
    let achieved_rate = generator.await.expect("the generator runs");
    let (texts, lost) = collector.await.expect("the collector runs");
    let events = texts
        .iter()
        .filter_map(|text| match serde_json::from_str::<ServerFrame>(text) {
            Ok(ServerFrame {
                body: FrameBody::Event(mut event),
                ..
            }) => {
                // Only the times are read: the object need not be kept.
                event.object = watchlife_protocol::ObjectJson::null();
                Some(event)
            }
            _ => None,
        })
        .collect();
    Outcome {
        events,
        delivered: count,
        lost,
        achieved_rate,
    }
}

/// Delivers `count` events at `rate` a second, each stamped `reflector` the
/// moment before it is delivered, as the bridge's Reflector stamps a decoded
/// event. tokio's timer wakes at most once a millisecond, so the events due
/// since the last wake go out together (10 at a time at 10,000 events/s), as
/// a watch stream's chunk delivers several at once. Returns the achieved rate.
async fn generate(pipeline: Pipeline, clock: Clock, rate: f64, count: usize) -> f64 {
    let start = Instant::now();
    let due_at = |i: usize| start + Duration::from_secs_f64(i as f64 / rate);
    let mut sent = 0;
    while sent < count {
        while sent < count && due_at(sent) <= Instant::now() {
            let (event, object) = event(sent, clock.now());
            pipeline.deliver(event, object);
            sent += 1;
        }
        if sent < count {
            tokio::time::sleep_until(due_at(sent).into()).await;
        }
    }
    count as f64 / start.elapsed().as_secs_f64()
}

/// The `i`-th event: pod `i % KEYS` at the phase of its cycle.
fn event(i: usize, stamp: u64) -> (WatchEvent, watchlife_informer::Object) {
    let key = i % KEYS;
    let (event_type, scheduled) = phase(i / KEYS);
    let name = pod_name(key);
    let mut object = pod(&name, i as u64);
    object["metadata"]["resourceVersion"] = (1000 + i).to_string().into();
    object["metadata"]["uid"] = format!("00000000-0000-4000-8000-{key:012}").into();
    if !scheduled && let Some(spec) = object["spec"].as_object_mut() {
        spec.remove("nodeName");
    }
    let event = WatchEvent {
        event_type,
        target: ObjectRef {
            resource: "pods".into(),
            kind: "Pod".into(),
            namespace: Some("default".into()),
            name,
        },
        resource_version: (1000 + i).to_string(),
        object: watchlife_protocol::ObjectJson::from_value(&object),
        stages: StageTimes::from([(Stage::Reflector, StageMark::at(stamp))]),
        initial: false,
        coalesced: false,
        handled: Default::default(),
        patch: None,
        server: None,
    };
    let object = watchlife_informer::Object::from_json(event.object.clone());
    (event, object)
}

/// A pod's life in four events, so that every listener has calls: ADDED
/// unscheduled (the scheduler's "unscheduled" listener: OnAdd), MODIFIED
/// onto a node ("unscheduled": OnDelete, "scheduled": OnAdd), MODIFIED
/// again ("scheduled": OnUpdate), DELETED ("scheduled": OnDelete). The
/// controller's listener calls on every event. Returns the event's type
/// and whether the pod has a node.
fn phase(visit: usize) -> (EventType, bool) {
    match visit % 4 {
        0 => (EventType::Added, false),
        1 | 2 => (EventType::Modified, true),
        _ => (EventType::Deleted, true),
    }
}
