//! The compare view's one clock: the time since each recording started,
//! shared by both sides, so that play, pause, speed and seeking move them
//! together and each shows its own recording at the same offset from its
//! start.

use super::side::Side;
use crate::playhead::{Playhead, every_tick};
use crate::replay::Status;
use crate::view_state::ViewState;
use leptos::prelude::*;

/// The clock. `Copy`: handles only.
#[derive(Clone, Copy)]
pub struct CompareClock {
    /// Both recordings' position (ms since their starts), speed, and end
    /// (the longer one's).
    pub head: Playhead,
    /// Turns of the clock so far, paused or not: a reader can tell that
    /// time went by without measuring it.
    pub turns: RwSignal<u64>,
    sides: StoredValue<[Side; 2]>,
    view: ViewState,
}

impl CompareClock {
    pub fn new(sides: [Side; 2], view: ViewState) -> CompareClock {
        CompareClock {
            head: Playhead::new(),
            turns: RwSignal::new(0),
            sides: StoredValue::new(sides),
            view,
        }
    }

    /// The sides whose recordings play (loaded; a side that failed is left out).
    fn playing(&self) -> Vec<Side> {
        self.sides.with_value(|sides| {
            sides
                .iter()
                .copied()
                .filter(|s| s.replay.status.get_untracked() == Status::Ready)
                .collect()
        })
    }

    /// Whether every side has loaded or failed, and one at least plays
    /// (tracked).
    pub fn ready(&self) -> bool {
        let statuses: Vec<Status> = self
            .sides
            .with_value(|sides| sides.iter().map(|s| s.replay.status.get()).collect());
        statuses.contains(&Status::Ready)
            && statuses
                .iter()
                .all(|s| matches!(s, Status::Ready | Status::Failed { .. }))
    }

    /// The longer recording's length, ms (tracked).
    pub fn duration_ms(&self) -> f64 {
        self.sides.with_value(|sides| {
            sides
                .iter()
                .filter(|s| s.replay.status.get() == Status::Ready)
                .map(|s| s.replay.duration_ms.get())
                .fold(0.0, f64::max)
        })
    }

    /// Starts the clock; it runs for the life of the page.
    pub fn start(self) {
        every_tick(move |elapsed| {
            self.turns.update(|t| *t += 1);
            let running = self.ready_untracked()
                && !self.view.paused.get_untracked()
                && !self.head.ended.get_untracked();
            if running {
                self.advance(self.head.position_ms.get_untracked() + elapsed * self.head.speed());
            }
        });
    }

    fn ready_untracked(&self) -> bool {
        untrack(|| self.ready())
    }

    /// Moves both sides on to `target`, each no further than its own end;
    /// at the longer one's end, once both have drawn everything, starts
    /// over (looping) or stops.
    fn advance(&self, target: f64) {
        let before = self.head.position_ms.get_untracked();
        let duration = untrack(|| self.duration_ms());
        for side in self.playing() {
            let end = side.replay.duration_ms.get_untracked();
            side.replay.advance_to(target.min(end));
            // Both sides read the one clock's offset, the same on each.
            side.replay.head.position_ms.set(target.min(end));
            if before < end && target >= end {
                side.model.settle();
            }
        }
        self.head.position_ms.set(target.min(duration));
        // Ended once every side has drawn its last event, not when the last
        // frame was fed (the page's one clock, see `crate::backlog`).
        let drawn = || self.playing().iter().all(|s| s.model.caught_up());
        if target >= duration && drawn() {
            if self.view.looping.get_untracked() {
                self.seek(0.0);
            } else {
                self.head.ended.set(true);
            }
        }
    }

    /// Shows both recordings as they were `t_ms` after their starts.
    pub fn seek(&self, t_ms: f64) {
        let duration = untrack(|| self.duration_ms());
        let t_ms = t_ms.clamp(0.0, duration);
        for side in self.playing() {
            side.replay.seek(t_ms);
        }
        self.head.position_ms.set(t_ms);
        self.head.ended.set(t_ms >= duration && t_ms > 0.0);
    }

    /// Play or pause both; at the end, play both again from their starts.
    pub fn toggle(&self) {
        if self.head.ended.get_untracked() {
            self.seek(0.0);
            self.view.paused.set(false);
        } else {
            self.view.paused.update(|p| *p = !*p);
        }
    }
}
