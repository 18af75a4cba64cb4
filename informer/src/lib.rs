//! The informer, written out and instrumented: client-go's Reflector,
//! sharedIndexInformer, processorListeners and workqueue. No IO.
//!
//! # Layout
//! - [`reflector`]: ListAndWatch as a state machine, with each release's rules;
//!   [`list_watch`]: the one driver that performs its requests, over a small
//!   list-watch trait each place adapts.
//! - [`fifo`]: the queue between the Reflector and the processing loop;
//!   [`drained`]: queues that give their memory back once drained.
//! - [`object`]: an object as its shared JSON text, with the fields the
//!   stages read parsed beside it.
//! - [`profile`]: which Kubernetes release (and feature gates) to behave as.
//! - [`indexer`]: the store: state as the accumulation of events, with indexes.
//! - [`shared_informer`]: HandleDeltas, and one buffer per listener.
//! - [`handlers`]: event handlers, with a filtering one like the scheduler's.
//! - [`workqueue`] and [`rate_limiter`]: the controller's queue of keys.
//! - [`informer`]: the instrumented informer viewers see: every stage of
//!   every event stamped with the time it got there, as a [`trace`].
//!
//! Nothing here does IO or reads a clock of its own: the caller passes the
//! time, and decides which task drives which stage.

pub mod drained;
pub mod fifo;
pub mod handlers;
pub mod indexer;
pub mod informer;
pub mod list_watch;
pub mod object;
pub mod profile;
pub mod rate_limiter;
pub mod reflector;
pub mod shared_informer;
pub mod trace;
pub mod workqueue;

pub use informer::Informer;
pub use object::{Meta, Object, ObjectJson};
pub use profile::{Gate, Profile, Release};
pub use watchlife_watch::{EventType, Micros};
