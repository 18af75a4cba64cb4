//! What the page draws, one component per file.

pub mod actions;
pub mod cache_answers;
pub mod captions;
pub mod catch_up;
pub mod cluster_status;
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
