//! The words: what each stage does, what a token is doing as it passes one,
//! and the Reflector's state as drawn on its node.

use crate::micros::format_micros;
use crate::model::Model;
use leptos::prelude::*;
use watchlife_protocol::{
    EventType, Hello, ReflectorState, ServerAnswer, Source, Stage, WatchEvent,
};

/// Whether `source` is a real cluster, whose etcd mark is the moment etcd's
/// watch notification reached watchlife, not the commit: watchlife watches
/// that etcd from outside. The demo stamps the commit itself.
pub fn etcd_notifies(source: Option<&Source>) -> bool {
    matches!(source, Some(Source::Cluster { .. }))
}

/// Which release's client the page shows, from the hello (`1.36`, `1.20`,
/// `1.36 (WatchListClient=false)`); a bridge that does not say is v1.20's.
pub fn client_release(hello: Option<&Hello>) -> (bool, bool) {
    let kubernetes = hello.map(|h| h.kubernetes.as_str()).unwrap_or_default();
    let modern = kubernetes.starts_with("1.36");
    let streams = modern && !kubernetes.contains("WatchListClient=false");
    (modern, streams)
}

/// Two short lines under a stage's name, saying what the stage does (for
/// etcd, what its mark is for the source; for the Reflector and the FIFO,
/// what they are in the release followed).
pub fn explain(stage: Stage, hello: Option<&Hello>) -> [&'static str; 2] {
    let (modern, streams) = client_release(hello);
    match stage {
        Stage::Etcd if etcd_notifies(hello.map(|h| &h.source)) => {
            ["notified watchlife;", "its revision is the RV"]
        }
        Stage::Etcd => ["write committed;", "its revision is the RV"],
        Stage::WatchCache => ["apiserver's window", "of recent events"],
        Stage::WatchStream => ["sent to each watcher", "over one HTTP stream"],
        Stage::Reflector if streams => ["streaming list (one", "WATCH), then watching"],
        Stage::Reflector => ["LIST, then WATCH", "from the last RV"],
        Stage::Fifo if modern => ["RealFIFO: every delta", "in arrival order"],
        Stage::Fifo => ["DeltaFIFO: one entry", "per key, its deltas"],
        Stage::Indexer => ["the informer's cache", "is updated"],
        Stage::Handlers => ["distributed to each", "listener's buffer"],
        Stage::Workqueue => ["the key is queued;", "repeats merge"],
        Stage::Reconcile => ["a worker makes the", "world match the spec"],
    }
}

/// A caption for `event` as it passes `stage`, in plain words, for the
/// source of the page's [`Model`] (in context; the demo's words without one).
pub fn caption(stage: Stage, e: &WatchEvent) -> String {
    let notifies = use_context::<Model>().is_some_and(|m| {
        m.hello
            .with(|h| etcd_notifies(h.as_ref().map(|h| &h.source)))
    });
    caption_for(stage, e, notifies)
}

/// [`caption`], where `etcd_notifies` tells what the etcd mark is (see
/// [`etcd_notifies`]).
pub fn caption_for(stage: Stage, e: &WatchEvent, etcd_notifies: bool) -> String {
    let what = match e.event_type {
        EventType::Bookmark => {
            return format!(
                "BOOKMARK at {}: no object changed; the server says the watch has seen every change up to resourceVersion {}.",
                stage.label(),
                e.resource_version
            );
        }
        EventType::Error => {
            return format!(
                "ERROR at {}: the server ended the watch. After 410 Gone the Reflector must LIST again.",
                stage.label()
            );
        }
        EventType::Added => "created",
        EventType::Modified => "changed",
        EventType::Deleted => "deleted",
    };
    delivery_caption(stage, e).unwrap_or_else(|| stage_caption(stage, e, what, etcd_notifies))
}

/// The caption of an event that did not come as a change on the watch (a
/// relist's deletion, a resync, a listed object), the same at every stage
/// but a resync's; `None` for a change on the watch.
fn delivery_caption(stage: Stage, e: &WatchEvent) -> Option<String> {
    let key = e.target.key();
    let kind = &e.target.kind;
    let rv = &e.resource_version;
    if e.handled.final_state_unknown {
        return Some(format!(
            "{kind} {key} is gone, found by a relist rather than seen on the watch: the handlers get a DeletedFinalStateUnknown holding the Indexer's last copy (RV {rv})."
        ));
    }
    if e.handled.resync && stage == Stage::Handlers {
        return Some(format!(
            "A resync: {key} is handed to the handlers again at the same resourceVersion, {rv}. Only listeners due for a resync get it."
        ));
    }
    if e.initial && e.event_type == EventType::Modified {
        return Some(format!(
            "{kind} {key} (RV {rv}) came with a relist, not as a change on the watch: the Indexer already had it, so its handlers get OnUpdate."
        ));
    }
    e.initial.then(|| format!(
        "{kind} {key} (RV {rv}) came with the initial list (a LIST's items, or a streaming list's synthetic ADDEDs), not as a change on the watch."
    ))
}

/// What `stage` does with a change on the watch (`what`: created, changed
/// or deleted).
fn stage_caption(stage: Stage, e: &WatchEvent, what: &str, etcd_notifies: bool) -> String {
    let key = e.target.key();
    let kind = &e.target.kind;
    let rv = &e.resource_version;
    match stage {
        Stage::Etcd if etcd_notifies => format!(
            "etcd notified watchlife of the write: {kind} {key} {what} at revision {rv}, the object's resourceVersion. The commit came a little before; from outside etcd, watchlife sees only the notification."
        ),
        Stage::Etcd => format!(
            "etcd commits the write: {kind} {key} {what}. Its revision, {rv}, becomes the object's resourceVersion."
        ),
        Stage::WatchCache => format!(
            "The apiserver's watch cache receives revision {rv} and keeps it in its window of recent events."
        ),
        Stage::WatchStream => format!(
            "The watch cache sends the event to every watcher whose RV is older than {rv}, each on its own stream."
        ),
        Stage::Reflector => format!(
            "The Reflector decodes the {} event and remembers {rv} as the last resourceVersion it has seen.",
            e.event_type.as_str()
        ),
        Stage::Fifo => format!(
            "The change to {key} is queued as a delta (DeltaFIFO joins it to {key}'s entry if one waits; RealFIFO queues it on its own)."
        ),
        Stage::Indexer => {
            format!("The informer pops the delta and updates its cache: {key} is now at RV {rv}.")
        }
        Stage::Handlers => handlers_caption(e),
        Stage::Workqueue if e.coalesced => format!(
            "{key} was already waiting in the workqueue: this event merges into the queued item."
        ),
        Stage::Workqueue => format!("The key {key} is added to the workqueue."),
        Stage::Reconcile => reconcile_caption(e),
    }
}

/// What the handlers did with the event: the listeners called, or, before
/// any was, the notification each listener's buffer got.
fn handlers_caption(e: &WatchEvent) -> String {
    if e.handled.calls.is_empty() {
        return format!(
            "The notification ({}) is put in each listener's buffer; each listener calls its handler when it takes it.",
            match e.event_type {
                EventType::Added => "OnAdd",
                EventType::Deleted => "OnDelete",
                _ => "OnUpdate",
            }
        );
    }
    format!(
        "Each listener takes the {} from its own buffer: {}. A listener whose filter turns it away is not called.",
        e.target.kind,
        e.handled
            .calls
            .iter()
            .map(|c| format!("{} {}", c.listener, c.callback.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// What the reconcile found: a worker reads the cache, not the event.
fn reconcile_caption(e: &WatchEvent) -> String {
    let key = e.target.key();
    match &e.handled.reconcile {
        Some(r) => format!(
            "Worker {} takes {key} and reconciles: it reads the cache, not the event, and {}.",
            r.worker,
            match &r.seen_resource_version {
                Some(seen) => format!("finds RV {seen}"),
                None => "finds the object gone".into(),
            }
        ),
        None => {
            format!("A worker takes {key} and reconciles: it reads the cache, not the event.")
        }
    }
}

/// The request a Reflector sent, as asked: `LIST rv="0" limit=500`,
/// `LIST rv="123" (unpaged)`, `WATCH rv="123" timeout 417s`. `None` for
/// the states that are not a request going out.
pub fn request(state: &ReflectorState) -> Option<String> {
    Some(match state {
        ReflectorState::ListStarted {
            resource_version: rv,
            limit,
        } => match limit {
            0 => format!("LIST rv=\"{rv}\" (unpaged)"),
            n => format!("LIST rv=\"{rv}\" limit={n}"),
        },
        ReflectorState::WatchStarted {
            resource_version: rv,
            timeout_seconds,
        } => match timeout_seconds {
            0 => format!("WATCH rv=\"{rv}\""),
            n => format!("WATCH rv=\"{rv}\" timeout {n}s"),
        },
        ReflectorState::StreamingListStarted {
            resource_version: rv,
            ..
        } => match rv.as_str() {
            "" => "WATCH sendInitialEvents (most recent)".to_string(),
            rv => format!("WATCH sendInitialEvents rv=\"{rv}\""),
        },
        _ => return None,
    })
}

/// Who answered a request, in full: the talk's three recap slides, live.
pub fn answer(answer: &ServerAnswer) -> String {
    match answer {
        ServerAnswer::ListFromWatchCache {
            asked,
            revision,
            items,
            waited_micros: 0,
        } => format!(
            "LIST rv=\"{asked}\" answered by the watch cache at its revision {revision} ({items} objects), without reading etcd"
        ),
        ServerAnswer::ListFromWatchCache {
            asked,
            revision,
            items,
            waited_micros,
        } => format!(
            "LIST rv=\"{asked}\" answered by the watch cache once it caught up ({} waiting), at {revision} ({items} objects)",
            format_micros(*waited_micros as i64)
        ),
        ServerAnswer::ListFromEtcd {
            asked,
            revision,
            items,
        } => format!(
            "LIST rv=\"{asked}\" answered by a consistent read from etcd at {revision} ({items} objects)"
        ),
        ServerAnswer::ConsistentList {
            asked,
            store_revision,
            revision,
            items,
            waited_micros,
            from_cache: true,
        } => format!(
            "consistent LIST rv=\"{asked}\": etcd is at {store_revision}; the watch cache caught up in {}, and answered at {revision} ({items} objects) without reading the objects from etcd",
            format_micros(*waited_micros as i64)
        ),
        ServerAnswer::ConsistentList {
            asked,
            store_revision,
            items,
            waited_micros,
            ..
        } => format!(
            "consistent LIST rv=\"{asked}\": etcd is at {store_revision}; the watch cache had not caught up after {}, so etcd answered ({items} objects)",
            format_micros(*waited_micros as i64)
        ),
        ServerAnswer::WatchReplayed { asked, events } => format!(
            "WATCH rv=\"{asked}\" answered by the watch cache: {events} events replayed from its window, then live"
        ),
        ServerAnswer::WatchSynthetic { asked, events } => format!(
            "WATCH rv=\"{asked}\" answered by the watch cache with {events} synthetic ADDED events, one per object: not changes, so no commit time"
        ),
    }
}

/// Who answered, in the few words that fit on the Reflector's node.
pub fn answer_short(answer: &ServerAnswer) -> String {
    match answer {
        ServerAnswer::ListFromWatchCache { revision, .. } => format!("← cache @{revision}"),
        ServerAnswer::ListFromEtcd { revision, .. } => format!("← etcd @{revision}"),
        ServerAnswer::ConsistentList {
            revision,
            from_cache: true,
            ..
        } => format!("← cache caught up @{revision}"),
        ServerAnswer::ConsistentList { revision, .. } => {
            format!("← etcd @{revision} (cache behind)")
        }
        ServerAnswer::WatchReplayed { events, .. } => format!("← {events} replayed"),
        ServerAnswer::WatchSynthetic { events, .. } => format!("← {events} synthetic"),
    }
}

/// The Reflector's state in the words drawn on its node.
pub fn reflector_state(state: &ReflectorState) -> String {
    match state {
        ReflectorState::Answered { answer: a } => answer(a),
        ReflectorState::ListProgress { bytes } => {
            format!("LIST… {:.1} MB received", *bytes as f64 / 1e6)
        }
        ReflectorState::ListFinished {
            count,
            resource_version,
        } => format!("LIST: {count} objects at RV {resource_version}"),
        ReflectorState::ListStarted { .. }
        | ReflectorState::WatchStarted { .. }
        | ReflectorState::StreamingListStarted { .. } => request(state).unwrap_or_default(),
        ReflectorState::InitialEventsEnd {
            count,
            resource_version,
        } => format!(
            "initial-events-end BOOKMARK: the {count} objects streamed are the list at RV {resource_version}; watching on"
        ),
        ReflectorState::StreamingListFailed { reason } => {
            format!("streaming list refused ({reason}) → LIST")
        }
        ReflectorState::Bookmark { resource_version } => {
            format!("BOOKMARK at RV {resource_version}")
        }
        ReflectorState::WatchEnded {
            resource_version, ..
        } => format!("watch ended at RV {resource_version}; re-watching"),
        ReflectorState::Gone {
            resource_version, ..
        } => format!("410 Gone at RV {resource_version} → RELIST"),
        ReflectorState::Relist { .. } => "RELIST".into(),
        ReflectorState::Backoff { delay_ms, .. } => format!("backoff {delay_ms} ms"),
    }
}

/// The Reflector's state in as few words as fit on its node beside the
/// resource's name (the full words are its tooltip and its label).
pub fn reflector_state_short(state: &ReflectorState) -> String {
    match state {
        ReflectorState::Answered { answer } => answer_short(answer),
        ReflectorState::ListStarted { .. } | ReflectorState::WatchStarted { .. } => {
            request(state).unwrap_or_default()
        }
        ReflectorState::StreamingListStarted { .. } => "WATCH sendInitialEvents".into(),
        ReflectorState::InitialEventsEnd { count, .. } => format!("STREAMED {count}"),
        ReflectorState::StreamingListFailed { .. } => "stream refused → LIST".into(),
        ReflectorState::ListProgress { bytes } => format!("LIST… {:.1} MB", *bytes as f64 / 1e6),
        ReflectorState::ListFinished { count, .. } => format!("LISTED {count}"),
        ReflectorState::Bookmark { resource_version } => format!("BOOKMARK {resource_version}"),
        ReflectorState::WatchEnded {
            resource_version, ..
        } => format!("re-WATCH {resource_version}"),
        ReflectorState::Gone { .. } => "410 → RELIST".into(),
        ReflectorState::Relist { .. } => "RELIST".into(),
        ReflectorState::Backoff { delay_ms, .. } => format!("backoff {delay_ms} ms"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reflector_node_shows_the_request_as_asked() {
        let list = |rv: &str, limit| ReflectorState::ListStarted {
            resource_version: rv.into(),
            limit,
        };
        assert_eq!(
            reflector_state_short(&list("0", 500)),
            "LIST rv=\"0\" limit=500"
        );
        assert_eq!(
            reflector_state_short(&list("123", 0)),
            "LIST rv=\"123\" (unpaged)"
        );
        assert_eq!(reflector_state(&list("", 500)), "LIST rv=\"\" limit=500");
        let watch = ReflectorState::WatchStarted {
            resource_version: "123".into(),
            timeout_seconds: 417,
        };
        assert_eq!(
            reflector_state_short(&watch),
            "WATCH rv=\"123\" timeout 417s"
        );
        assert_eq!(reflector_state(&watch), "WATCH rv=\"123\" timeout 417s");
        assert_eq!(request(&ReflectorState::ListProgress { bytes: 1 }), None);
    }
}
