//! A stage's name where the page's code and stylesheet select it.

use watchlife_protocol::Stage;

/// The stage name used in selectors: its name on the wire (`watch_cache`).
pub fn stage_id(stage: Stage) -> &'static str {
    stage.wire_name()
}
