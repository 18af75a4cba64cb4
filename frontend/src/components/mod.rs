//! What the page draws, one component per file.

pub mod event_log;
pub mod header;
pub mod reflectors;
