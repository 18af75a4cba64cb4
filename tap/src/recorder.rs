//! The tap's handle: numbers what it records and hands it to the sending
//! task without ever waiting.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::mpsc;
use watchlife_protocol::tap::{Reason, TapFrame, TapObjectRef};

use crate::config::{TapConfig, TapError};
use crate::counters::Counters;
use crate::names::now_us;
use crate::sender;

/// Objects whose last watcher event the tap remembers (for
/// `since_watcher_event_us`): beyond it new objects go unmeasured (`None`)
/// rather than grow the controller's memory.
const REMEMBERED_OBJECTS: usize = 100_000;

/// A tap: cheap to clone, shared by the watcher streams, the layer and the
/// reconciler wrappers of one controller.
#[derive(Clone)]
pub struct Tap {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    tx: mpsc::Sender<TapFrame>,
    pub(crate) counters: Arc<Counters>,
    reconciles: AtomicU64,
    /// When the tap last saw a watcher event of each object.
    last_event: Mutex<HashMap<TapObjectRef, Instant>>,
    /// The reason of each open `reconciling object` span, by span id.
    pub(crate) reasons: Mutex<HashMap<tracing::span::Id, Reason>>,
    /// The failed reconcile of each object, for its error policy's frame
    /// (the runner never reconciles one object twice at once).
    pub(crate) failed: Mutex<HashMap<TapObjectRef, u64>>,
}

impl Tap {
    /// Makes a tap and starts its sending task (inside a Tokio runtime). It
    /// connects in the background: watchlife need not be up yet.
    pub fn connect(config: TapConfig) -> Result<Tap, TapError> {
        let endpoint = config.endpoint()?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| TapError::NoRuntime)?;
        let (tx, rx) = mpsc::channel(config.buffer.max(1));
        let counters = Arc::new(Counters::default());
        runtime.spawn(sender::run(
            sender::Peer {
                endpoint,
                token: config.token,
                controller: config.controller,
            },
            rx,
            counters.clone(),
        ));
        Ok(Tap {
            inner: Arc::new(Inner {
                tx,
                counters,
                reconciles: AtomicU64::new(0),
                last_event: Mutex::default(),
                reasons: Mutex::default(),
                failed: Mutex::default(),
            }),
        })
    }

    /// Frames dropped since the tap started: the buffer was full (watchlife
    /// away or slow) or a connection broke while sending.
    pub fn dropped(&self) -> u64 {
        self.inner.counters.dropped.load(Ordering::Relaxed)
    }

    /// Frames recorded since the tap started (sent, buffered or dropped).
    pub fn recorded(&self) -> u64 {
        self.inner.counters.recorded.load(Ordering::Relaxed)
    }

    /// Numbers a frame built by `frame(seq, at_us)` and buffers it, or
    /// counts it dropped; never waits.
    pub(crate) fn record(&self, frame: impl FnOnce(u64, u64) -> TapFrame) {
        let counters = &self.inner.counters;
        let seq = counters.next_seq();
        counters.recorded.fetch_add(1, Ordering::Relaxed);
        if self.inner.tx.try_send(frame(seq, now_us())).is_err() {
            counters.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The next reconcile's number (from 1).
    pub(crate) fn next_reconcile(&self) -> u64 {
        self.inner.reconciles.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Notes a watcher event of `object` now; forgets it on a delete.
    pub(crate) fn saw_event(&self, object: &TapObjectRef, deleted: bool) {
        let Ok(mut last) = self.inner.last_event.lock() else {
            return;
        };
        if deleted {
            last.remove(object);
        } else if last.len() < REMEMBERED_OBJECTS || last.contains_key(object) {
            last.insert(object.clone(), Instant::now());
        }
    }

    /// Microseconds since the last watcher event of `object`, if one was seen.
    pub(crate) fn since_event(&self, object: &TapObjectRef) -> Option<u64> {
        let last = self.inner.last_event.lock().ok()?;
        last.get(object)
            .map(|at| u64::try_from(at.elapsed().as_micros()).unwrap_or(u64::MAX))
    }

    /// The reason of the `reconciling object` span now entered, if the
    /// layer saw it.
    pub(crate) fn current_reason(&self) -> Option<Reason> {
        let id = tracing::Span::current().id()?;
        self.inner.reasons.lock().ok()?.get(&id).cloned()
    }
}
