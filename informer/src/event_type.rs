//! The type of a watch event, as the apiserver sends it (client-go's
//! `watch.EventType`).

/// What a watch event says happened.
///
/// A driver hands the FIFO `Added`, `Modified` and `Deleted` as deltas;
/// `Bookmark` and `Error` stop at the Reflector (see
/// [`crate::list_watch::Sink::marker`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// An object was created, or listed.
    Added,
    /// An object changed.
    Modified,
    /// An object went away; the event holds its last state.
    Deleted,
    /// Only the resourceVersion moved on.
    Bookmark,
    /// The watch ended with a Status, such as 410 Gone.
    Error,
}
