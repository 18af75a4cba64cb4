//! The informer's stages after the Reflector, each instrumented with a
//! timestamp per event and its queue depth.
//!
//! # Layout
//! - [`fifo`]: the queue between the Reflector and the processing loop (RealFIFO).
//! - [`indexer`]: the informer's store: state as the accumulation of events.
//! - [`handlers`]: registered event handlers (OnAdd / OnUpdate / OnDelete), with
//!   a filtering handler like the scheduler's.
//! - [`workqueue`]: the controller's queue of keys, coalescing a key already queued.
//! - [`informer`]: the stages wired together, stamping each event as it passes.
//!
//! Nothing here does IO or reads a clock of its own: the caller passes the
//! time, and decides which task drives which stage.

pub mod fifo;
pub mod handlers;
pub mod indexer;
pub mod informer;
pub mod reflector;
pub mod workqueue;

pub use informer::{Informer, Reconciled};

/// Microseconds since the Unix epoch (the protocol's unit).
pub use watchlife_protocol::Micros;
