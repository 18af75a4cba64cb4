//! Runs the informer of one resource as real tasks, as client-go runs it in
//! goroutines: the processing loop (HandleDeltas), one task per listener
//! (its processorListener), and `workers` workqueue workers. The times
//! between stages are therefore real queueing.
//!
//! The Reflector hands deltas, resyncs and its own state reports to the
//! FIFO; reports and BOOKMARK / ERROR markers are published when the
//! processing loop reaches them, in stream order with the events. Each
//! event is published once finished (every listener ran, and the reconcile
//! of its key returned), with every stage's time.

use crate::downstream::hub::Hub;
use crate::upstream::source::stages::ServerStages;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::Notify;
use watchlife_controlplane::Clock;
use watchlife_informer::Object;
use watchlife_informer::informer::Options;
use watchlife_informer_frames::{Finished, Informer};
use watchlife_protocol::{FrameBody, ReflectorState, ReflectorUpdate, WatchEvent};

/// For benchmarks and demos only (no flag sets it): the handler of the
/// listener named `listener` takes `delay` longer, waiting between its
/// notification's dequeue and its call without holding the informer, as a
/// handler awaiting a request would. Nothing else waits for it.
#[derive(Debug, Clone)]
pub struct SlowListener {
    pub listener: String,
    pub delay: Duration,
}

/// The informer of one resource and the tasks that drive it.
#[derive(Clone)]
pub struct Pipeline {
    informer: Arc<Mutex<Informer>>,
    fifo_ready: Arc<Notify>,
    listener_ready: Arc<Vec<Notify>>,
    queue_ready: Arc<Notify>,
    clock: Clock,
    hub: Hub,
    server: Option<Arc<dyn ServerStages>>,
    /// The slow listener's index and its delay (see [`SlowListener`]).
    slow: Option<(usize, Duration)>,
}

impl Pipeline {
    /// Starts the processing task, a task per listener and `workers`
    /// workers, publishing to `hub` each finished event with the
    /// server-side stage times `server` knows of it.
    pub fn start(
        hub: Hub,
        clock: Clock,
        server: Option<Arc<dyn ServerStages>>,
        options: Options,
        workers: u32,
    ) -> Pipeline {
        Self::start_with_slow_listener(hub, clock, server, options, workers, None)
    }

    /// [`Pipeline::start`], with one listener made slow: for benchmarks and
    /// demos (see [`SlowListener`]). A name no listener has slows nothing.
    pub fn start_with_slow_listener(
        hub: Hub,
        clock: Clock,
        server: Option<Arc<dyn ServerStages>>,
        options: Options,
        workers: u32,
        slow: Option<SlowListener>,
    ) -> Pipeline {
        let informer = Informer::new(options);
        let names = informer.listeners();
        let listeners = names.len();
        let slow = slow.and_then(|s| {
            let index = names.iter().position(|n| *n == s.listener)?;
            Some((index, s.delay))
        });
        let pipeline = Pipeline {
            informer: Arc::new(Mutex::new(informer)),
            fifo_ready: Arc::new(Notify::new()),
            listener_ready: Arc::new((0..listeners).map(|_| Notify::new()).collect()),
            queue_ready: Arc::new(Notify::new()),
            clock,
            hub,
            server,
            slow,
        };
        tokio::spawn(pipeline.clone().process_loop());
        for index in 0..listeners {
            tokio::spawn(pipeline.clone().listener(index));
        }
        for worker in 0..workers.max(1) {
            tokio::spawn(pipeline.clone().worker(worker));
        }
        pipeline
    }

    /// The Reflector delivers one watch event.
    pub fn deliver(&self, event: WatchEvent, object: Object) {
        let now = self.clock.now();
        self.lock().enqueue(event, object, now);
        self.fifo_ready.notify_one();
    }

    /// The Reflector delivers a whole LIST.
    pub fn replace(&self, items: Vec<(WatchEvent, Object)>) {
        let now = self.clock.now();
        self.lock().enqueue_list(items, now);
        self.fifo_ready.notify_one();
    }

    /// The Reflector's resync timer fired.
    pub fn resync(&self) {
        let now = self.clock.now();
        self.lock().enqueue_resync(now);
        self.fifo_ready.notify_one();
    }

    /// A BOOKMARK or ERROR marker, published in stream order.
    pub fn marker(&self, event: WatchEvent) {
        self.lock().enqueue_note(FrameBody::Event(event));
        self.fifo_ready.notify_one();
    }

    /// A Reflector state of `resource`, published in stream order.
    pub fn report(&self, resource: &str, state: ReflectorState) {
        let note = FrameBody::Reflector(ReflectorUpdate {
            resource: resource.to_string(),
            state,
        });
        self.lock().enqueue_note(note);
        self.fifo_ready.notify_one();
    }

    /// Objects in the Indexer.
    pub fn len(&self) -> usize {
        self.lock().indexer().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    async fn process_loop(self) {
        let now = || self.clock.now();
        loop {
            let processed = self.lock().process_one(&now);
            let Some(processed) = processed else {
                self.fifo_ready.notified().await;
                continue;
            };
            for note in processed.notes {
                self.hub.publish(note);
            }
            for index in processed.woken {
                self.listener_ready[index].notify_one();
            }
            self.publish(processed.finished).await;
            // Let the listeners run between items, as goroutines would.
            tokio::task::yield_now().await;
        }
    }

    /// Listener `index`'s task: its buffer, its handler.
    async fn listener(self, index: usize) {
        let now = || self.clock.now();
        let delay = self
            .slow
            .and_then(|(slow, delay)| (slow == index).then_some(delay));
        loop {
            let run = match delay {
                None => self.lock().run_listener(index, &now),
                Some(delay) => {
                    let taken = self.lock().take(index, &now);
                    match taken {
                        Some(taken) => {
                            tokio::time::sleep(delay).await;
                            Some(self.lock().handle(taken, &now))
                        }
                        None => None,
                    }
                }
            };
            match run {
                Some(run) => {
                    if run.queued {
                        self.queue_ready.notify_one();
                    }
                    self.publish(run.finished).await;
                    tokio::task::yield_now().await;
                }
                None => self.listener_ready[index].notified().await,
            }
        }
    }

    async fn worker(self, worker: u32) {
        let now = || self.clock.now();
        loop {
            let done = self.lock().run_worker(worker, &now);
            match done {
                Some(finished) => {
                    self.publish(finished).await;
                    // Another worker may take the next key meanwhile.
                    self.queue_ready.notify_one();
                    tokio::task::yield_now().await;
                }
                None => self.queue_ready.notified().await,
            }
        }
    }

    /// Publishes finished events with the server-side stages known of them.
    async fn publish(&self, events: Vec<Finished>) {
        for mut finished in events {
            self.add_server_stages(&mut finished.event).await;
            self.hub.publish_finished(finished);
        }
    }

    /// Server-side stages of a change seen on the watch (a listed object is
    /// state, not a change, and has none).
    async fn add_server_stages(&self, event: &mut WatchEvent) {
        if let Some(server) = &self.server
            && !event.initial
            && !event.handled.resync
        {
            let client = crate::upstream::source::stages::client_name(&event.target.resource);
            let stages = match server.stream_path(&client, &event.resource_version) {
                Some((stages, path)) => {
                    event.server = Some(Box::new(path));
                    stages
                }
                None => server.stages_of(&event.resource_version).await,
            };
            for (stage, mark) in stages {
                event.stages.entry(stage).or_insert(mark);
            }
        }
    }

    /// Who answered the last LIST or WATCH of the Reflector of `target`,
    /// where the source tells.
    pub fn server_answer(
        &self,
        target: &str,
        list: bool,
    ) -> Option<watchlife_protocol::ServerAnswer> {
        let client = crate::upstream::source::stages::client_name(target);
        self.server.as_ref()?.answer(&client, list)
    }

    fn lock(&self) -> MutexGuard<'_, Informer> {
        self.informer.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use watchlife_informer::informer::{CONTROLLER, SCHEDULER_SCHEDULED};
    use watchlife_protocol::{EventType, ObjectRef, ServerFrame, Stage, StageMark, StageTimes};

    /// Long enough that the rest of the informer visibly goes on meanwhile.
    const DELAY: Duration = Duration::from_millis(50);

    #[tokio::test]
    async fn a_slow_listener_waits_between_its_dequeue_and_its_return_and_holds_up_no_other() {
        let hub = Hub::new("test");
        let mut live = hub.attach(None, crate::downstream::hub::Bodies::Light).live;
        let clock = Clock::system();
        let slow = SlowListener {
            listener: SCHEDULER_SCHEDULED.into(),
            delay: DELAY,
        };
        let pipeline = Pipeline::start_with_slow_listener(
            hub,
            clock.clone(),
            None,
            Options::pods(),
            1,
            Some(slow),
        );
        let object = Object::from(json!({
            "kind": "Pod",
            "metadata": {"namespace": "default", "name": "p", "resourceVersion": "7"},
            "spec": {"nodeName": "node-a"}
        }));
        let event = WatchEvent {
            event_type: EventType::Added,
            target: ObjectRef {
                resource: "pods".into(),
                kind: "Pod".into(),
                namespace: Some("default".into()),
                name: "p".into(),
            },
            resource_version: "7".into(),
            object: object.json().clone(),
            stages: StageTimes::from([(Stage::Reflector, StageMark::at(clock.now()))]),
            initial: false,
            coalesced: false,
            handled: Default::default(),
            patch: None,
            server: None,
        };
        pipeline.deliver(event, object);
        let frame: ServerFrame = serde_json::from_str(&live.recv().await.unwrap().text).unwrap();
        let FrameBody::Event(e) = frame.body else {
            panic!("an event frame");
        };
        let call = |name: &str| e.handled.calls.iter().find(|c| c.listener == name).unwrap();
        let slow = call(SCHEDULER_SCHEDULED);
        assert!(slow.returned - slow.dequeued >= DELAY.as_micros() as u64);
        let reconcile = e.handled.reconcile.as_ref().unwrap();
        assert!(call(CONTROLLER).returned < slow.returned);
        assert!(reconcile.finished < slow.returned);
    }
}
