//! Signals that follow a CSS media query as the page's circumstances change
//! (a system setting, the window's width), without a reload.

use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;

/// Whether the window is a phone's: at most this wide (CSS pixels), the
/// pipeline stacks its stages two to a row.
pub const NARROW_QUERY: &str = "(max-width: 600px)";

/// Whether the viewer asked the system for less motion.
pub const REDUCED_MOTION_QUERY: &str = "(prefers-reduced-motion: reduce)";

/// A signal equal to whether `query` matches, now and whenever that changes
/// (false where the browser cannot tell).
pub fn follow(query: &str) -> RwSignal<bool> {
    let matches = RwSignal::new(false);
    let Some(list) = web_sys::window().and_then(|w| w.match_media(query).ok().flatten()) else {
        return matches;
    };
    matches.set(list.matches());
    let watched = list.clone();
    let on_change = Closure::<dyn Fn()>::new(move || {
        matches.try_set(watched.matches());
    });
    list.set_onchange(Some(on_change.as_ref().unchecked_ref()));
    // The listener lives as long as the page.
    on_change.forget();
    matches
}
