//! The demo's bounds: how much any client (kubectl, a demo action, the
//! story, the controllers) may ask of the control plane, so that its memory
//! stays within a budget whatever it is asked.
//!
//! Each is a limit a real cluster has, sized for the demo's two nodes. A
//! request over one is refused as the apiserver refuses it, with a message
//! that names the limit:
//!
//! - 422 `Invalid` for a value validation rejects: replicas, label syntax and
//!   sizes, annotations ([`crate::validation`]), an object's size;
//! - 403 `Forbidden` for a quota: namespaces, objects per namespace, objects
//!   and pods in all, the store's size (as a `ResourceQuota` or etcd's
//!   `--quota-backend-bytes` would refuse them).
//!
//! The history of changes and the watch caches' windows are not refused
//! anything: beyond their size they drop their oldest entries, as etcd's
//! revision-based compaction and the apiserver's watch cache do.
//!
//! Sizes in memory are weights ([`crate::object::weight`]): what an object
//! takes parsed, several times its JSON (ten times for a small pod).

/// The demo's nodes, each with its kubelet: the size of the cluster the
/// bounds below are sized for.
pub const DEMO_NODES: [&str; 2] = ["node-a", "node-b"];

/// Pods a node runs at most: the kubelet's default `--max-pods`, which the
/// demo's nodes report as their `allocatable.pods` and the scheduler honours.
pub const NODE_MAX_PODS: u64 = 110;

/// Most replicas a Deployment or ReplicaSet may ask for: every pod of the
/// demo's cluster (its two nodes, full). A real cluster takes any `int32`
/// and leaves the pods it cannot place Pending; the demo would have to hold
/// them all.
pub const MAX_REPLICAS: u64 = DEMO_NODES.len() as u64 * NODE_MAX_PODS;

/// Pods in the whole cluster: the demo's `count/pods` quota. Room for two
/// Deployments at [`MAX_REPLICAS`], one of them rolling out (a quarter more
/// pods meanwhile, the default surge); far more than the page can show.
pub const MAX_PODS: usize = 500;

/// Namespaces in the cluster (a real cluster is tested up to 10,000).
pub const MAX_NAMESPACES: usize = 100;

/// Objects of every kind in one namespace, the demo's `count/*` quota; the
/// Kubernetes scalability thresholds allow 3,000 pods in a namespace.
pub const MAX_OBJECTS_PER_NAMESPACE: usize = 1_000;

/// Objects of every kind in the cluster. A watch from "now" starts with one
/// event per object, so this also bounds what each watch holds at first.
pub const MAX_OBJECTS: usize = 5_000;

/// Largest object, as JSON: the limit Kubernetes puts on a ConfigMap's or a
/// Secret's data (1 MiB), below etcd's request limit (1.5 MiB).
pub const MAX_OBJECT_BYTES: usize = 1024 * 1024;

/// Heaviest object in memory. A 1 MiB ConfigMap weighs about 1 MiB; a
/// megabyte of JSON made of small maps would weigh a hundred times that.
pub const MAX_OBJECT_WEIGHT: usize = 4 * 1024 * 1024;

/// Largest total of an object's annotations, keys and values: the
/// apiserver's `TotalAnnotationSizeLimitB`.
pub const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;

/// The current objects together, in memory: the demo's
/// `--quota-backend-bytes` (etcd's default is 2 GiB, for a cluster's disk).
/// 32 MiB hold about 4,000 pods of the story's size, or thirty objects at
/// [`MAX_OBJECT_BYTES`].
pub const STORE_QUOTA_BYTES: usize = 32 * 1024 * 1024;

/// The history of changes, in memory (and at most
/// [`crate::store::HISTORY_LIMIT`] changes). Beyond it the oldest changes are
/// compacted away at each write, as etcd's revision-based auto-compaction
/// does.
pub const HISTORY_QUOTA_BYTES: usize = 32 * 1024 * 1024;

/// The window of one watch cache, in memory (each event also keeps its
/// encoded line once a watcher has been sent it). Beyond it the oldest events
/// leave the window, however young; a watch from before them gets 410 Gone.
pub const WATCH_CACHE_BYTES: usize = 8 * 1024 * 1024;

// Two Deployments at the most fit the pod quota, one rolling out with its
// surge; and the pod quota fits in one namespace.
const _: () = assert!(MAX_REPLICAS == 220);
const _: () = assert!(2 * MAX_REPLICAS + MAX_REPLICAS / 4 <= MAX_PODS as u64);
const _: () = assert!(MAX_PODS <= MAX_OBJECTS_PER_NAMESPACE);

/// The resident memory the whole `watchlife` process running the demo stays
/// under, whatever its clients do (kubectl, anything that reaches the demo
/// API or the bridge), viewers aside: each viewer adds about 140 KiB
/// (BENCHMARKS.md), and `--max-viewers` caps them. What may grow is bounded:
/// the store, its history and the watch caches' windows by the sizes above
/// (each object held a few times over: parsed, encoded, and again in the
/// bridge's own informer and snapshot); the requests in flight and the
/// connections by their caps (`watchlife-demo-apiserver`, `watchlife-serve`).
/// The security tests fill every one of them at once and measure the peak
/// (about 410 MiB).
pub const MEMORY_BUDGET_BYTES: usize = 768 * 1024 * 1024;

/// The bounds one control plane enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_replicas: u64,
    pub max_pods: usize,
    pub max_namespaces: usize,
    pub max_objects_per_namespace: usize,
    pub max_objects: usize,
    pub max_object_bytes: usize,
    pub max_object_weight: usize,
    pub max_annotations_bytes: usize,
    pub store_quota_bytes: usize,
    pub history_quota_bytes: usize,
    pub watch_cache_bytes: usize,
}

impl Limits {
    /// The demo's bounds (the constants above).
    pub const DEMO: Limits = Limits {
        max_replicas: MAX_REPLICAS,
        max_pods: MAX_PODS,
        max_namespaces: MAX_NAMESPACES,
        max_objects_per_namespace: MAX_OBJECTS_PER_NAMESPACE,
        max_objects: MAX_OBJECTS,
        max_object_bytes: MAX_OBJECT_BYTES,
        max_object_weight: MAX_OBJECT_WEIGHT,
        max_annotations_bytes: MAX_ANNOTATIONS_BYTES,
        store_quota_bytes: STORE_QUOTA_BYTES,
        history_quota_bytes: HISTORY_QUOTA_BYTES,
        watch_cache_bytes: WATCH_CACHE_BYTES,
    };

    /// No quota and no size limit (validation of syntax still applies): for
    /// benchmarks that measure the core far beyond the demo's size. Never
    /// behind a server that strangers reach.
    pub const UNBOUNDED: Limits = Limits {
        max_replicas: i32::MAX as u64,
        max_pods: usize::MAX,
        max_namespaces: usize::MAX,
        max_objects_per_namespace: usize::MAX,
        max_objects: usize::MAX,
        max_object_bytes: usize::MAX,
        max_object_weight: usize::MAX,
        max_annotations_bytes: usize::MAX,
        store_quota_bytes: usize::MAX,
        history_quota_bytes: usize::MAX,
        watch_cache_bytes: usize::MAX,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEMO
    }
}

/// Bytes as a person reads them: `16 MiB`, `512 KiB`, `300 bytes`.
pub fn show_bytes(n: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * KIB;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= MIB {
        format!("{:.1} MiB", n as f64 / MIB as f64)
    } else if n >= KIB && n.is_multiple_of(KIB) {
        format!("{} KiB", n / KIB)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_as_a_person_reads_them() {
        assert_eq!(show_bytes(STORE_QUOTA_BYTES), "32 MiB");
        assert_eq!(show_bytes(MAX_ANNOTATIONS_BYTES), "256 KiB");
        assert_eq!(show_bytes(1_572_864), "1.5 MiB");
        assert_eq!(show_bytes(300), "300 bytes");
    }
}
