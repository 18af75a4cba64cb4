//! The watch-semantics suite (`watchlife_testkit::suite`, the same checks the
//! demo API passes) against a real kube-apiserver v1.20.2 and etcd, over TLS
//! trusting the cluster's CA. Each check gets a cluster of its own.

use watchlife_testkit::suite::{Cluster, Compact};
use watchlife_tests::real_cluster::RealCluster;

/// The bookmark check's watch timeout. v1.20 sends a watch a BOOKMARK about
/// a minute after it starts or 2 s before its timeout, whichever is sooner,
/// looking once a second: 10 s keeps the check short and leaves that
/// pre-timeout bookmark seconds to arrive in.
const BOOKMARK_WITHIN_SECONDS: u64 = 10;

/// A real cluster, as the suite's compaction check needs it.
struct Real(RealCluster);

impl Compact for Real {
    async fn compact(&mut self) {
        self.0.compact_etcd().await;
        // The watch cache would still serve older revisions from memory; a
        // new apiserver fills its cache from the current revision.
        self.0.restart_apiserver().await;
    }
}

async fn real() -> (Real, Cluster) {
    let cluster = RealCluster::start().await;
    let suite = Cluster {
        client: cluster.client(),
        namespace: "default".into(),
        bookmark_within_seconds: BOOKMARK_WITHIN_SECONDS,
    };
    (Real(cluster), suite)
}

watchlife_testkit::watch_semantics_tests!(real());
