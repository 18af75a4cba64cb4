//! The demo control plane compiled into the page (feature `in-page`, built by
//! `make embed` as `demo.html`): no bridge and no network. The store, its
//! watch caches, the controllers and the story run here; so do a Reflector
//! per resource (LIST, then WATCH from the list's revision, re-watching or
//! relisting when a watch ends) and the informer's stages. The demo actions
//! run against this control plane.
//!
//! Every stage time comes from the browser's clock: the control plane's
//! commit, cache and dispatch times, and the Reflector's and the informer's,
//! so the numbers are this browser's own measurements, and the page says so.

use crate::model::{Link, Model};
use futures::StreamExt;
use futures::channel::mpsc::unbounded;
use leptos::prelude::{Set, SetValue};
use leptos::task::spawn_local;
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use watchlife_controlplane::controllers::Demo;
use watchlife_controlplane::demo_action;
use watchlife_controlplane::resource::{CONFIGMAPS, DEPLOYMENTS, PODS, REPLICASETS, ResourceType};
use watchlife_controlplane::watch_cache::Delivery;
use watchlife_controlplane::watch_cache_report::report;
use watchlife_controlplane::{Clock, ControlPlane};
use watchlife_informer::Informer;
use watchlife_protocol::{
    ActionResult, ClientMessage, ErrorFrame, EventType, FrameBody, Hello, Micros, ObjectRef,
    PROTOCOL_VERSION, ReflectorState, ReflectorUpdate, ServerFrame, Snapshot, Source, Stage,
    StageMark, StageTimes, WatchEvent,
};

/// What the page's Reflectors watch: what the story and its controllers change.
const RESOURCES: [ResourceType; 4] = [PODS, CONFIGMAPS, DEPLOYMENTS, REPLICASETS];

/// The story's pace: one change a second, the bridge's default, so that each
/// event can be followed.
const STORY_PACE: Duration = Duration::from_secs(1);

/// How often the watch caches' rings are drawn again, as the bridge's
/// reporter samples them.
const REPORT_EVERY: Duration = Duration::from_millis(250);

/// Pause before a Reflector whose watch ended watches again.
const REWATCH_AFTER: Duration = Duration::from_millis(200);

/// The name the page's watches have in the watch caches' lanes.
const WATCHER_NAME: &str = "this page";

/// Starts the control plane, its controllers and story, and the page's
/// informer, all feeding `model`.
pub fn start(model: Model) {
    let clock = Clock::new(browser_micros);
    let cp = ControlPlane::new(clock.clone());
    let page = Page {
        model,
        clock,
        cp: cp.clone(),
        informer: Rc::new(RefCell::new(Informer::new())),
        seq: Rc::new(Cell::new(0)),
    };
    model.link.set(Link::InPage);
    page.control(FrameBody::Hello(Hello {
        protocol: PROTOCOL_VERSION,
        server_version: env!("CARGO_PKG_VERSION").into(),
        stream: "in-page".into(),
        source: Source::InPage,
        resources: RESOURCES.iter().map(|rt| rt.qualified_name()).collect(),
        observed_stages: Stage::ALL.to_vec(),
        demo_actions: true,
        heartbeat_ms: 0,
    }));
    page.control(FrameBody::Snapshot(Snapshot {
        objects: Vec::new(),
        reflectors: Vec::new(),
    }));
    spawn_local(drive(Demo::new(cp, Some(STORY_PACE)), page.clock.clone()));
    for rt in RESOURCES {
        spawn_local(page.clone().list_and_watch(rt));
    }
    spawn_local(page.clone().report_watch_caches());
    page.take_actions();
}

/// The browser's wall clock in µs since the epoch, with the sub-millisecond
/// part `performance.now()` gives.
fn browser_micros() -> Micros {
    let ms = web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.time_origin() + p.now())
        .unwrap_or_else(js_sys::Date::now);
    (ms * 1000.0) as Micros
}

/// Runs the controllers and the story, as the bridge's demo source does.
async fn drive(mut demo: Demo, clock: Clock) {
    let mut revisions = demo.control_plane().revisions();
    loop {
        let wait = demo.step(clock.now());
        let sleep = gloo_timers::future::sleep(wait.max(Duration::from_millis(1)));
        if wait.is_zero() {
            sleep.await;
            continue;
        }
        futures::select! {
            _ = futures::FutureExt::fuse(sleep) => {}
            changed = futures::FutureExt::fuse(revisions.changed()) => if changed.is_err() { return },
        }
    }
}

/// What the page's Reflectors and informer share.
#[derive(Clone)]
struct Page {
    model: Model,
    clock: Clock,
    cp: ControlPlane,
    informer: Rc<RefCell<Informer>>,
    /// The last stream `seq` given.
    seq: Rc<Cell<u64>>,
}

impl Page {
    /// A stream frame, numbered as the bridge numbers its stream.
    fn publish(&self, body: FrameBody) {
        let seq = self.seq.get() + 1;
        self.seq.set(seq);
        self.model.receive(ServerFrame { seq, body });
    }

    /// A control frame, carrying the cursor.
    fn control(&self, body: FrameBody) {
        self.model.receive(ServerFrame {
            seq: self.seq.get(),
            body,
        });
    }

    fn reflector(&self, rt: ResourceType, state: ReflectorState) {
        self.publish(FrameBody::Reflector(ReflectorUpdate {
            resource: rt.qualified_name(),
            state,
        }));
    }

    /// ListAndWatch for one resource, for the life of the page.
    async fn list_and_watch(self, rt: ResourceType) {
        let mut revision = self.list(rt);
        loop {
            let watch = self.cp.watch_named(WATCHER_NAME, rt, Some(revision), None);
            let mut deliveries = match watch {
                Ok(rx) => rx,
                Err(e) => {
                    self.reflector(
                        rt,
                        ReflectorState::Gone {
                            resource_version: revision.to_string(),
                            message: e.to_string(),
                        },
                    );
                    self.reflector(
                        rt,
                        ReflectorState::Relist {
                            reason: "the watch's resourceVersion is gone (410)".into(),
                        },
                    );
                    revision = self.list(rt);
                    continue;
                }
            };
            self.reflector(
                rt,
                ReflectorState::WatchStarted {
                    resource_version: revision.to_string(),
                    timeout_seconds: 0,
                },
            );
            while let Some(delivery) = deliveries.recv().await {
                revision = revision.max(delivery.event.revision);
                self.deliver(rt, delivery);
            }
            self.reflector(
                rt,
                ReflectorState::WatchEnded {
                    resource_version: revision.to_string(),
                    reason: "the watch cache closed the watch".into(),
                },
            );
            gloo_timers::future::sleep(REWATCH_AFTER).await;
        }
    }

    /// LIST: every current object into the informer at once; returns the
    /// list's revision.
    fn list(&self, rt: ResourceType) -> u64 {
        self.reflector(
            rt,
            ReflectorState::ListStarted {
                resource_version: "0".into(),
                limit: 0,
            },
        );
        let (objects, revision) = self.cp.list(rt, None);
        let now = self.clock.now();
        let items: Vec<(WatchEvent, Arc<Value>)> = objects
            .into_iter()
            .map(|object| {
                let mut event = watch_event(rt, EventType::Added, &object, now);
                event.initial = true;
                (event, object)
            })
            .collect();
        let count = items.len() as u64;
        self.informer.borrow_mut().enqueue_list(items, now);
        self.drain();
        self.reflector(
            rt,
            ReflectorState::ListFinished {
                count,
                resource_version: revision.to_string(),
            },
        );
        revision
    }

    /// One watch event through the Reflector and the informer's stages.
    fn deliver(&self, rt: ResourceType, delivery: Delivery) {
        let cached = &delivery.event;
        let mut event = watch_event(rt, cached.event_type, &cached.object, self.clock.now());
        event.stages.extend([
            (Stage::Etcd, StageMark::at(cached.committed_at)),
            (Stage::WatchCache, StageMark::at(cached.cached_at)),
            (Stage::WatchStream, StageMark::at(delivery.dispatched_at)),
        ]);
        let now = self.clock.now();
        self.informer
            .borrow_mut()
            .enqueue(event, cached.object.clone(), now);
        self.drain();
    }

    /// Runs the informer's stages until its queues are empty, publishing
    /// each reconciled event.
    fn drain(&self) {
        let mut informer = self.informer.borrow_mut();
        while informer.process_one(self.clock.now()) {}
        let mut done = Vec::new();
        while let Some(reconciled) = informer.reconcile_one(self.clock.now()) {
            done.extend(reconciled.events);
        }
        drop(informer);
        for event in done {
            self.publish(FrameBody::Event(event));
        }
    }

    /// The watch caches' rings and lanes, drawn when they change.
    async fn report_watch_caches(self) {
        let mut last = None;
        loop {
            let now = report(&self.cp);
            if last.as_ref() != Some(&now) {
                self.publish(FrameBody::WatchCache(now.clone()));
                last = Some(now);
            }
            gloo_timers::future::sleep(REPORT_EVERY).await;
        }
    }

    /// The demo actions: what the page would send the bridge is carried out
    /// here, and answered as the bridge answers.
    fn take_actions(&self) {
        let (tx, mut rx) = unbounded::<String>();
        self.model.outbox.set_value(Some(tx));
        let page = self.clone();
        spawn_local(async move {
            while let Some(text) = rx.next().await {
                let Ok(ClientMessage::Action { action }) = serde_json::from_str(&text) else {
                    continue;
                };
                match demo_action::run(&page.cp, &action) {
                    Ok(message) => {
                        page.control(FrameBody::ActionResult(ActionResult { action, message }))
                    }
                    Err(e) => page.control(FrameBody::Error(ErrorFrame {
                        code: e.code,
                        message: e.message,
                    })),
                }
            }
        });
    }
}

/// The event the Reflector makes of an object, stamped at `now`.
fn watch_event(rt: ResourceType, event_type: EventType, object: &Value, now: Micros) -> WatchEvent {
    let meta = |field: &str| object["metadata"][field].as_str().map(String::from);
    WatchEvent {
        event_type,
        target: ObjectRef {
            resource: rt.qualified_name(),
            kind: rt.kind.to_string(),
            namespace: meta("namespace"),
            name: meta("name").unwrap_or_default(),
        },
        resource_version: meta("resourceVersion").unwrap_or_default(),
        object: object.clone(),
        stages: StageTimes::from([(Stage::Reflector, StageMark::at(now))]),
        initial: false,
        coalesced: false,
        handled: Default::default(),
    }
}
