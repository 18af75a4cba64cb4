//! From the source to the hub.
//!
//! - [`source`]: a real cluster (kube config) or the embedded demo control
//!   plane, and what it can tell of the server-side stages
//!   ([`source::stages`]).
//! - [`connections`]: the kube client they share, renewed with new
//!   connections once one is taken for dead.
//! - [`target`]: the resources to watch, resolved through discovery.
//! - [`watches`]: starts a Reflector and an informer pipeline per resource.
//! - [`reflector`]: the bridge's adapter of the informer crate's one
//!   list-watch driver, over the kube client.
//! - [`pipeline`]: the informer stages (FIFO → Indexer → handlers →
//!   workqueue → reconcile) as tasks, publishing each finished event.
//! - [`etcd`]: a real cluster's etcd stage, by watching etcd directly.
//! - [`error_chain`]: an error told with its causes, as the Reflector and
//!   etcd's watch log and report it.
//! - [`redact`]: what never leaves the bridge (Secret values, managed fields).
//! - [`fanout`]: the demo watch cache's own fan-out, reported to viewers.
//! - [`runtime`]: the threads all of this runs on, apart from the viewers'.

pub mod connections;
pub mod error_chain;
pub mod etcd;
pub mod fanout;
pub mod pipeline;
pub mod redact;
pub mod reflector;
pub mod runtime;
pub mod source;
pub mod target;
pub mod watches;
