//! The edge between the informer and the wire: the informer
//! ([`watchlife_informer`]) knows nothing of the protocol, and keeps its
//! own records (a [`Traced`](watchlife_informer::trace::Traced) event, its
//! handler calls and reconciles); here they become the protocol's
//! [`WatchEvent`](watchlife_protocol::WatchEvent)s and frames, for every
//! place that shows them: the bridge, the page's in-page informer, the
//! benches. The words both sides share (an event's type, a Reflector's
//! states) come from the `watch` crate and pass through as they are.
//!
//! - [`convert`]: each record as its frame.
//! - [`informer`]: the informer with protocol events in and out.

pub mod convert;
pub mod informer;

pub use informer::{Finished, Informer, ListenerRun, Processed};
