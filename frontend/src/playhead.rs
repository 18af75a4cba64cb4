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
