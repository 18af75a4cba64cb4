//! The demo control plane compiled into the page (feature `in-page`, built by
//! `make embed` as `demo.html`): no bridge and no network. The store, the
//! Cachers' stages (each Cacher's Reflector and dispatcher), the controllers
//! and the story run here; so do a Reflector per resource (the informer
//! crate's state machine, as on the bridge) and the informer's stages. Every
//! stage is a task of its own that runs one item per turn of the page's
//! event loop, so queues form here as on a server. The page's Reflectors
//! LIST and WATCH with the apiserver's parameters (`rv="0"` is answered by
//! the watch cache), and the demo actions run against this control plane.
//!
//! Every stage time comes from the browser's clock: the control plane's
//! commit, cache and dispatch times, and the Reflector's and the informer's,
//! so the numbers are this browser's own measurements, and the page says so.
//! That clock is coarse (browsers round `performance.now()`); the page
//! measures its tick at start and shows a shorter interval as under it.

use crate::model::{Link, Model};
use futures::StreamExt;
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use leptos::prelude::{Set, SetValue};
use leptos::task::spawn_local;
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use watchlife_controlplane::cacher::watcher::DEMO_BOOKMARK_FREQUENCY;
use watchlife_controlplane::control_plane::stages::Sleeper;
use watchlife_controlplane::controllers::Demo;
use watchlife_controlplane::demo_action;
use watchlife_controlplane::limits::Limits;
use watchlife_controlplane::list::{ListOptions, ListPlan};
use watchlife_controlplane::resource::{CONFIGMAPS, DEPLOYMENTS, PODS, REPLICASETS, ResourceType};
use watchlife_controlplane::watch_cache::Delivery;
use watchlife_controlplane::watch_cache_report::report;
use watchlife_controlplane::{Clock, ControlPlane, Origin, WatchOptions};
use watchlife_informer::informer::Options;
use watchlife_informer::reflector::{
    Config as ReflectorConfig, Effect, Failure, Reflector, Request, WatchEnd,
};
use watchlife_informer::{Finished, Informer, Object};
use watchlife_protocol::{
    ActionResult, ClientMessage, ErrorFrame, EventType, FrameBody, Hello, Micros, ObjectRef,
    PROTOCOL_VERSION, ReflectorState, ReflectorUpdate, ServerAnswer, ServerFrame, ServerPath,
    Snapshot, Source, Stage, StageMark, StageTimes, WatchEvent,
};

/// What the page's Reflectors watch: what the story and its controllers change.
const RESOURCES: [ResourceType; 4] = [PODS, CONFIGMAPS, DEPLOYMENTS, REPLICASETS];

/// The story's pace: one change a second, the bridge's default, so that each
/// event can be followed.
const STORY_PACE: Duration = Duration::from_secs(1);

/// How often the watch caches' rings are drawn again, as the bridge's
/// reporter samples them.
const REPORT_EVERY: Duration = Duration::from_millis(250);

/// The name the page's watches have in the watch caches' lanes.
const WATCHER_NAME: &str = "this page";

/// Starts the control plane, its controllers and story, and the page's
/// informer, all feeding `model`.
pub fn start(model: Model) {
    let clock = Clock::new(browser_micros);
    crate::stats::set_clock_tick(measure_clock_tick());
    let cp = ControlPlane::staged(clock.clone(), Limits::DEMO, DEMO_BOOKMARK_FREQUENCY);
    for rt in watchlife_controlplane::resource::ALL {
        spawn_local(cp.reflector_task(rt, PageSleeper));
        spawn_local(cp.dispatcher_task(rt, PageSleeper));
    }
    let page = Page {
        model,
        clock,
        cp: cp.clone(),
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
        kubernetes: String::new(),
        cluster_version: None,
    }));
    page.control(FrameBody::Snapshot(Snapshot {
        objects: Vec::new(),
        reflectors: Vec::new(),
    }));
    spawn_local(drive(Demo::new(cp, Some(STORY_PACE)), page.clock.clone()));
    for rt in RESOURCES {
        let stages = page.start_informer(rt);
        spawn_local(page.clone().list_and_watch(stages));
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

/// The smallest step of the browser's clock, in µs: the least two
/// different readings of `performance.now()` differ by.
fn measure_clock_tick() -> Micros {
    let mut tick = Micros::MAX;
    let mut last = browser_micros();
    for _ in 0..10_000 {
        let now = browser_micros();
        if now > last {
            tick = tick.min(now - last);
            if tick <= 1 {
                break;
            }
        }
        last = now;
    }
    if tick == Micros::MAX { 1000 } else { tick }
}

/// The page's timer, for the Cachers' stages.
#[derive(Clone, Copy)]
struct PageSleeper;

impl Sleeper for PageSleeper {
    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> {
        gloo_timers::future::sleep(duration)
    }
}

/// Runs the controllers and the story, as the bridge's demo source does:
/// again whenever a dispatcher delivered something.
async fn drive(mut demo: Demo, clock: Clock) {
    let mut revisions = demo.control_plane().dispatches();
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

/// What the page's Reflectors and informers share.
#[derive(Clone)]
struct Page {
    model: Model,
    clock: Clock,
    cp: ControlPlane,
    /// The last stream `seq` given.
    seq: Rc<Cell<u64>>,
}

/// One resource's informer and the signals that wake its stages' tasks.
#[derive(Clone)]
struct Stages {
    rt: ResourceType,
    informer: Rc<RefCell<Informer>>,
    fifo: Signal,
    listeners: Rc<Vec<Signal>>,
    workqueue: Signal,
}

/// Wakes a task waiting for work; wakes that come while it works are kept.
#[derive(Clone)]
struct Signal(UnboundedSender<()>);

impl Signal {
    fn wake(&self) {
        let _ = self.0.unbounded_send(());
    }
}

/// The waiting side of a [`Signal`], owned by the one task it wakes.
struct Wait(UnboundedReceiver<()>);

impl Wait {
    /// Waits for a wake, then takes every wake already sent.
    async fn wait(&mut self) {
        let _ = self.0.next().await;
        while self.0.try_recv().is_ok() {}
    }
}

/// A signal and its waiting side.
fn signal() -> (Signal, Wait) {
    let (tx, rx) = unbounded();
    (Signal(tx), Wait(rx))
}

/// Gives the page's event loop a turn, so that each stage runs in its own
/// turn and the times between stages are real queueing.
async fn next_turn() {
    gloo_timers::future::TimeoutFuture::new(0).await;
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

    /// The informer of `rt` and its tasks: the processing loop, one task per
    /// listener, one worker.
    fn start_informer(&self, rt: ResourceType) -> Stages {
        let informer = Informer::new(Options {
            resource: rt.qualified_name(),
            kind: rt.kind.to_string(),
            resyncs: false,
            queue: Default::default(),
        });
        let (fifo, fifo_wait) = signal();
        let (workqueue, workqueue_wait) = signal();
        let (listeners, listener_waits): (Vec<_>, Vec<_>) =
            (0..informer.listeners().len()).map(|_| signal()).unzip();
        let stages = Stages {
            rt,
            informer: Rc::new(RefCell::new(informer)),
            fifo,
            listeners: Rc::new(listeners),
            workqueue,
        };
        spawn_local(self.clone().process_loop(stages.clone(), fifo_wait));
        for (index, wait) in listener_waits.into_iter().enumerate() {
            spawn_local(self.clone().listener(stages.clone(), index, wait));
        }
        spawn_local(self.clone().worker(stages.clone(), workqueue_wait));
        stages
    }

    async fn process_loop(self, stages: Stages, mut woken: Wait) {
        let now = || self.clock.now();
        loop {
            let processed = stages.informer.borrow_mut().process_one(&now);
            let Some(processed) = processed else {
                woken.wait().await;
                continue;
            };
            for note in processed.notes {
                self.publish(note);
            }
            for index in processed.woken {
                stages.listeners[index].wake();
            }
            self.publish_events(processed.finished);
            next_turn().await;
        }
    }

    async fn listener(self, stages: Stages, index: usize, mut woken: Wait) {
        let now = || self.clock.now();
        loop {
            let run = stages.informer.borrow_mut().run_listener(index, &now);
            let Some(run) = run else {
                woken.wait().await;
                continue;
            };
            if run.queued {
                stages.workqueue.wake();
            }
            self.publish_events(run.finished);
            next_turn().await;
        }
    }

    async fn worker(self, stages: Stages, mut woken: Wait) {
        let now = || self.clock.now();
        loop {
            let done = stages.informer.borrow_mut().run_worker(0, &now);
            let Some(finished) = done else {
                woken.wait().await;
                continue;
            };
            self.publish_events(finished);
            next_turn().await;
        }
    }

    fn publish_events(&self, events: Vec<Finished>) {
        for finished in events {
            self.publish(FrameBody::Event(finished.event));
        }
    }

    /// ListAndWatch for one resource, for the life of the page: the one
    /// Reflector state machine, driven against the control plane.
    async fn list_and_watch(self, stages: Stages) {
        let rt = stages.rt;
        let seed = rt.plural.len() as u64 ^ self.clock.now();
        let mut reflector = Reflector::new(ReflectorConfig::default(), seed);
        let mut pages: Vec<Arc<Value>> = Vec::new();
        let mut step = reflector.start(self.clock.now());
        loop {
            self.apply(&stages, step.effects, &mut pages);
            step = match step.request {
                Request::List {
                    resource_version,
                    limit,
                    ..
                } => {
                    next_turn().await;
                    let opts = ListOptions {
                        resource_version: Some(resource_version.clone()),
                        limit: Some(limit),
                        ..ListOptions::default()
                    };
                    let served_by_cache = matches!(
                        watchlife_controlplane::list::plan(&opts),
                        Ok(ListPlan::Cache { .. })
                    );
                    match self.cp.list_with(rt, None, &opts) {
                        Ok(list) => {
                            let count = list.items.len() as u64;
                            let revision = list.resource_version;
                            let answer = if served_by_cache {
                                ServerAnswer::ListFromWatchCache {
                                    asked: resource_version,
                                    revision,
                                    items: count,
                                    waited_micros: 0,
                                }
                            } else {
                                ServerAnswer::ListFromEtcd {
                                    asked: resource_version,
                                    revision,
                                    items: count,
                                }
                            };
                            self.answered(&stages, answer);
                            pages = list.items;
                            reflector.list_page(
                                count,
                                &revision.to_string(),
                                list.continue_token.as_deref(),
                                self.clock.now(),
                            )
                        }
                        Err(e) => {
                            reflector.list_failed(Failure::Other(e.to_string()), self.clock.now())
                        }
                    }
                }
                Request::Watch {
                    resource_version,
                    timeout_seconds,
                    ..
                } => {
                    let from = resource_version.parse().unwrap_or(0);
                    let options = WatchOptions {
                        bookmarks: true,
                        deadline: Some(self.clock.now() + timeout_seconds * 1_000_000),
                        ..WatchOptions::named(WATCHER_NAME, Some(from))
                    };
                    match self.cp.watch_opts(rt, options) {
                        Ok((_, mut deliveries)) => {
                            let events = deliveries.len() as u32;
                            let answer = if from == 0 {
                                ServerAnswer::WatchSynthetic {
                                    asked: resource_version.clone(),
                                    events,
                                }
                            } else {
                                ServerAnswer::WatchReplayed {
                                    asked: resource_version.clone(),
                                    events,
                                }
                            };
                            self.answered(&stages, answer);
                            let deadline =
                                gloo_timers::future::sleep(Duration::from_secs(timeout_seconds));
                            let mut deadline = futures::FutureExt::fuse(deadline);
                            loop {
                                let next = futures::FutureExt::fuse(deliveries.recv());
                                futures::pin_mut!(next);
                                let delivery = futures::select! {
                                    d = next => d,
                                    _ = deadline => None,
                                };
                                let Some(delivery) = delivery else { break };
                                let rv = delivery.event.revision.to_string();
                                if delivery.origin == Origin::Bookmark {
                                    reflector.watch_event(&rv, true);
                                    let state = ReflectorState::Bookmark {
                                        resource_version: rv,
                                    };
                                    self.note(&stages, state);
                                    continue;
                                }
                                reflector.watch_event(&rv, false);
                                self.deliver(&stages, delivery);
                            }
                            reflector.watch_ended(WatchEnd::Closed, self.clock.now())
                        }
                        Err(e) => reflector.watch_ended(
                            WatchEnd::Failed(Failure::Expired(e.to_string())),
                            self.clock.now(),
                        ),
                    }
                }
                Request::Wait(delay) => {
                    gloo_timers::future::sleep(delay).await;
                    reflector.waited(self.clock.now())
                }
            };
        }
    }

    /// The Reflector's effects, in order, into the informer's FIFO.
    fn apply(&self, stages: &Stages, effects: Vec<Effect>, pages: &mut Vec<Arc<Value>>) {
        let rt = stages.rt;
        let mut informer = stages.informer.borrow_mut();
        for effect in effects {
            match effect {
                Effect::Report(state) => {
                    informer.enqueue_note(FrameBody::Reflector(ReflectorUpdate {
                        resource: rt.qualified_name(),
                        state,
                    }))
                }
                Effect::DiscardPages => pages.clear(),
                Effect::Replace { .. } => {
                    let now = self.clock.now();
                    let items = pages
                        .drain(..)
                        .map(|object| {
                            let object = Object::from_value(&object);
                            let mut event = watch_event(rt, EventType::Added, &object, now);
                            event.initial = true;
                            (event, object)
                        })
                        .collect();
                    informer.enqueue_list(items, now);
                }
            }
        }
        stages.fifo.wake();
    }

    /// Who answered a request, onto the Reflector's node.
    fn answered(&self, stages: &Stages, answer: ServerAnswer) {
        self.note(stages, ReflectorState::Answered { answer });
    }

    /// A Reflector state of `stages`' resource, in order with its events.
    fn note(&self, stages: &Stages, state: ReflectorState) {
        stages
            .informer
            .borrow_mut()
            .enqueue_note(FrameBody::Reflector(ReflectorUpdate {
                resource: stages.rt.qualified_name(),
                state,
            }));
        stages.fifo.wake();
    }

    /// One watch event from the Cacher, into the informer's FIFO: this
    /// watch's reader is its stream's writer, so the event is written now.
    fn deliver(&self, stages: &Stages, delivery: Delivery) {
        let cached = &delivery.event;
        let now = self.clock.now();
        let object = Object::from_value(&cached.object);
        let mut event = watch_event(stages.rt, cached.event_type, &object, now);
        let origin = match delivery.origin {
            Origin::Replayed => watchlife_protocol::Origin::Replayed,
            Origin::Synthetic => watchlife_protocol::Origin::Synthetic,
            _ => watchlife_protocol::Origin::Live,
        };
        if let Some(t) = cached.times {
            event.stages.extend([
                (Stage::Etcd, StageMark::at(t.committed_at)),
                (
                    Stage::WatchCache,
                    StageMark {
                        at: t.cached_at,
                        depth: Some(t.incoming_depth),
                    },
                ),
            ]);
        }
        event.stages.insert(
            Stage::WatchStream,
            StageMark {
                at: now,
                depth: Some(delivery.buffer_depth),
            },
        );
        event.server = Some(Box::new(ServerPath {
            origin,
            reflected: cached.times.map(|t| t.reflected_at),
            dispatched: cached
                .dispatched_at()
                .filter(|_| origin == watchlife_protocol::Origin::Live)
                .map(|at| StageMark {
                    at,
                    depth: cached.times.map(|t| t.incoming_depth),
                }),
            buffered: StageMark {
                at: delivery.buffered_at,
                depth: Some(delivery.buffer_depth),
            },
            written: now,
        }));
        stages
            .informer
            .borrow_mut()
            .enqueue(event, object, self.clock.now());
        stages.fifo.wake();
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
fn watch_event(
    rt: ResourceType,
    event_type: EventType,
    object: &Object,
    now: Micros,
) -> WatchEvent {
    let meta = object.meta();
    WatchEvent {
        event_type,
        target: ObjectRef {
            resource: rt.qualified_name(),
            kind: rt.kind.to_string(),
            namespace: meta.namespace().map(String::from),
            name: meta.name().to_string(),
        },
        resource_version: meta.resource_version.to_string(),
        object: object.json().clone(),
        stages: StageTimes::from([(Stage::Reflector, StageMark::at(now))]),
        initial: false,
        coalesced: false,
        handled: Default::default(),
        server: None,
    }
}
