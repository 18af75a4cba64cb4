//! One event as the page keeps it: the row shared by the event log, the
//! arrivals queue and the animation.

use std::sync::Arc;
use watchlife_protocol::{EventType, WatchEvent};

/// One event as received, shared by the log and the animation. Its
/// `object` is left null: the object's history keeps it (see
/// [`crate::history::Version`]), so that it is not copied for every event.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRow {
    pub seq: u64,
    pub event: Arc<WatchEvent>,
}

/// Whether an event must be animated however many arrive: an ERROR, or an
/// object from a LIST (a relist is the story of a 410, never sampled away).
/// Queues that drop events to stay bounded drop the others first.
pub fn protected(e: &WatchEvent) -> bool {
    e.event_type == EventType::Error || e.initial
}
