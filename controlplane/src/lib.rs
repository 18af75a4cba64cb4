//! The embedded demo control plane's core: a small Kubernetes with no network IO.
//!
//! # Layout
//! - [`store`]: an MVCC store modelled on etcd (one revision counter, history, compaction).
//! - [`cacher`]: the apiserver's Cacher of one type as stages with queues
//!   (its Reflector on the store's watch, `incoming`, the dispatcher, each
//!   watcher's buffer); [`watch_cache`], its window and snapshot;
//!   [`watch_cache_report`], its state as viewers see it.
//! - [`control_plane`]: the store and the Cachers behind one lock, with the
//!   apiserver's object rules; its stages run inline or as tasks.
//! - [`controllers`]: informers, workqueues and the demo's controllers (deployment,
//!   replicaset, scheduler, kubelet, garbage collector), run by [`controllers::Demo`].
//! - [`list`]: where a LIST is served from and how it is paged; [`selector`]:
//!   label and field selectors; [`api_error`]: why a request failed, and
//!   [`status`], each failure as a Kubernetes `Status`.
//! - [`limits`]: the demo's bounds (replicas, quotas, sizes), so that its
//!   memory stays within a budget whatever clients ask; [`validation`]: label,
//!   annotation and replica rules, as the apiserver checks them.
//! - [`story`]: the scripted workload that keeps the demo alive.
//! - [`ledger`]: when each recent change was committed, reflected, cached and
//!   dispatched.
//! - [`actions`]: what a user does with kubectl (scale, label, set image, delete a pod),
//!   each a read-modify-write ([`update`]);
//!   [`demo_action`], the viewers' demo actions carried out through them.
//! - [`resource`], [`object`], [`clock`], [`time`]: the served types and small helpers.
//!
//! Nothing here opens a socket or reads the OS clock directly, so the same core
//! runs behind the bridge's HTTP adapter and inside a browser page.

pub mod actions;
pub mod api_error;
pub mod cacher;
pub mod clock;
pub mod control_plane;
pub mod controllers;
pub mod demo_action;
pub mod ledger;
pub mod limits;
pub mod list;
pub mod list_cache;
pub mod object;
pub mod resource;
pub mod selector;
pub mod status;
pub mod store;
pub mod story;
pub mod time;
pub mod update;
pub mod validation;
pub mod watch_cache;
pub mod watch_cache_report;

pub use api_error::ApiError;
pub use cacher::watcher::WatchOptions;
pub use clock::Clock;
pub use control_plane::ControlPlane;
pub use resource::ResourceType;
pub use store::Revision;
pub use watch_cache::{CachedEvent, Delivery, Origin, WatchFilter};
/// The Kubernetes release and feature gates the server behaves as.
pub use watchlife_informer::profile::{Gate, Profile, Release};
