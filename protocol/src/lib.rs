//! The wire protocol between the watchlife bridge and the browser app.
//!
//! # Layout
//! - [`frame`]: what the bridge sends: `{"seq","type","data"}` JSON frames;
//!   [`snapshot`]: every current object, grouped by resource on the wire.
//! - [`connection`]: the `/ws` query, and several frames to a message;
//!   [`deflated`]: how a compressed connection's messages are framed.
//! - [`client`]: what a viewer sends back (subscribe, demo actions).
//! - [`watchlife_watch`]'s words, carried as they are: a watch event's
//!   type, a Reflector's states, who answered its requests.
//! - [`event`]: a Kubernetes watch event as relayed, with the measured [`stage`] times,
//!   written lean ([`lean_stages`]).
//! - [`object`]: an object as the text of its JSON, shared, never re-encoded;
//!   [`summary`]: the few columns a light snapshot shows of it.
//! - [`reflector`]: the Reflector's own life (LIST, WATCH, BOOKMARK, 410, RELIST, backoff).
//! - [`recording`]: a frame stream saved as JSON Lines, to replay with no bridge;
//!   [`v1`]: protocol-1 frames, as older recordings hold them.
//! - [`stage`]: the stages of an event's life, from etcd to reconcile;
//!   [`server_path`]: the demo apiserver's hops of one event.
//! - [`watch_cache`]: the demo's watch caches — their rings and their fan-out.
//!
//! Every type here is plain data with serde derives: no IO, so the crate builds for
//! the host and for `wasm32-unknown-unknown` alike. `docs/protocol.md` shows an
//! example of every frame.

pub mod client;
pub mod connection;
pub mod deflated;
pub mod event;
pub mod frame;
pub mod lean_stages;
pub mod object;
pub mod patch;
pub mod recording;
pub mod reflector;
pub mod server_path;
pub mod snapshot;
pub mod stage;
pub mod summary;
pub mod tap;
pub mod v1;
pub mod watch_cache;

pub use client::{ClientMessage, DemoAction, Filter};
pub use connection::StreamQuery;
pub use event::{Callback, EventType, Handled, HandlerCall, ObjectRef, ReconcileRun, WatchEvent};
pub use frame::{
    ActionResult, ErrorCode, ErrorFrame, FrameBody, Heartbeat, Hello, Resync, ServerFrame,
    Snapshot, SnapshotObject, Source,
};
pub use object::ObjectJson;
pub use recording::{
    LineProblem, RECORDING_FORMAT, RecordedFrame, Recording, RecordingHeader, parse_recording,
};
pub use reflector::{ReflectorState, ReflectorUpdate};
pub use server_path::{Origin, ServerPath};
pub use stage::{Stage, StageMark, StageTimes};
pub use watch_cache::{CacheState, ClosedWatcherState, WatchCacheReport, WatcherState};
pub use watchlife_watch::{Micros, ServerAnswer};

/// Version of this protocol. A viewer refuses a `hello` with a larger major
/// version. 2: payloads nested under `data`, objects' references under
/// `target`, light snapshots; protocol 1 is read by [`v1`]. 3: an event's
/// stage times as one time and offsets ([`lean_stages`]); protocol 2's
/// events read as they are.
pub const PROTOCOL_VERSION: u32 = 3;

/// How often a Reflector reports the progress of a long LIST: often enough
/// that a 150,000-object LIST visibly moves, rarely enough to cost nothing.
pub const LIST_PROGRESS_EVERY_MS: u64 = 500;
