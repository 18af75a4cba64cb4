//! Where the fan-out's parts stand, in SVG units: the ring at the left of a
//! block, the lanes bending out of it and running straight to the watchers'
//! names and buffer gauges. A block grows with its lanes.

use watchlife_protocol::CacheState;

/// Width of the drawing: the ring, the lanes, and the gauges with their
/// counts.
pub const WIDTH: f64 = 720.0;
/// Centre of the ring, from the left of a block.
pub const RING_X: f64 = 66.0;
/// Radius of the ring: room inside for two lines of count.
pub const RING_R: f64 = 38.0;
/// Where the lanes leave the ring, a little clear of its edge.
pub const FAN_X: f64 = RING_X + RING_R + 8.0;
/// Where the lanes, bent out to their heights, run straight.
pub const LANE_X: f64 = FAN_X + 90.0;
/// End of the lanes; the watcher's name follows.
pub const LANE_END: f64 = 430.0;
/// Left of the watcher's name, a little after its lane's end.
pub const NAME_X: f64 = LANE_END + 10.0;
/// Left of the watcher's buffer gauge, past the longest name drawn.
pub const BUFFER_X: f64 = 596.0;
/// Width of a full buffer gauge.
pub const BUFFER_W: f64 = 64.0;
/// Height of one lane: one line of small text.
pub const LANE_H: f64 = 19.0;
/// Smallest height of one cache's block (the ring and its captions).
pub const BLOCK_MIN_H: f64 = 150.0;
/// Lanes drawn per cache; more are counted.
pub const MAX_LANES: usize = 8;
/// Room above the first lane, for the cache's name.
const LANES_TOP: f64 = 28.0;

/// Watchers of `cache` that get no lane: beyond [`MAX_LANES`], and those the
/// report only counts.
pub fn unlaned(cache: &CacheState) -> u64 {
    cache
        .watcher_count()
        .saturating_sub(cache.watchers.len().min(MAX_LANES) as u64)
}

/// Height of one cache's block: its lanes, a line for the watchers counted
/// without a lane, a line for the last slow watcher closed.
pub fn block_h(cache: &CacheState) -> f64 {
    let lanes = cache.watchers.len().clamp(1, MAX_LANES) as f64;
    let extra = LANE_H
        * (f64::from(u8::from(unlaned(cache) > 0))
            + f64::from(u8::from(!cache.recently_closed.is_empty())));
    (LANES_TOP + lanes * LANE_H + extra).max(BLOCK_MIN_H)
}

/// The y of lane `i` of a block whose top is `top` and has `n` lanes: a few
/// lanes are centred beside the ring.
pub fn lane_y(top: f64, i: usize, n: usize) -> f64 {
    let n = n.clamp(1, MAX_LANES) as f64;
    let first = top + LANES_TOP + (BLOCK_MIN_H - LANES_TOP - n * LANE_H).max(0.0) / 2.0;
    first + i as f64 * LANE_H + LANE_H / 2.0
}

/// The ring's centre y in a block whose top is `top`.
pub fn ring_y(top: f64) -> f64 {
    top + 24.0 + RING_R + 6.0
}

/// Point at fraction `f` (0..=1) along a lane from the ring to its end:
/// a smooth bend from the ring's height to the lane's, then straight.
pub fn along(f: f64, from_y: f64, to_y: f64) -> (f64, f64) {
    let x = FAN_X + (LANE_END - FAN_X) * f;
    let bend = ((x - FAN_X) / (LANE_X - FAN_X)).clamp(0.0, 1.0);
    let smooth = bend * bend * (3.0 - 2.0 * bend);
    (x, from_y + (to_y - from_y) * smooth)
}

/// The SVG path of a lane from the ring's height `cy` to its own `ly`.
pub fn lane_path(cy: f64, ly: f64) -> String {
    format!(
        "M{FAN_X},{cy} C{:.1},{cy} {:.1},{ly} {LANE_X},{ly} L{LANE_END},{ly}",
        FAN_X + 45.0,
        LANE_X - 45.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_bend_from_the_ring_and_end_straight() {
        assert_eq!(along(0.0, 50.0, 90.0), (FAN_X, 50.0));
        let (x, y) = along(1.0, 50.0, 90.0);
        assert_eq!((x, y), (LANE_END, 90.0));
        let (_, mid) = along(0.1, 50.0, 90.0);
        assert!(mid > 50.0 && mid < 90.0);
    }

    #[test]
    fn a_block_grows_with_its_lanes_but_never_shrinks_below_the_ring() {
        let mut c = CacheState::default();
        assert_eq!(block_h(&c), BLOCK_MIN_H);
        c.watchers = vec![Default::default(); 12];
        assert!(block_h(&c) > BLOCK_MIN_H);
        assert!(lane_y(0.0, 0, 1) > 28.0);
        assert_eq!(unlaned(&c), 4);
    }

    #[test]
    fn watchers_the_report_only_counts_are_counted_too() {
        let c = CacheState {
            watchers: vec![Default::default(); 32],
            more_watchers: 9_968,
            ..Default::default()
        };
        assert_eq!(unlaned(&c), 10_000 - MAX_LANES as u64);
    }
}
