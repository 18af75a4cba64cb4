//! Where the pipeline's parts stand, in SVG units: a row of nodes, one per
//! stage, server side then client side, and under them the token lanes.

use crate::animator::LANES;

/// Width of a stage's node in SVG units.
pub const NODE_W: f64 = 150.0;
/// Space between two nodes.
pub const GAP: f64 = 14.0;
/// Space left and right of the row of nodes.
pub const MARGIN: f64 = 10.0;
/// Top of the nodes (room above for the side labels).
pub const NODE_Y: f64 = 34.0;
/// Height of a node: name, two lines of explanation, three of numbers, and
/// four short lines (the Reflector's requests, the listeners' lanes).
pub const NODE_H: f64 = 190.0;
/// Top of the four short lines of the Reflector and the handlers.
pub const LINES_Y: f64 = NODE_Y + 138.0;
/// Top of the first token lane.
pub const TRACK_Y: f64 = NODE_Y + NODE_H + 22.0;
/// Height of one token lane.
pub const LANE_H: f64 = 26.0;
/// Width of a token: room for its label (a resourceVersion, or `merged`).
pub const TOKEN_W: f64 = 70.0;
/// Height of a token, less than a lane's, so that two lanes' tokens never
/// touch.
pub const TOKEN_H: f64 = 20.0;
/// Width of the whole drawing: the nine nodes, the eight gaps between them
/// and the margins.
pub const WIDTH: f64 = 2.0 * MARGIN + 9.0 * NODE_W + 8.0 * GAP;
/// Height of the whole drawing: the nodes, every lane, and under them a
/// line for the counts of events not animated.
pub const HEIGHT: f64 = TRACK_Y + LANES as f64 * LANE_H + 26.0;
/// Width of one character of the workqueue's keys (11px monospace), to
/// squeeze a long line into its node rather than let it overflow.
pub const MONO_CHAR_W: f64 = 6.6;
/// A generous average width of one character of the latency line (12px
/// sans-serif), to squeeze a long one rather than let it cross its node.
pub const SANS_CHAR_W: f64 = 6.4;

/// Left edge of the node at pipeline position `at`.
pub fn node_x(at: f64) -> f64 {
    MARGIN + at * (NODE_W + GAP)
}

/// Top of token lane `lane`.
pub fn lane_y(lane: usize) -> f64 {
    TRACK_Y + lane as f64 * LANE_H
}
