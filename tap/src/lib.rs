//! `watchlife-tap`: see your own kube-rs controller live in watchlife.
//!
//! Added to a controller in a few lines, it records, per object, what
//! kube-runtime lets a library observe, and sends it to a running watchlife
//! over a WebSocket (`ws://HOST/tap`, the wire of
//! [`watchlife_protocol::tap`]):
//!
//! - the watcher's events (`Init`, `InitApply`, `InitDone`, `Apply`,
//!   `Delete`) with the object's reference and resourceVersion, and errors:
//!   [`WatchTapExt::tap`] before `reflector`, [`WatchTapExt::tap_applied`]
//!   after it (then the event was applied to the store);
//! - kube-client's HTTP requests (LIST, WATCH, streaming list, with the
//!   query asked and the status answered), from its `HTTP` tracing spans:
//!   [`Tap::layer`];
//! - each reconcile: its reason (`ReconcileReason`, read from
//!   kube-runtime's `reconciling object` span by the same layer), start, end
//!   and result (`Action` or error), and the error policy's answer:
//!   [`Tap::reconciler`], [`Tap::error_policy`].
//!
//! ```ignore
//! let tap = Tap::connect(TapConfig::new("http://127.0.0.1:8080", "my-controller"))?;
//! tracing_subscriber::registry().with(tap.layer()).with(fmt::layer()).init();
//! let (reader, writer) = reflector::store();
//! let deployments = reflector(writer, watcher(api, wc).tap(&tap)).applied_objects();
//! Controller::for_stream(deployments, reader)
//!     .run(tap.reconciler(reconcile), tap.error_policy(error_policy), ctx)
//! ```
//!
//! # What it never does
//! It never blocks, slows or fails the controller: every record is a
//! `try_send` into a bounded buffer ([`BUFFER_FRAMES`]); when watchlife is
//! away, slow or refusing, frames are dropped and counted ([`Tap::dropped`],
//! and in the periodic `stats` frame), and a background task reconnects with
//! capped exponential backoff. Nothing in it panics on a closed or slow peer.
//!
//! # What it cannot see
//! kube-runtime 5 has no hook between the store and the reconcile: the
//! trigger, the scheduler's debounce and delay, and the runner's wait while
//! the same object is being reconciled are seen only summed, as the time
//! from the object's last watcher event to the reconcile's start
//! (`since_watcher_event_us`). The watcher's backoff waits are not seen
//! either. The wire says so (`None`, and `Hello::unobserved`).
//!
//! The reason needs the tap's layer in the process's tracing subscriber,
//! with kube-runtime's `reconciling object` (INFO) span and kube-client's
//! `HTTP` (DEBUG) spans not disabled by a *global* filter: the layer filters
//! for itself, so put other filters on their own layers
//! (`fmt::layer().with_filter(..)`).
//!
//! # Supported kube-rs
//! kube / kube-runtime 5.x (it reads 5.x's span names and `Display` texts);
//! tested with 5.0.0.

mod config;
mod counters;
mod layer;
mod names;
mod reconcile;
mod recorder;
mod sender;
mod watch;

pub use config::{BUFFER_FRAMES, TapConfig, TapError};
pub use layer::TapLayer;
pub use recorder::Tap;
pub use watch::WatchTapExt;
pub use watchlife_protocol::tap as wire;

/// The kube-rs release line this tap reads (span names, reason texts).
pub const KUBE_RUNTIME_SUPPORTED: &str = "5.x";
