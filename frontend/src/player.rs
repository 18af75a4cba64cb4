//! Drives the animation: one `requestAnimationFrame` loop hands new events
//! to the tokens' state, advances its clock unless paused, and bumps a tick
//! signal that the token layer redraws on.

use crate::animator::AnimState;
use crate::event_row::EventRow;
use crate::model::{Model, now_ms};
use crate::view_state::ViewState;
use leptos::prelude::*;

/// The animation, shared by the pipeline (draws it), the controls (pause,
/// step) and the event log (follow). `Copy`: handles only.
#[derive(Clone, Copy)]
pub struct Player {
    /// Not reactive: changed every frame; readers track [`Player::tick`].
    pub state: StoredValue<AnimState>,
    /// Bumped after every frame that changed what is drawn.
    pub tick: RwSignal<u64>,
    /// The viewer prefers reduced motion: tokens step instead of glide.
    /// Follows the system setting as it changes, without a reload.
    pub reduced_motion: RwSignal<bool>,
}

impl Player {
    /// Starts the frame loop for the life of the page.
    pub fn start(model: Model, view: ViewState) -> Player {
        let player = Player {
            state: StoredValue::new(AnimState::default()),
            tick: RwSignal::new(0),
            reduced_motion: RwSignal::new(false),
        };
        follow_reduced_motion(player.reduced_motion);
        next_frame(player, model, view, now_ms());
        player
    }

    /// Replays `row` next and narrates it; while paused, lets it travel.
    pub fn follow(&self, row: EventRow, paused: bool) {
        self.state.update_value(|s| {
            s.follow(row);
            if paused {
                s.step();
            }
        });
        self.tick.update(|t| *t += 1);
    }

    /// Events waiting for a lane, followed frame by frame.
    pub fn waiting(&self) -> usize {
        self.tick.track();
        self.state.with_value(|s| s.waiting.len())
    }

    /// While paused, lets the next event travel.
    pub fn step(&self) {
        self.state.update_value(AnimState::step);
        self.tick.update(|t| *t += 1);
    }
}

fn next_frame(player: Player, model: Model, view: ViewState, last: f64) {
    request_animation_frame(move || {
        // The frames received since the last animation frame, all at once.
        model.flush();
        let now = now_ms();
        let incoming = model
            .arrivals
            .try_update_value(std::mem::take)
            .unwrap_or_default();
        let paused = view.paused.get_untracked();
        let journey = view.journey_ms_untracked();
        let filters = view.filters_untracked();
        let changed = player
            .state
            .try_update_value(|s| {
                let before = (s.launched, s.waiting.len(), s.skipped_total);
                for row in incoming {
                    if filters.shows(&row.event) {
                        s.push(row);
                    }
                }
                s.frame(now - last, paused, journey);
                !s.active.is_empty() || before != (s.launched, s.waiting.len(), s.skipped_total)
            })
            .unwrap_or(false);
        if changed {
            player.tick.update(|t| *t += 1);
        }
        next_frame(player, model, view, now);
    });
}

/// Keeps `reduced` equal to whether the viewer asked the system for less
/// motion, now and whenever the setting changes.
fn follow_reduced_motion(reduced: RwSignal<bool>) {
    use wasm_bindgen::JsCast;
    use wasm_bindgen::closure::Closure;
    let Some(query) = web_sys::window().and_then(|w| {
        w.match_media("(prefers-reduced-motion: reduce)")
            .ok()
            .flatten()
    }) else {
        return;
    };
    reduced.set(query.matches());
    let watched = query.clone();
    let on_change = Closure::<dyn Fn()>::new(move || reduced.set(watched.matches()));
    query.set_onchange(Some(on_change.as_ref().unchecked_ref()));
    // The listener lives as long as the page.
    on_change.forget();
}
