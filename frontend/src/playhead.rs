//! Where a played recording stands, and the clock that moves it: one
//! [`Playhead`] for the replay page's player, one for the compare view's
//! pair of players, both moved by [`every_tick`].

use crate::model::now_ms;
use gloo_timers::future::TimeoutFuture;
use leptos::prelude::*;
use leptos::task::spawn_local;

/// Replay speeds offered, as multiples of the recorded pace.
pub const RATES: [f64; 5] = [0.25, 0.5, 1.0, 2.0, 4.0];

/// The speed a player starts at: the recorded pace (index into [`RATES`]).
const RECORDED_PACE: usize = 2;

/// How often a replay clock moves: frames due in between are applied
/// together, so a fast recording costs no more redraws than a slow one.
const TICK_MS: u32 = 40;

/// A player's position, speed and end. `Copy`: handles only.
#[derive(Clone, Copy, Debug)]
pub struct Playhead {
    /// ms since the recording's start: what the timeline shows, and how far
    /// its frames have been applied.
    pub position_ms: RwSignal<f64>,
    /// Index into [`RATES`].
    pub rate: RwSignal<usize>,
    /// Played to the end (and not looping).
    pub ended: RwSignal<bool>,
}

impl Playhead {
    /// At the start, at the recorded pace.
    pub fn new() -> Playhead {
        Playhead {
            position_ms: RwSignal::new(0.0),
            rate: RwSignal::new(RECORDED_PACE),
            ended: RwSignal::new(false),
        }
    }

    /// The chosen speed as a multiple of the recorded pace (untracked).
    pub fn speed(&self) -> f64 {
        RATES[self.rate.get_untracked().min(RATES.len() - 1)]
    }

    /// Chooses the speed at index `i` of [`RATES`], the fastest beyond it.
    pub fn choose_rate(&self, i: usize) {
        self.rate.set(i.min(RATES.len() - 1));
    }

    /// Chooses the offered speed nearest to `multiple` of the recorded pace.
    pub fn choose_speed(&self, multiple: f64) {
        self.choose_rate(nearest_rate(multiple));
    }
}

/// The index into [`RATES`] of the speed nearest to `multiple`, by ratio
/// (3× takes 4×, 1.4× takes 1×); not a positive number: the recorded pace.
pub fn nearest_rate(multiple: f64) -> usize {
    if !(multiple > 0.0 && multiple.is_finite()) {
        return RECORDED_PACE;
    }
    let distance = |r: f64| (r.ln() - multiple.ln()).abs();
    (0..RATES.len())
        .min_by(|&a, &b| distance(RATES[a]).total_cmp(&distance(RATES[b])))
        .unwrap_or(RECORDED_PACE)
}

impl Default for Playhead {
    fn default() -> Self {
        Playhead::new()
    }
}

/// Calls `tick` every [`TICK_MS`] for the life of the page, with the ms of
/// wall time since its previous call (more than [`TICK_MS`] when the tab was
/// throttled).
pub fn every_tick(mut tick: impl FnMut(f64) + 'static) {
    spawn_local(async move {
        let mut last = now_ms();
        loop {
            TimeoutFuture::new(TICK_MS).await;
            let now = now_ms();
            let elapsed = now - last;
            last = now;
            tick(elapsed);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_speed_asked_for_takes_the_nearest_offered_one() {
        let taken = |m: f64| RATES[nearest_rate(m)];
        assert_eq!(taken(1.0), 1.0);
        assert_eq!(taken(3.0), 4.0);
        assert_eq!(taken(1.4), 1.0);
        assert_eq!(taken(100.0), 4.0);
        assert_eq!(taken(0.01), 0.25);
        assert_eq!(taken(-2.0), 1.0);
        assert_eq!(taken(f64::NAN), 1.0);
    }
}
