//! The edge between the informer and the wire: the informer
//! ([`watchlife_informer`]) knows nothing of the protocol, and keeps its
//! own records (a [`Traced`](watchlife_informer::trace::Traced) event, a
//! [`ReflectorState`](watchlife_informer::reflector::ReflectorState));
//! here they become the protocol's [`WatchEvent`](watchlife_protocol::WatchEvent)s
//! and frames, for every place that shows them: the bridge, the page's
//! in-page informer, the benches.
//!
//! - [`convert`]: each record's protocol twin.
//! - [`informer`]: the informer with protocol events in and out.

pub mod convert;
pub mod informer;

pub use informer::{Finished, Informer, ListenerRun, Processed};
