//! Where the pipeline's parts stand, in SVG units.
//!
//! Three sizes ([`Dims`]): [`NORMAL`] for a desk, [`PRESENTER`] for a
//! projector, where one SVG unit is one CSS pixel at 1920×1080 so that the
//! stylesheet's font sizes are what the room sees, and [`PHONE`], a desk's
//! nodes over slim lanes. Three arrangements ([`Geometry`]): one row of
//! nodes, server side then client side; when the server side is opened into
//! its inner hops or in presenter mode, two rows — the server on top, the
//! client under it; on a phone, rows no wider than [`PHONE_ROW_W`] (two
//! stages), so that a 360-pixel screen shows them at their own size. Each
//! row has its token lanes beneath.

use super::spot::{Spot, spots};
use crate::animator::LANES;

/// The sizes of one arrangement: nodes, the rows of text in a node (from
/// its top), lanes and tokens.
#[derive(Debug, PartialEq)]
pub struct Dims {
    /// Width of a stage's node.
    pub node_w: f64,
    /// Width of an inner hop's node (a name and one measured time).
    pub hop_w: f64,
    pub node_h: f64,
    pub gap: f64,
    /// Baselines of the name: one line, or two for a name of two words.
    pub name_y: [f64; 2],
    /// Whether a name of two words is drawn on two lines.
    pub name_lines: usize,
    /// Baselines of the explanation's lines (how many: `explain_lines`).
    pub explain_y: [f64; 2],
    pub explain_lines: usize,
    pub rule_y: f64,
    pub rate_y: f64,
    pub latency_y: f64,
    pub depth_y: f64,
    /// Top of the short lines (Reflector, listeners, cache answers, keys).
    pub lines_y: f64,
    pub line_h: f64,
    /// Average widths of one character, sans-serif numbers and monospace
    /// lines, to squeeze a long line into its node rather than let it overflow.
    pub sans_char_w: f64,
    pub mono_char_w: f64,
    /// Generous width of one character of a stage's name.
    pub name_char_w: f64,
    /// Space between the nodes and the first lane.
    pub lanes_gap: f64,
    pub lane_h: f64,
    pub token_w: f64,
    pub token_h: f64,
    /// Baseline of a token's label under its top.
    pub label_y: f64,
    /// Room above a row of nodes (the side's label).
    pub head: f64,
    /// Room under a row's lanes: under the last row, the line of events shown
    /// without a token lies over it (see `untokened.rs`).
    pub foot: f64,
    /// Tokens show the object's name rather than its resourceVersion.
    pub names_on_tokens: bool,
    /// Characters of a name a token shows (the rest is elided).
    pub label_chars: usize,
}

/// The desk's sizes (12 px explanations, 17 px names, 150-unit nodes).
pub const NORMAL: Dims = Dims {
    node_w: 150.0,
    hop_w: 110.0,
    node_h: 190.0,
    gap: 14.0,
    name_y: [24.0, 24.0],
    name_lines: 1,
    explain_y: [44.0, 59.0],
    explain_lines: 2,
    rule_y: 70.0,
    rate_y: 90.0,
    latency_y: 108.0,
    depth_y: 124.0,
    lines_y: 138.0,
    line_h: 13.5,
    sans_char_w: 6.4,
    mono_char_w: 6.6,
    name_char_w: 10.0,
    lanes_gap: 22.0,
    lane_h: 26.0,
    token_w: 70.0,
    token_h: 20.0,
    label_y: 14.5,
    head: 34.0,
    foot: 26.0,
    names_on_tokens: false,
    label_chars: 9,
};

/// A projector's sizes: 32 px names on two lines, 22–24 px numbers, 17 px
/// short lines, tokens 28 px tall with a 22 px label. Two rows of these
/// (server, client) with six lanes each fill the height of a 1080p screen
/// under the header; see `static/style.css` for the font sizes.
pub const PRESENTER: Dims = Dims {
    node_w: 220.0,
    hop_w: 150.0,
    node_h: 258.0,
    gap: 14.0,
    name_y: [34.0, 66.0],
    name_lines: 2,
    explain_y: [88.0, 88.0],
    explain_lines: 1,
    rule_y: 96.0,
    rate_y: 122.0,
    latency_y: 148.0,
    depth_y: 172.0,
    lines_y: 194.0,
    line_h: 19.0,
    sans_char_w: 12.8,
    mono_char_w: 10.3,
    name_char_w: 21.0,
    lanes_gap: 12.0,
    lane_h: 32.0,
    token_w: 180.0,
    token_h: 28.0,
    label_y: 22.5,
    head: 24.0,
    foot: 4.0,
    names_on_tokens: true,
    label_chars: 11,
};

/// A phone's sizes: a desk's nodes (their text at its own size), slim
/// lanes of unlabelled tokens, so that five rows of two stages stay about
/// two screens tall.
pub const PHONE: Dims = Dims {
    lanes_gap: 8.0,
    lane_h: 13.0,
    token_w: 36.0,
    token_h: 10.0,
    label_y: 8.0,
    foot: 22.0,
    ..NORMAL
};

/// Widest row on a phone, in SVG units: two desk nodes and the margins, so
/// that a 360-pixel screen draws one unit at about a pixel.
pub const PHONE_ROW_W: f64 = 2.0 * NORMAL.node_w + NORMAL.gap + 2.0 * MARGIN;

/// Space left and right of the rows of nodes.
pub const MARGIN: f64 = 10.0;

/// How the pipeline is arranged now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Geometry {
    pub dims: &'static Dims,
    /// The server side shows its inner hops.
    pub open: bool,
    /// Server and client on rows of their own.
    pub two_rows: bool,
    /// A row is broken where it would be wider than this (a phone's).
    pub row_w: Option<f64>,
}

/// A spot's node on the drawing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Placed {
    pub spot: Spot,
    pub x: f64,
    /// Top of its node.
    pub y: f64,
    pub w: f64,
    /// Its row, from 0 at the top.
    pub row: usize,
}

impl Geometry {
    /// The desk's single row, or two rows when opened; a projector's two
    /// rows; a phone's rows of two stages (`narrow`, in presenter mode too:
    /// a projector's sizes on a phone's screen are too small to read).
    pub fn new(presenter: bool, open: bool, narrow: bool) -> Geometry {
        let dims = match (presenter, narrow) {
            (_, true) => &PHONE,
            (true, false) => &PRESENTER,
            (false, false) => &NORMAL,
        };
        Geometry {
            dims,
            open,
            two_rows: presenter || open || narrow,
            row_w: narrow.then_some(PHONE_ROW_W),
        }
    }

    /// Height of one row: its head, nodes, lanes and foot.
    fn row_h(&self) -> f64 {
        let d = self.dims;
        d.head + d.node_h + d.lanes_gap + LANES as f64 * d.lane_h + d.foot
    }

    /// Every spot's node, in pipeline order.
    pub fn placed(&self) -> Vec<Placed> {
        let d = self.dims;
        let mut out: Vec<Placed> = Vec::new();
        let mut x = MARGIN;
        let mut row = 0;
        for spot in spots(self.open) {
            let w = if spot.is_hop() { d.hop_w } else { d.node_w };
            let side_changes = out
                .last()
                .is_some_and(|p| p.spot.is_server_side() != spot.is_server_side());
            let too_wide = self.row_w.is_some_and(|max| x + w + MARGIN > max);
            if !out.is_empty() && ((self.two_rows && side_changes) || too_wide) {
                row += 1;
                x = MARGIN;
            }
            out.push(Placed {
                spot,
                x,
                y: row as f64 * self.row_h() + d.head,
                w,
                row,
            });
            x += w + d.gap;
        }
        out
    }

    /// How many rows of nodes there are.
    pub fn rows(&self) -> usize {
        self.placed().last().map_or(1, |p| p.row + 1)
    }

    /// Whether this is a phone's arrangement.
    pub fn narrow(&self) -> bool {
        self.row_w.is_some()
    }

    /// Width of the whole drawing: the widest row and the margins.
    pub fn width(&self) -> f64 {
        self.placed()
            .iter()
            .map(|p| p.x + p.w + MARGIN)
            .fold(0.0, f64::max)
    }

    /// Height of the whole drawing.
    pub fn height(&self) -> f64 {
        self.rows() as f64 * self.row_h()
    }

    /// Top of token lane `lane` of row `row`.
    pub fn lane_y(&self, row: usize, lane: usize) -> f64 {
        let d = self.dims;
        row as f64 * self.row_h() + d.head + d.node_h + d.lanes_gap + lane as f64 * d.lane_h
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use watchlife_protocol::Stage;

    #[test]
    fn the_desk_row_is_as_wide_as_nine_nodes_and_a_projector_fits_1080p() {
        let desk = Geometry::new(false, false, false);
        assert_eq!(desk.width(), 2.0 * MARGIN + 9.0 * 150.0 + 8.0 * 14.0);
        assert_eq!(desk.placed().len(), 9);
        let room = Geometry::new(true, true, false);
        assert_eq!(room.placed().len(), 13);
        // One unit a CSS pixel: the drawing fits 1080p under a header, beside a side panel.
        assert!(room.height() <= 985.0, "{}", room.height());
        assert!(room.width() <= 1_420.0, "{}", room.width());
        let reflector = room
            .placed()
            .into_iter()
            .find(|p| p.spot == Spot::Stage(Stage::Reflector))
            .unwrap();
        assert_eq!((reflector.row, reflector.x), (1, MARGIN));
    }

    #[test]
    fn a_phone_stacks_two_stages_to_a_row_at_their_own_size() {
        let phone = Geometry::new(false, false, true);
        let placed = phone.placed();
        assert_eq!(placed.len(), 9);
        assert!(phone.width() <= PHONE_ROW_W, "{}", phone.width());
        // etcd and the watch cache, the watch stream alone (the server side
        // ends), then the client side two by two.
        let rows: Vec<usize> = placed.iter().map(|p| p.row).collect();
        assert_eq!(rows, [0, 0, 1, 2, 2, 3, 3, 4, 4]);
        assert_eq!(phone.rows(), 5);
        // At 360 CSS pixels, one unit is at least a pixel: text at its size.
        assert!(360.0 / phone.width() >= 1.0);
        // About two screens of a 360×800 phone.
        assert!(
            phone.height() * 360.0 / phone.width() <= 1_800.0,
            "{}",
            phone.height()
        );
        // Opened, the inner hops wrap the same way and stay within the width.
        let open = Geometry::new(false, true, true);
        assert!(open.width() <= PHONE_ROW_W, "{}", open.width());
        assert!(
            open.placed()
                .iter()
                .all(|p| p.x + p.w + MARGIN <= PHONE_ROW_W)
        );
        // Presenter mode on a phone is a phone's arrangement.
        assert_eq!(Geometry::new(true, false, true), phone);
    }
}
