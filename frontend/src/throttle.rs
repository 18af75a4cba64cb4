//! Redrawing a costly panel at most a few times a second, however often what
//! it shows changes.
//!
//! A panel tracks the signal [`throttled`] returns instead of the model's:
//! the first change after a quiet period comes through at once, so a slow
//! stream looks as live as before; changes within the period are gathered
//! and come through together at its end, so the last one is always drawn.
//! When the stream stands still ([`Model::settle`]), everything comes
//! through at once.
//!
//! A panel of numbers that age (rates, ages) reads [`clock_every`] instead:
//! the model's clock, moved on at a fixed pace.

use crate::model::{Model, now_ms};
use leptos::prelude::*;
use std::time::Duration;

/// A counter bumped after `source` (a closure that tracks signals) changes,
/// at most once per `period_ms` of page time.
pub fn throttled(period_ms: f64, source: impl Fn() + 'static) -> ReadSignal<u64> {
    paced(move || Some(period_ms), source).0
}

/// As [`throttled`], for a panel that can be off screen: at most once per
/// `period_ms` while `on_screen`, not at all while not, and at once when it
/// comes on screen. A phone shows the pipeline; the panels below it would
/// otherwise be redrawn for no one ([`crate::on_screen`] counts a panel as on
/// screen a screen's height ahead, so it is drawn before it is seen).
pub fn throttled_on_screen(
    period_ms: f64,
    on_screen: ReadSignal<bool>,
    source: impl Fn() + 'static,
) -> ReadSignal<u64> {
    let period = move || on_screen.get_untracked().then_some(period_ms);
    let (bumps, bump) = paced(period, source);
    Effect::new(move |was: Option<bool>| {
        let now = on_screen.get();
        if now && was == Some(false) {
            bump();
        }
        now
    });
    bumps
}

/// The counter of [`throttled`] with the period `period` gives at each
/// change (`None`: no redraw for now, the change waits for a bump), and the
/// bump that moves it at once.
fn paced(
    period: impl Fn() -> Option<f64> + Copy + 'static,
    source: impl Fn() + 'static,
) -> (ReadSignal<u64>, impl Fn() + Copy + 'static) {
    let (bumps, set_bumps) = signal(0_u64);
    let last = StoredValue::new(f64::NEG_INFINITY);
    let pending = StoredValue::new(false);
    let bump = move || {
        last.try_set_value(now_ms());
        set_bumps.try_update(|n| *n += 1);
    };
    Effect::new(move |_| {
        source();
        if pending.get_value() {
            return;
        }
        let Some(period_ms) = period() else {
            return;
        };
        let wait = last.get_value() + period_ms - now_ms();
        if wait <= 0.0 {
            bump();
            return;
        }
        pending.set_value(true);
        set_timeout(
            move || {
                pending.try_set_value(false);
                if period().is_some() {
                    bump();
                }
            },
            Duration::from_millis(wait.ceil() as u64),
        );
    });
    if let Some(model) = use_context::<Model>() {
        Effect::new(move |_| {
            model.settled.track();
            if period().is_some() {
                bump();
            }
        });
    }
    (bumps, bump)
}

/// The model's clock ([`Model::now`]), read again every `period_ms` for as
/// long as the component that calls this lives: what a panel of rates or
/// ages tracks, so that it is redrawn at that pace even with no event.
pub fn clock_every(model: Model, period_ms: u64) -> RwSignal<f64> {
    clock(model, period_ms, || true)
}

/// As [`clock_every`], for a panel that can be off screen: the clock stands
/// still while the panel is not `on_screen`, and is read at once when it
/// comes back.
pub fn clock_every_on_screen(
    model: Model,
    period_ms: u64,
    on_screen: ReadSignal<bool>,
) -> RwSignal<f64> {
    let now = clock(model, period_ms, move || on_screen.get_untracked());
    Effect::new(move |was: Option<bool>| {
        let visible = on_screen.get();
        if visible && was == Some(false) {
            now.set(model.now());
        }
        visible
    });
    now
}

/// The clock of [`clock_every`], read at each period while `running`.
fn clock(model: Model, period_ms: u64, running: impl Fn() -> bool + 'static) -> RwSignal<f64> {
    let now = RwSignal::new(model.now());
    let handle = set_interval_with_handle(
        move || {
            if running() {
                now.set(model.now());
            }
        },
        Duration::from_millis(period_ms),
    );
    on_cleanup(move || {
        if let Ok(h) = handle {
            h.clear();
        }
    });
    now
}
