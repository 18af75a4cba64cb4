//! Drives the animation: one `requestAnimationFrame` loop advances its clock
//! unless paused, launches the held events whose turn has come, shows the
//! model what the animation has reached (the page's one clock, see
//! [`crate::backlog`]), and bumps a tick signal that the token layer redraws
//! on.

use crate::animator::{AnimState, Feed};
use crate::event_row::EventRow;
use crate::model::{Model, now_ms};
use crate::view_state::ViewState;
use leptos::prelude::*;
use watchlife_protocol::WatchEvent;

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
    /// What the animation shows: it lets go of what the model holds.
    model: Model,
}

impl Player {
    /// Starts the frame loop for the life of the page.
    pub fn start(model: Model, view: ViewState) -> Player {
        let player = Player {
            state: StoredValue::new(AnimState::default()),
            tick: RwSignal::new(0),
            reduced_motion: crate::media::follow(crate::media::REDUCED_MOTION_QUERY),
            model,
        };
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

    /// Events not shown yet (waiting for a token, or behind one), followed
    /// frame by frame.
    pub fn waiting(&self) -> usize {
        self.tick.track();
        self.model
            .backlog
            .with_value(|b| b.events() + self.state.with_value(|s| s.reruns.len()))
    }

    /// While paused, lets the next event travel.
    pub fn step(&self) {
        self.state.update_value(AnimState::step);
        self.tick.update(|t| *t += 1);
    }

    /// Shows at once everything held, with no tokens: the page catches up
    /// with what has arrived.
    pub fn catch_up(&self) {
        let mut out = Vec::new();
        self.model.backlog.update_value(|b| {
            self.state.update_value(|s| {
                s.catch_up(b, &mut out);
            });
        });
        self.model.show(out);
        self.model.keep_time();
        self.tick.update(|t| *t += 1);
    }
}

fn next_frame(player: Player, model: Model, view: ViewState, last: f64) {
    request_animation_frame(move || {
        let now = now_ms();
        let paused = view.paused.get_untracked();
        let journey = view.journey_ms_untracked();
        let filters = view.filters_untracked();
        let mut out = Vec::new();
        let changed = model
            .backlog
            .try_update_value(|backlog| {
                player.state.try_update_value(|s| {
                    let before = (s.launched, backlog.len(), s.skipped_total);
                    let mut feed = Feed {
                        backlog,
                        shows: |e: &WatchEvent| filters.shows(e),
                        out: &mut out,
                    };
                    s.frame(now - last, paused, journey, &mut feed);
                    let clock = s.clock;
                    let in_flight = s.active.iter().filter(|t| t.arrival() > clock).count();
                    model.in_flight.set_value(in_flight);
                    !s.active.is_empty() || before != (s.launched, backlog.len(), s.skipped_total)
                })
            })
            .flatten()
            .unwrap_or(false);
        model.show(out);
        if !paused {
            model.keep_time();
        }
        if changed {
            player.tick.update(|t| *t += 1);
        }
        next_frame(player, model, view, now);
    });
}
