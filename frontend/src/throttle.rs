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

/// How often a panel off screen is redrawn: what one scrolls to is at most
/// this old for the frame it takes the browser to say it came on screen.
pub const OFF_SCREEN_MS: f64 = 1_000.0;

/// A counter bumped after `source` (a closure that tracks signals) changes,
/// at most once per `period_ms` of page time.
pub fn throttled(period_ms: f64, source: impl Fn() + 'static) -> ReadSignal<u64> {
    paced(move || period_ms, source).0
}

/// As [`throttled`], for a panel that can be off screen: at most once per
/// `period_ms` while `on_screen`, once per [`OFF_SCREEN_MS`] while not,
/// and at once when it comes on screen.
pub fn throttled_on_screen(
    period_ms: f64,
    on_screen: ReadSignal<bool>,
    source: impl Fn() + 'static,
) -> ReadSignal<u64> {
    let period = move || match on_screen.get_untracked() {
        true => period_ms,
        false => OFF_SCREEN_MS,
    };
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
/// change, and the bump that moves it at once.
fn paced(
    period: impl Fn() -> f64 + 'static,
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
        let wait = last.get_value() + period() - now_ms();
        if wait <= 0.0 {
            bump();
            return;
        }
        pending.set_value(true);
        set_timeout(
            move || {
                pending.try_set_value(false);
                bump();
            },
            Duration::from_millis(wait.ceil() as u64),
        );
    });
    if let Some(model) = use_context::<Model>() {
        Effect::new(move |_| {
            model.settled.track();
            bump();
        });
    }
    (bumps, bump)
}

/// The model's clock ([`Model::now`]), read again every `period_ms` for as
/// long as the component that calls this lives: what a panel of rates or
/// ages tracks, so that it is redrawn at that pace even with no event.
pub fn clock_every(model: Model, period_ms: u64) -> RwSignal<f64> {
    let now = RwSignal::new(model.now());
    let handle = set_interval_with_handle(
        move || now.set(model.now()),
        Duration::from_millis(period_ms),
    );
    on_cleanup(move || {
        if let Ok(h) = handle {
            h.clear();
        }
    });
    now
}
