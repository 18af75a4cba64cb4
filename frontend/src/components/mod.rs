//! What the page draws, one component per file.
//!
//! One rule keeps a page open for hours from growing: a view that a
//! reactive closure makes again (a list redrawn, a block drawn anew for each
//! report) holds no reactive closure of its own. When the outer closure
//! runs again, leptos 0.8 (reactive_graph 0.2) drops the inner one without
//! taking it out of the subscribers of the signals it read, and a signal
//! that lives as long as the page keeps it for good: about 48 bytes of wasm
//! memory each time, and one more dead subscriber to visit at each change.
//! Compute such values in the closure that makes the view, or make the
//! inner part once, beside it, fed by signals. Fixed-size slots updated in
//! place (`slot`, the token lanes, the object table) do not have the problem.

pub mod actions;
pub mod bookmark_filter;
pub mod cache_answers;
pub mod captions;
pub mod catch_up;
pub mod cluster_status;
pub mod controller_lane;
pub mod controllers;
pub mod controls;
pub mod event_detail;
pub mod event_log;
pub mod fanout;
pub mod header;
pub mod help;
pub mod keyboard;
pub mod listener_lanes;
pub mod node_lines;
pub mod objects;
pub mod pipeline;
pub mod plots;
pub mod record_bar;
#[cfg(feature = "replay")]
pub mod replay_bar;
pub mod scroll_table;
pub mod side_panel;
pub mod slot;
#[cfg(feature = "replay")]
pub mod transport;
pub mod waterfall;
