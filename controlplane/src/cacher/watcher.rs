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
    /// `sendInitialEvents` (a v1.36 WatchList): `Some(true)` starts with a
    /// synthetic ADDED event per current object whatever `from` is (the
    /// caller has waited for the cache to be fresh enough); `Some(false)`
    /// starts with none, from `from` or, when that is "any", from the
    /// cache's revision (`getAllEventsSinceLocked`, v0.36.4). `None`: the
    /// legacy rules of `from`.
    pub initial_events: Option<bool>,
    /// Ends the initial events with a BOOKMARK annotated
    /// `k8s.io/initial-events-end` (`setInitialEventsEndBookmarkIfRequested`,
    /// v0.36.4 `cacher.go`): a WatchList that allowed bookmarks.
    pub initial_events_end: bool,
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

/// Why a live event could not go into a watcher's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// No room for live events now: the dispatcher may wait for it.
    Full,
    /// The client stopped watching.
    Closed,
}

/// An attached watcher.
///
/// Its channel holds the watch's initial events (replayed or synthetic)
/// *and* its live ones, but the two are counted apart, as a `cacheWatcher`
/// keeps them apart: the initial events are written first, outside the
/// buffer (`process` / `processInterval` sends them before it reads
/// `input`), and live events get [`Watcher::buffer`] slots of their own.
/// While initial events are still waiting, live events have only half of
/// it: the `input` channel, the `result` channel being busy with the
/// initial events (`cache_watcher.go` in v1.20.2's `cacher.go`).
pub(crate) struct Watcher {
    pub id: WatcherId,
    pub name: String,
    pub tx: mpsc::Sender<Delivery>,
    pub filter: WatchFilter,
    /// Events at or below this revision are not sent: it had them replayed,
    /// or it asked for later ones. A bookmark is sent only above it.
    pub after: Revision,
    /// When its next bookmark is due; `None` when it asked for none.
    pub next_bookmark: Option<Micros>,
    pub deadline: Option<Micros>,
    /// Live events it may hold (see [`buffer_size`]).
    pub buffer: usize,
    /// Initial events put in its channel when it started.
    pub backlog: usize,
    /// Everything put in its channel so far, initial events included.
    pub sent: u64,
}

impl Watcher {
    /// Events waiting in its channel, initial ones included.
    pub fn buffered(&self) -> usize {
        self.tx.max_capacity() - self.tx.capacity()
    }

    /// Initial events its writer has not taken yet: the channel is in
    /// order, so they are the first `backlog` ever sent, less those taken.
    pub fn backlog_left(&self) -> usize {
        let taken = self.sent.saturating_sub(self.buffered() as u64);
        (self.backlog as u64).saturating_sub(taken) as usize
    }

    /// Live events waiting in its buffer.
    pub fn live_buffered(&self) -> usize {
        self.buffered().saturating_sub(self.backlog_left())
    }

    /// Live events its buffer holds now (see the type's doc).
    pub fn live_capacity(&self) -> usize {
        if self.backlog_left() > 0 {
            (self.buffer / 2).max(1)
        } else {
            self.buffer
        }
    }

    /// Puts `delivery` in its channel, initial or not: no bound but the
    /// channel's.
    pub fn push(&mut self, delivery: Delivery) -> Result<(), Refused> {
        match self.tx.try_send(delivery) {
            Ok(()) => {
                self.sent += 1;
                Ok(())
            }
            Err(mpsc::error::TrySendError::Full(_)) => Err(Refused::Full),
            Err(mpsc::error::TrySendError::Closed(_)) => Err(Refused::Closed),
        }
    }

    /// Puts a live event (or a bookmark) in its buffer if it has room for
    /// one (see [`Watcher::live_capacity`]).
    pub fn push_live(&mut self, delivery: Delivery) -> Result<(), Refused> {
        if self.tx.is_closed() {
            return Err(Refused::Closed);
        }
        if self.live_buffered() >= self.live_capacity() {
            return Err(Refused::Full);
        }
        self.push(delivery)
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
