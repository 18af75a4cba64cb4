//! Runs the informer stages of one resource as real tasks.
//!
//! The Reflector hands events to [`Pipeline::deliver`]; a processing task pops
//! the FIFO into the Indexer, the handlers and the workqueue; a worker task
//! reconciles keys and publishes each finished event, with every stage's time,
//! to the hub. The stages run in separate tasks as client-go runs them in
//! separate goroutines, so the times between them are real queueing.

use crate::hub::Hub;
use crate::reflector::ServerStages;
use serde_json::Value;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;
use watchlife_controlplane::Clock;
use watchlife_informer::Informer;
use watchlife_protocol::{FrameBody, WatchEvent};

/// The informer of one resource and the tasks that drive it.
#[derive(Clone)]
pub struct Pipeline {
    informer: Arc<Mutex<Informer>>,
    fifo_ready: Arc<Notify>,
    queue_ready: Arc<Notify>,
    clock: Clock,
    server: Option<Arc<dyn ServerStages>>,
}

impl Pipeline {
    /// Starts the processing task and one worker, publishing to `hub` each
    /// finished event with the server-side stage times `server` knows of it.
    pub fn start(hub: Hub, clock: Clock, server: Option<Arc<dyn ServerStages>>) -> Pipeline {
        let pipeline = Pipeline {
            informer: Arc::new(Mutex::new(Informer::new())),
            fifo_ready: Arc::new(Notify::new()),
            queue_ready: Arc::new(Notify::new()),
            clock,
            server,
        };
        tokio::spawn(pipeline.clone().process_loop());
        tokio::spawn(pipeline.clone().worker(hub));
        pipeline
    }

    /// The Reflector delivers one watch event.
    pub fn deliver(&self, event: WatchEvent, object: Arc<Value>) {
        let now = self.clock.now();
        self.lock().enqueue(event, object, now);
        self.fifo_ready.notify_one();
    }

    /// The Reflector delivers a whole LIST (applied to the Indexer at once).
    pub fn deliver_list(&self, items: Vec<(WatchEvent, Arc<Value>)>) {
        let now = self.clock.now();
        self.lock().enqueue_list(items, now);
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
        loop {
            let processed = {
                let now = self.clock.now();
                self.lock().process_one(now)
            };
            if processed {
                self.queue_ready.notify_one();
                // Let the worker run between items, as separate goroutines would.
                tokio::task::yield_now().await;
            } else {
                self.fifo_ready.notified().await;
            }
        }
    }

    async fn worker(self, hub: Hub) {
        loop {
            let done = {
                let now = self.clock.now();
                self.lock().reconcile_one(now)
            };
            match done {
                Some(reconciled) => {
                    for mut event in reconciled.events {
                        self.add_server_stages(&mut event).await;
                        hub.publish(FrameBody::Event(event));
                    }
                }
                None => self.queue_ready.notified().await,
            }
        }
    }

    /// Server-side stages of a change seen on the watch (a listed object is
    /// state, not a change, and has none).
    async fn add_server_stages(&self, event: &mut WatchEvent) {
        if let Some(server) = &self.server
            && !event.initial
        {
            for (stage, mark) in server.stages_of(&event.resource_version).await {
                event.stages.entry(stage).or_insert(mark);
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Informer> {
        self.informer.lock().unwrap_or_else(|p| p.into_inner())
    }
}
