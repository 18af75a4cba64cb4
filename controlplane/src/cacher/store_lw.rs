//! The store as the Cacher's Reflector lists and watches it
//! (`cacherListerWatcher`, `cacher.go`): a read of one type's key prefix,
//! and etcd's watch on that prefix. Each read of the store is one a step
//! runs for the driver ([`super::shared::read_store`]).

use super::shared::{Handle, clear_broken, next_step, read_store, take_broken};
use crate::store::{Change, Revision, StoreError, StoreEvent};
use serde_json::Value;
use std::sync::Arc;
use watchlife_informer::list_watch::{
    ListRequest, ListerWatcher, Page, WatchItem, WatchRequest, WatchStream,
};
use watchlife_informer::object::Stored;
use watchlife_informer::reflector::Failure;

/// Why a store watch failed when the Cacher was told to end it.
const BROKEN: &str = "the store's watch ended (its etcd watch failed)";

/// What the Cacher's Reflector reads of the store.
#[derive(Debug, Clone)]
pub(super) enum StoreItem {
    /// A key and its value, from a LIST.
    Listed { key: String, value: Arc<Value> },
    /// A change, from the store's watch.
    Changed(Box<StoreEvent>),
}

impl StoreItem {
    /// The key and value of a listed item.
    pub(super) fn listed(self) -> Option<(String, Arc<Value>)> {
        match self {
            StoreItem::Listed { key, value } => Some((key, value)),
            StoreItem::Changed(_) => None,
        }
    }

    /// The change of a watched item.
    pub(super) fn changed(self) -> Option<StoreEvent> {
        match self {
            StoreItem::Changed(event) => Some(*event),
            StoreItem::Listed { .. } => None,
        }
    }
}

impl Stored for StoreItem {
    /// The store key: unique, which is all the driver asks of a key.
    fn key(&self) -> Arc<str> {
        match self {
            StoreItem::Listed { key, .. } => key.as_str().into(),
            StoreItem::Changed(event) => event.key.as_str().into(),
        }
    }

    fn resource_version(&self) -> &str {
        let object = match self {
            StoreItem::Listed { value, .. } => value,
            StoreItem::Changed(event) => &event.object,
        };
        watchlife_informer::object::resource_version(object)
    }
}

/// One type's key prefix in the store.
pub(super) struct StoreListerWatcher {
    prefix: String,
    shared: Handle,
}

impl StoreListerWatcher {
    pub(super) fn new(prefix: String, shared: Handle) -> Self {
        StoreListerWatcher { prefix, shared }
    }
}

impl ListerWatcher for StoreListerWatcher {
    type Object = StoreItem;
    type Stream<'a> = StoreWatch<'a>;

    /// A consistent read of the prefix at the store's revision, whatever
    /// resourceVersion was asked for (`cacherListerWatcher.List` reads etcd
    /// with resourceVersion ""), in one page.
    async fn list(&self, _request: ListRequest<'_>) -> Result<Page<StoreItem>, Failure> {
        let prefix = self.prefix.clone();
        let (items, revision) = read_store(&self.shared, move |store| {
            let items: Vec<_> = store
                .entries(&prefix)
                .map(|(key, value)| StoreItem::Listed {
                    key: key.to_string(),
                    value,
                })
                .collect();
            (items, store.revision())
        })
        .await;
        Ok(Page {
            items,
            resource_version: revision.to_string(),
            continue_token: None,
        })
    }

    /// etcd's watch on the prefix, after the revision asked for.
    async fn watch<'a>(&'a self, request: WatchRequest<'_>) -> Result<StoreWatch<'a>, Failure> {
        let after = request.resource_version.parse().map_err(|_| {
            Failure::Other(format!(
                "a store watch needs a revision, not {:?}",
                request.resource_version
            ))
        })?;
        clear_broken(&self.shared);
        Ok(StoreWatch { lw: self, after })
    }
}

/// What the store's watch finds next.
enum Next {
    Change(Box<StoreEvent>),
    /// Nothing under the prefix up to the store's revision.
    CaughtUp(Revision),
}

/// An open watch of the store: its position, the last revision it read.
pub(super) struct StoreWatch<'a> {
    lw: &'a StoreListerWatcher,
    after: Revision,
}

impl WatchStream<StoreItem> for StoreWatch<'_> {
    /// The next change under the prefix; once caught up, a BOOKMARK at the
    /// store's revision when it moved on with changes of other types
    /// (etcd's progress notification), then nothing until a later step finds
    /// more. A revision compacted away ends the watch as 410 Gone.
    async fn next(&mut self) -> Option<Result<WatchItem<StoreItem>, Failure>> {
        loop {
            if take_broken(&self.lw.shared) {
                return Some(Err(Failure::Other(BROKEN.into())));
            }
            let (prefix, after) = (self.lw.prefix.clone(), self.after);
            let read = read_store(&self.lw.shared, move |store| {
                match store.next_change_after(&prefix, after) {
                    Ok(Some(event)) => Ok(Next::Change(Box::new(event.clone()))),
                    Ok(None) => Ok(Next::CaughtUp(store.revision())),
                    Err(e) => Err(e),
                }
            })
            .await;
            match read {
                Ok(Next::Change(event)) => {
                    self.after = event.revision;
                    let item = match event.change {
                        Change::Put { created: true } => WatchItem::Added,
                        Change::Put { created: false } => WatchItem::Modified,
                        Change::Delete => WatchItem::Deleted,
                    };
                    return Some(Ok(item(StoreItem::Changed(event))));
                }
                Ok(Next::CaughtUp(revision)) if revision > self.after => {
                    // A synced etcd watcher is at the current revision, so a
                    // later compaction does not end it.
                    self.after = revision;
                    return Some(Ok(WatchItem::Bookmark {
                        resource_version: revision.to_string(),
                        initial_events_end: false,
                    }));
                }
                Ok(Next::CaughtUp(_)) => next_step().await,
                Err(e) => {
                    let failure = match e {
                        StoreError::Compacted { .. } => Failure::Expired(e.to_string()),
                        _ => Failure::Other(e.to_string()),
                    };
                    return Some(Err(failure));
                }
            }
        }
    }
}
