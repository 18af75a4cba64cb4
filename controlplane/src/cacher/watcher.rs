//! One watch of a Cacher: the apiserver's `cacheWatcher`, its buffer and its
//! bookmark schedule. Its writer is whoever holds the receiving end: the
//! demo API's HTTP stream, or an in-process client.

use crate::resource::{self, ResourceType};
use crate::store::Revision;
use crate::watch_cache::{Delivery, WatchFilter};
use tokio::sync::mpsc;
use watchlife_protocol::Micros;

/// A watcher's channel size when the cache can narrow the events it is sent
/// (`chanSize := 10`, `cacher.go` Watch).
pub const CHAN_SIZE: usize = 10;

/// The channel size of a watcher of a type with an indexed trigger (pods by
/// node, nodes, secrets and configmaps by name) whose selector does not pin
/// the trigger's field: it is sent every event of the type, so the
/// apiserver gives it `chanSize = 1000`.
pub const CHAN_SIZE_UNINDEXED: usize = 1000;

/// How often the apiserver sends each watcher a bookmark: about once a
/// minute (`defaultBookmarkFrequency`, `cacher.go`), and 2 s before the
/// watch's deadline.
pub const APISERVER_BOOKMARK_FREQUENCY: Micros = 60_000_000;

/// How often the demo sends them: every 5 s, so an audience sees them
/// without waiting a minute. Still well within any watch's timeout (the
/// shortest a client-go Reflector asks is 5 minutes).
pub const DEMO_BOOKMARK_FREQUENCY: Micros = 5_000_000;

/// How long before a watch's deadline its last bookmark is due
/// (`nextBookmarkTime`: "2s before the deadline").
pub const BOOKMARK_BEFORE_DEADLINE: Micros = 2_000_000;

/// Identifies one watcher of one cache, for as long as the process runs.
pub type WatcherId = u64;

/// What a client asks of a watch.
#[derive(Debug, Clone, Default)]
pub struct WatchOptions {
    /// Who watches (`scheduler`, `kubelet/node-a`, `bridge`); shown on its
    /// lane.
    pub name: String,
    /// The resourceVersion to watch after; `None` or 0 is "any".
    pub from: Option<Revision>,
    pub filter: WatchFilter,
    /// `allowWatchBookmarks`.
    pub bookmarks: bool,
    /// When the server ends the watch (`timeoutSeconds` from its start);
    /// `None` for a watch without a deadline.
    pub deadline: Option<Micros>,
    /// A buffer size other than the apiserver's, for a watcher made slow on
    /// purpose.
    pub buffer: Option<usize>,
}

impl WatchOptions {
    /// A watch named `name` of every object from `from`.
    pub fn named(name: impl Into<String>, from: Option<Revision>) -> Self {
        WatchOptions {
            name: name.into(),
            from,
            ..WatchOptions::default()
        }
    }
}

/// The live-event buffer of a watcher of `rt` with `filter`, as the
/// apiserver sizes it: a `cacheWatcher` has an `input` channel and a
/// `result` channel of `chanSize` each, with a goroutine between them; the
/// demo keeps one buffer holding both.
pub fn buffer_size(rt: ResourceType, filter: &WatchFilter) -> usize {
    let trigger = match rt {
        resource::PODS => Some("spec.nodeName"),
        resource::NODES | resource::SECRETS | resource::CONFIGMAPS => Some("metadata.name"),
        _ => None,
    };
    let pinned = |field: &str| {
        filter
            .fields
            .requirements
            .iter()
            .any(|r| r.field == field && r.op == crate::selector::FieldOp::Equals)
    };
    let chan_size = match trigger {
        Some(field) if !pinned(field) => CHAN_SIZE_UNINDEXED,
        _ => CHAN_SIZE,
    };
    2 * chan_size
}

/// When a watcher's next bookmark is due after `now`, as
/// `nextBookmarkTime`: `frequency` from now, or 2 s before the deadline if
/// that comes first; none once that moment has passed.
pub fn next_bookmark(now: Micros, deadline: Option<Micros>, frequency: Micros) -> Option<Micros> {
    let heartbeat = now.saturating_add(frequency);
    let due = match deadline {
        None => heartbeat,
        Some(deadline) => heartbeat.min(deadline.saturating_sub(BOOKMARK_BEFORE_DEADLINE)),
    };
    (due >= now).then_some(due)
}

/// An attached watcher.
pub(crate) struct Watcher {
    pub id: WatcherId,
    pub name: String,
    pub tx: mpsc::Sender<Delivery>,
    pub filter: WatchFilter,
    /// Events at or below this revision are not sent: it had them replayed,
    /// or it asked for later ones.
    pub after: Revision,
    /// When its next bookmark is due; `None` when it asked for none.
    pub next_bookmark: Option<Micros>,
    pub deadline: Option<Micros>,
}

impl Watcher {
    /// Events waiting in its buffer.
    pub fn buffered(&self) -> usize {
        self.tx.max_capacity() - self.tx.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selector::FieldSelector;

    #[test]
    fn buffers_are_sized_as_the_apiserver_sizes_them() {
        let all = WatchFilter::default();
        assert_eq!(buffer_size(resource::PODS, &all), 2 * CHAN_SIZE_UNINDEXED);
        assert_eq!(buffer_size(resource::DEPLOYMENTS, &all), 2 * CHAN_SIZE);
        let on_node = WatchFilter {
            fields: FieldSelector::parse("spec.nodeName=node-a", resource::PODS).unwrap(),
            ..WatchFilter::default()
        };
        assert_eq!(buffer_size(resource::PODS, &on_node), 2 * CHAN_SIZE);
    }

    #[test]
    fn bookmarks_come_every_period_and_just_before_the_deadline() {
        let m = 60_000_000;
        assert_eq!(next_bookmark(0, None, m), Some(m));
        assert_eq!(next_bookmark(0, Some(5 * m), m), Some(m));
        assert_eq!(next_bookmark(0, Some(30_000_000), m), Some(28_000_000));
        assert_eq!(next_bookmark(29_000_000, Some(30_000_000), m), None);
    }
}
