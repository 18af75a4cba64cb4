//! The watcher streams' combinators: each event (and error) as it passes,
//! unchanged.

use futures_util::{Stream, StreamExt};
use kube::Resource;
use kube::runtime::watcher;
use watchlife_protocol::tap::{TapFrame, WatcherErrorFrame, WatcherEventKind, WatcherFrame};

use crate::Tap;
use crate::names::{object_ref, resource_name};

/// Taps a watcher stream (`watcher(api, config)`, with or without
/// `.default_backoff()`, before or after `reflector`).
pub trait WatchTapExt<K>: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Sized
where
    K: Resource,
    K::DynamicType: Default,
{
    /// Records each event and error as it passes, before `reflector` (the
    /// store has not applied it yet).
    fn tap(
        self,
        tap: &Tap,
    ) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + use<Self, K> {
        inspect(self, tap, None)
    }

    /// Records each event and error as it passes, after `reflector` (the
    /// store applied it before the stream yielded it).
    fn tap_applied(
        self,
        tap: &Tap,
    ) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + use<Self, K> {
        inspect(self, tap, Some(true))
    }
}

impl<K, S> WatchTapExt<K> for S
where
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>>,
    K: Resource,
    K::DynamicType: Default,
{
}

fn inspect<K, S>(
    stream: S,
    tap: &Tap,
    applied_to_store: Option<bool>,
) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + use<K, S>
where
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>>,
    K: Resource,
    K::DynamicType: Default,
{
    let tap = tap.clone();
    let resource = resource_name::<K>();
    stream.inspect(move |item| match item {
        Ok(event) => tap.watcher_event(&resource, event, applied_to_store),
        Err(e) => {
            let (resource, message) = (resource.clone(), e.to_string());
            tap.record(|seq, at_us| {
                TapFrame::WatcherError(WatcherErrorFrame {
                    seq,
                    at_us,
                    resource,
                    message,
                })
            });
        }
    })
}

impl Tap {
    fn watcher_event<K>(
        &self,
        resource: &str,
        event: &watcher::Event<K>,
        applied_to_store: Option<bool>,
    ) where
        K: Resource,
        K::DynamicType: Default,
    {
        let (kind, object) = match event {
            watcher::Event::Init => (WatcherEventKind::Init, None),
            watcher::Event::InitDone => (WatcherEventKind::InitDone, None),
            watcher::Event::InitApply(o) => (WatcherEventKind::InitApply, Some(o)),
            watcher::Event::Apply(o) => (WatcherEventKind::Apply, Some(o)),
            watcher::Event::Delete(o) => (WatcherEventKind::Delete, Some(o)),
        };
        let resource_version = object.and_then(|o| o.meta().resource_version.clone());
        let object = object.map(|o| object_ref(o));
        if let Some(object) = &object {
            self.saw_event(object, kind == WatcherEventKind::Delete);
        }
        let resource = resource.to_owned();
        self.record(|seq, at_us| {
            TapFrame::Watcher(WatcherFrame {
                seq,
                at_us,
                resource,
                event: kind,
                object,
                resource_version,
                applied_to_store,
            })
        });
    }
}
