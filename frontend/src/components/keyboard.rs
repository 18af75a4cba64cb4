//! Keyboard shortcuts for the whole page (listed in [`super::help::SHORTCUTS`]).

use crate::player::Player;
use crate::view_state::{SPEEDS, Theme, ViewState};
use leptos::ev;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

/// Installs the page-wide key handler. Keys typed into a form field are
/// left to the field.
pub fn install(view: ViewState, player: Player) {
    let handle = window_event_listener(ev::keydown, move |e: web_sys::KeyboardEvent| {
        if e.ctrl_key() || e.meta_key() || e.alt_key() {
            return;
        }
        let in_field = e
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .is_some_and(|el| matches!(el.tag_name().as_str(), "INPUT" | "SELECT" | "TEXTAREA"));
        let key = e.key();
        if in_field && key != "Escape" {
            return;
        }
        // A focused button or row answers Space and Enter itself.
        let on_control = e
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .is_some_and(|el| matches!(el.tag_name().as_str(), "BUTTON" | "TR" | "A"));
        if on_control && matches!(key.as_str(), " " | "Enter") {
            return;
        }
        let handled = match key.as_str() {
            " " => {
                view.paused.update(|p| *p = !*p);
                true
            }
            "ArrowRight" if view.paused.get_untracked() => {
                player.step();
                true
            }
            "+" | "=" => {
                view.speed.update(|s| *s = (*s + 1).min(SPEEDS.len() - 1));
                true
            }
            "-" | "_" => {
                view.speed.update(|s| *s = s.saturating_sub(1));
                true
            }
            "c" | "C" => {
                view.captions.update(|c| *c = Some(!c.unwrap_or(true)));
                true
            }
            "p" | "P" => {
                view.presenter.update(|p| *p = !*p);
                true
            }
            "t" | "T" => {
                view.theme.update(|t| {
                    *t = match t {
                        Theme::System => Theme::Light,
                        Theme::Light => Theme::Dark,
                        Theme::Dark => Theme::System,
                    }
                });
                true
            }
            "?" => {
                view.help.update(|h| *h = !*h);
                true
            }
            "/" => {
                if let Some(el) = document()
                    .get_element_by_id("filter-search")
                    .and_then(|el| el.dyn_into::<web_sys::HtmlElement>().ok())
                {
                    let _ = el.focus();
                }
                true
            }
            "Escape" => {
                view.help.set(false);
                view.presenter.set(false);
                true
            }
            _ => false,
        };
        if handled {
            e.prevent_default();
        }
    });
    // The handler lives as long as the page.
    std::mem::forget(handle);
}
