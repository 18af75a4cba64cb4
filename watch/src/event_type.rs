//! The type of a watch event, as the apiserver sends it (client-go's
//! `watch.EventType`).

use serde::{Deserialize, Serialize};

/// What a watch event says happened, spelled on the wire as the Kubernetes
/// API spells it (`ADDED`, `MODIFIED`, ...).
///
/// An informer's driver hands the FIFO `Added`, `Modified` and `Deleted` as
/// deltas; `Bookmark` and `Error` stop at the Reflector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EventType {
    /// An object was created, or listed.
    Added,
    /// An object changed.
    Modified,
    /// An object went away; the event holds its last state.
    Deleted,
    /// A progress notice: no object changed, the resourceVersion moved on.
    Bookmark,
    /// The server ended the watch with a Status (410 Gone among them).
    Error,
}

impl EventType {
    /// The Kubernetes spelling: `ADDED`, `MODIFIED`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
            EventType::Bookmark => "BOOKMARK",
            EventType::Error => "ERROR",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::EventType;

    #[test]
    fn the_wire_spelling_is_as_str() {
        for t in [
            EventType::Added,
            EventType::Modified,
            EventType::Deleted,
            EventType::Bookmark,
            EventType::Error,
        ] {
            let text = serde_json::to_string(&t).unwrap();
            assert_eq!(text, format!("\"{}\"", t.as_str()));
            assert_eq!(serde_json::from_str::<EventType>(&text).unwrap(), t);
        }
    }
}
