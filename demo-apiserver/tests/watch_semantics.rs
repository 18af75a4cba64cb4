//! The watch-semantics suite against the demo API, in process.
//!
//! The same checks (`watchlife_testkit::suite`) run against a real
//! kube-apiserver in `tests/tests/real_cluster_semantics.rs`.

mod support;

use watchlife_controlplane::cacher::watcher::DEMO_BOOKMARK_FREQUENCY;
use watchlife_testkit::client::Client;
use watchlife_testkit::suite::{Cluster, Compact};

impl Compact for support::Server {
    /// The demo keeps no watch history beside its store: compacting the
    /// store is all.
    async fn compact(&mut self) {
        self.cp.compact();
    }
}

async fn demo() -> (support::Server, Cluster) {
    let server = support::start().await;
    let cluster = Cluster {
        client: Client::new(&server.base, None),
        namespace: "default".into(),
        // One bookmark period and a margin; the watch ends at this timeout
        // only if no bookmark came.
        bookmark_within_seconds: DEMO_BOOKMARK_FREQUENCY / 1_000_000 * 3,
    };
    (server, cluster)
}

watchlife_testkit::watch_semantics_tests!(demo());
