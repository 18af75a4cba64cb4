//! Keyboard shortcuts for the whole page (listed in [`super::help::SHORTCUTS`]).

use crate::player::Player;
use crate::view_query::{SPEEDS, Theme};
use crate::view_state::ViewState;
use leptos::ev;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

/// Installs the page-wide key handler. Keys typed into a form field are
/// left to the field.
pub fn install(view: ViewState, player: Player) {
    let handle = window_event_listener(ev::keydown, move |e: web_sys::KeyboardEvent| {
        if !left_to_the_target(&e) && act(&e.key(), view, player) {
            e.prevent_default();
        }
    });
    // The handler lives as long as the page.
    std::mem::forget(handle);
}

/// The tag of the element `e` happened in.
fn target_tag(e: &web_sys::KeyboardEvent) -> Option<String> {
    e.target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .map(|el| el.tag_name())
}

/// Whether `e` is not a shortcut: a key with a modifier (the browser's), a
/// key typed into a form field but Escape (the field's), Space or Enter on
/// a focused button, row or link (which answers them itself).
fn left_to_the_target(e: &web_sys::KeyboardEvent) -> bool {
    if e.ctrl_key() || e.meta_key() || e.alt_key() {
        return true;
    }
    let tag = target_tag(e);
    let key = e.key();
    let in_field = matches!(tag.as_deref(), Some("INPUT" | "SELECT" | "TEXTAREA"));
    let on_control = matches!(tag.as_deref(), Some("BUTTON" | "TR" | "A"));
    (in_field && key != "Escape") || (on_control && matches!(key.as_str(), " " | "Enter"))
}

/// Does what `key` is the shortcut for; false when it is none.
fn act(key: &str, view: ViewState, player: Player) -> bool {
    match key {
        " " => view.paused.update(|p| *p = !*p),
        "ArrowRight" if view.paused.get_untracked() => player.step(),
        "+" | "=" => view.speed.update(|s| *s = (*s + 1).min(SPEEDS.len() - 1)),
        "-" | "_" => view.speed.update(|s| *s = s.saturating_sub(1)),
        "c" | "C" => view.captions.update(|c| *c = Some(!c.unwrap_or(true))),
        "p" | "P" => view.presenter.update(|p| *p = !*p),
        "t" | "T" => view.theme.update(|t| *t = next_theme(*t)),
        "?" => view.help.update(|h| *h = !*h),
        "/" => focus_search(),
        "Escape" => {
            view.help.set(false);
            view.presenter.set(false);
        }
        _ => return false,
    }
    true
}

/// The theme after `theme`, in the order the T key goes round them.
fn next_theme(theme: Theme) -> Theme {
    match theme {
        Theme::System => Theme::Light,
        Theme::Light => Theme::Dark,
        Theme::Dark => Theme::System,
    }
}

/// Puts the cursor in the search filter.
fn focus_search() {
    if let Some(el) = document()
        .get_element_by_id("filter-search")
        .and_then(|el| el.dyn_into::<web_sys::HtmlElement>().ok())
    {
        let _ = el.focus();
    }
}
