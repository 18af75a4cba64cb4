//! The words: what each stage does, what a token is doing as it passes one,
//! and the Reflector's state as drawn on its node.

use watchlife_protocol::{EventType, ReflectorState, Stage, WatchEvent};

/// Two short lines under a stage's name, saying what the stage does.
pub fn explain(stage: Stage) -> [&'static str; 2] {
    match stage {
        Stage::Etcd => ["write committed;", "its revision is the RV"],
        Stage::WatchCache => ["apiserver's window", "of recent events"],
        Stage::WatchStream => ["sent to each watcher", "over one HTTP stream"],
        Stage::Reflector => ["LIST, then WATCH", "from the last RV"],
        Stage::Fifo => ["deltas queued", "per object key"],
        Stage::Indexer => ["the informer's cache", "is updated"],
        Stage::Handlers => ["OnAdd / OnUpdate /", "OnDelete are called"],
        Stage::Workqueue => ["the key is queued;", "repeats merge"],
        Stage::Reconcile => ["a worker makes the", "world match the spec"],
    }
}

/// A caption for `event` as it passes `stage`, in plain words.
pub fn caption(stage: Stage, e: &WatchEvent) -> String {
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
    let key = e.target.key();
    let kind = &e.target.kind;
    let rv = &e.resource_version;
    if e.initial {
        return format!(
            "{kind} {key} (RV {rv}) came from a LIST, not from the watch: the Reflector turns every listed object into an ADDED."
        );
    }
    match stage {
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
        Stage::Fifo => format!("The change to {key} is queued in the FIFO as a delta."),
        Stage::Indexer => {
            format!("The informer pops the delta and updates its cache: {key} is now at RV {rv}.")
        }
        Stage::Handlers => format!(
            "The event handlers are called ({}) with the {kind}.",
            match e.event_type {
                EventType::Added => "OnAdd",
                EventType::Deleted => "OnDelete",
                _ => "OnUpdate",
            }
        ),
        Stage::Workqueue if e.coalesced => format!(
            "{key} was already waiting in the workqueue: this event merges into the queued item."
        ),
        Stage::Workqueue => format!("The key {key} is added to the workqueue."),
        Stage::Reconcile => {
            format!("A worker takes {key} and reconciles: it reads the cache, not the event.")
        }
    }
}

/// The Reflector's state in the words drawn on its node.
pub fn reflector_state(state: &ReflectorState) -> String {
    match state {
        ReflectorState::ListStarted { .. } => "LIST…".into(),
        ReflectorState::ListProgress { bytes } => {
            format!("LIST… {:.1} MB received", *bytes as f64 / 1e6)
        }
        ReflectorState::ListFinished {
            count,
            resource_version,
        } => format!("LIST: {count} objects at RV {resource_version}"),
        ReflectorState::WatchStarted { resource_version, .. } => {
            format!("WATCH from RV {resource_version}")
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
        ReflectorState::ListStarted { .. } => "LIST…".into(),
        ReflectorState::ListProgress { bytes } => format!("LIST… {:.1} MB", *bytes as f64 / 1e6),
        ReflectorState::ListFinished { count, .. } => format!("LISTED {count}"),
        ReflectorState::WatchStarted { resource_version, .. } => {
            format!("WATCH from {resource_version}")
        }
        ReflectorState::Bookmark { resource_version } => format!("BOOKMARK {resource_version}"),
        ReflectorState::WatchEnded {
            resource_version, ..
        } => format!("re-WATCH {resource_version}"),
        ReflectorState::Gone { .. } => "410 → RELIST".into(),
        ReflectorState::Relist { .. } => "RELIST".into(),
        ReflectorState::Backoff { delay_ms, .. } => format!("backoff {delay_ms} ms"),
    }
}

/// Whether a Reflector state is trouble worth drawing in the error colour.
pub fn reflector_alarming(state: &ReflectorState) -> bool {
    matches!(
        state,
        ReflectorState::Gone { .. }
            | ReflectorState::Relist { .. }
            | ReflectorState::Backoff { .. }
    )
}

/// A caption for a Reflector change, when it is a story worth telling.
pub fn reflector_caption(resource: &str, state: &ReflectorState) -> Option<String> {
    Some(match state {
        ReflectorState::Gone { message, .. } => format!(
            "410 Gone for {resource}: {message}. The Reflector's resourceVersion was compacted away, so it must LIST again."
        ),
        ReflectorState::Relist { reason } => {
            format!("The {resource} Reflector lists everything again ({reason}).")
        }
        ReflectorState::Backoff { delay_ms, error } => format!(
            "The {resource} Reflector's request failed ({error}); it waits {delay_ms} ms before trying again."
        ),
        ReflectorState::WatchEnded {
            reason,
            resource_version,
        } => format!(
            "The {resource} watch ended ({reason}); the Reflector watches again from RV {resource_version}."
        ),
        _ => return None,
    })
}
