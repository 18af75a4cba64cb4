//! What a source can tell of the server side of an event: the stage times
//! of a change (the demo knows them; a cluster, through its etcd), and the
//! hops and answers of each client's requests, where the server records
//! them per client.

use futures_util::future::BoxFuture;
use watchlife_protocol::{ServerAnswer, ServerPath, StageTimes};

/// The name under which the Reflector of `target` makes its requests, and
/// under which a server that records streams per client knows them.
pub fn client_name(target: &str) -> String {
    format!("watchlife/{target}")
}

/// Server-side stage times of a change, found by its resourceVersion: the
/// demo control plane knows them exactly; a real cluster, only through its
/// etcd. A source that cannot tell returns nothing, and those stages are
/// drawn as not observed. Looked up as each event leaves the informer
/// ([`crate::upstream::pipeline::Pipeline`]), by when the source has long heard of it.
pub trait ServerStages: Send + Sync {
    /// Stage marks of the change at `resource_version`, if known. May wait
    /// a little for a source whose report of the change is on its way.
    fn stages_of<'a>(&'a self, resource_version: &'a str) -> BoxFuture<'a, StageTimes>;

    /// The stage marks and every server-side hop of the event at
    /// `resource_version` as the watch stream of `client` carried it
    /// ([`client_name`]), where the server records each stream
    /// (the demo does). A replayed event gets its own stream's times, a
    /// synthetic ADDED no commit time.
    fn stream_path(
        &self,
        _client: &str,
        _resource_version: &str,
    ) -> Option<(StageTimes, ServerPath)> {
        None
    }

    /// Who answered the last LIST (`list`) or WATCH of `client`, where the
    /// server tells.
    fn answer(&self, _client: &str, _list: bool) -> Option<ServerAnswer> {
        None
    }
}
