//! The demo control plane compiled into the page (feature `in-page`, built by
//! `make embed` as `demo.html`): no bridge and no network. The store, the
//! Cachers' stages (each Cacher's Reflector and dispatcher), the controllers
//! and the story run here; so do a Reflector per resource (the informer
//! crate's one list-watch driver, as on the bridge; see [`reflector`]) and
//! the informer's stages. Every stage is a task of its own that runs one
//! item per turn of the page's event loop, so queues form here as on a
//! server. The page's Reflectors ask what a client of the apiserver asks
//! (`rv="0"` is answered by the watch cache), and the demo actions run
//! against this control plane.
//!
//! One Kubernetes release is followed throughout, chosen by the page's
//! `kubernetes` query parameter (`demo.html?kubernetes=1.20`; 1.36 when
//! absent): the control plane's apiserver, the Reflectors' rules (1.20: LIST,
//! then WATCH; 1.36: a streaming list) and the informers' queue (DeltaFIFO,
//! RealFIFO). A release the page does not know is refused on the page, and
//! nothing starts.
//!
//! Every stage time comes from the browser's clock: the control plane's
//! commit, cache and dispatch times, and the Reflector's and the informer's,
//! so the numbers are this browser's own measurements, and the page says so.
//! That clock is coarse (browsers round `performance.now()`); the page
//! measures its tick at start and shows a shorter interval as under it.

mod reflector;

use crate::model::{Link, Model};
use futures::StreamExt;
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use leptos::prelude::{Set, SetValue};
use leptos::task::spawn_local;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;
use watchlife_controlplane::cacher::watcher::DEMO_BOOKMARK_FREQUENCY;
use watchlife_controlplane::control_plane::stages::Sleeper;
use watchlife_controlplane::controllers::Demo;
use watchlife_controlplane::demo_action;
use watchlife_controlplane::limits::Limits;
use watchlife_controlplane::resource::{CONFIGMAPS, DEPLOYMENTS, PODS, REPLICASETS, ResourceType};
use watchlife_controlplane::watch_cache_report::report;
use watchlife_controlplane::{Clock, ControlPlane};
use watchlife_informer::informer::Options;
use watchlife_informer::profile::{Profile, ProfileError};
use watchlife_informer::shared_informer::QueueModel;
use watchlife_informer_frames::{Finished, Informer};
use watchlife_protocol::{
    ActionResult, ClientMessage, ErrorFrame, FrameBody, Hello, Micros, PROTOCOL_VERSION,
    ReflectorState, ReflectorUpdate, ServerFrame, Snapshot, Source, Stage,
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

/// The query parameter that names the Kubernetes release the page follows
/// (`demo.html?kubernetes=1.20`), as the bridge's `--kubernetes` does.
const KUBERNETES_PARAM: &str = "kubernetes";

/// Starts the control plane, its controllers and story, and the page's
/// informer, all feeding `model`, with the rules of the release the page's
/// URL asks for. A release it does not know is told on the page (and the
/// console), and nothing starts.
pub fn start(model: Model) {
    let search = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default();
    let profile = match profile_asked(&search) {
        Ok(profile) => profile,
        Err(e) => return refuse(model, e),
    };
    let clock = Clock::new(browser_micros);
    crate::micros::set_clock_tick(measure_clock_tick());
    let cp = ControlPlane::staged_with_profile(
        clock.clone(),
        Limits::DEMO,
        DEMO_BOOKMARK_FREQUENCY,
        profile,
    );
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
        kubernetes: profile.to_string(),
        cluster_version: None,
    }));
    page.control(FrameBody::Snapshot(Snapshot {
        objects: Vec::new(),
        reflectors: Vec::new(),
        // Nothing listed yet: the Reflectors start below.
        listed: Vec::new(),
        // No controller taps into a demo that runs in the page.
        taps: Vec::new(),
    }));
    spawn_local(drive(Demo::new(cp, Some(STORY_PACE)), page.clock.clone()));
    for rt in RESOURCES {
        let stages = page.start_informer(rt);
        spawn_local(reflector::list_and_watch(page.clone(), stages));
    }
    spawn_local(page.clone().report_watch_caches());
    page.take_actions();
}

/// The release `search` (the page's `?…` query) asks for with
/// [`KUBERNETES_PARAM`], with that release's default gates: `1.20`, `v1.20.2`
/// and the like, or 1.36 when the query names none. Any other value is an
/// error that names the releases modelled. The value is read as written
/// (release names need no percent-encoding).
fn profile_asked(search: &str) -> Result<Profile, ProfileError> {
    let asked = search
        .trim_start_matches('?')
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == KUBERNETES_PARAM);
    match asked {
        None => Ok(Profile::default()),
        Some((_, release)) => Ok(Profile::new(release.parse()?)),
    }
}

/// Tells the page, as an alarming notice that nothing replaces, and the
/// console why the demo did not start.
fn refuse(model: Model, error: ProfileError) {
    let message = format!(
        "{error}. Open demo.html?{KUBERNETES_PARAM}=1.20 or ?{KUBERNETES_PARAM}=1.36 (the default)."
    );
    leptos::logging::warn!("{message}");
    model.last_error.set(Some(message.clone()));
    model.tell(message, true);
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
            queue: QueueModel::of(&self.cp.profile()),
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

#[cfg(test)]
mod tests {
    use super::*;
    use watchlife_informer::profile::Release;

    #[test]
    fn the_url_names_the_release_and_1_36_is_the_default() {
        let release = |search: &str| profile_asked(search).map(|p| p.release());
        assert_eq!(release(""), Ok(Release::V1_36));
        assert_eq!(release("?controls=minimal"), Ok(Release::V1_36));
        assert_eq!(release("?kubernetes=1.20"), Ok(Release::V1_20));
        assert_eq!(
            release("?theme=dark&kubernetes=v1.20.2"),
            Ok(Release::V1_20)
        );
        assert_eq!(release("?kubernetes=1.36&paused=1"), Ok(Release::V1_36));
        assert_eq!(
            profile_asked("?kubernetes=1.20").map(|p| p.to_string()),
            Ok("1.20".to_string()),
            "the hello names the release as the bridge does"
        );
    }

    #[test]
    fn an_unknown_release_is_an_error_that_names_the_known_ones() {
        for search in ["?kubernetes=1.99", "?kubernetes=", "?kubernetes=latest"] {
            let error = profile_asked(search).expect_err(search);
            assert!(error.to_string().contains("1.20 and 1.36"), "{error}");
        }
    }
}
