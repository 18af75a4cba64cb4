//! The replay page inside a `<watchlife-player>` (`static/player.js`): it
//! tells the element that hosts it where the replay stands, and takes the
//! element's `play`, `pause` and `seek`. Both ways go by `postMessage`, so
//! the element works whether or not the page is served from the same origin.
//!
//! To the host, each time something changed (checked every
//! [`REPORT_EVERY_MS`]), one message:
//! `{watchlife: "state", status, currentTime, duration, paused, ended,
//! height, markers: [{time, label}], reached: {index, count} | null}`, times
//! in seconds, `height` the page's in CSS px. From the host:
//! `{watchlife: "play" | "pause"}` and `{watchlife: "seek", time}`.
//! Nothing is sent unless the page is in a frame; messages from anywhere
//! but the parent window are ignored.
//!
//! The in-page demo has no replay to drive: it tells its height alone,
//! `{watchlife: "size", height}` ([`report_size`]).

#[cfg(feature = "replay")]
use crate::replay::{Replay, Status};
#[cfg(feature = "replay")]
use crate::view_state::ViewState;
use gloo_timers::future::TimeoutFuture;
#[cfg(feature = "replay")]
use js_sys::Array;
use js_sys::{Object, Reflect};
use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::JsValue;

/// How often the page checks for news for its host: a timeline's second
/// shows in time, and an idle page costs next to nothing.
const REPORT_EVERY_MS: u32 = 100;

/// Starts talking to the hosting element, when the page is in a frame.
#[cfg(feature = "replay")]
pub fn serve(replay: Replay, view: ViewState) {
    let Some(parent) = parent() else {
        return;
    };
    let commands = window_event_listener(leptos::ev::message, move |ev| {
        let from_parent = ev
            .source()
            .is_some_and(|s| JsValue::from(s) == JsValue::from(parent.clone()));
        if from_parent {
            obey(replay, view, &ev.data());
        }
    });
    // For the life of the page.
    std::mem::forget(commands);
    tell_changes(move || state(replay, view));
}

/// Tells the hosting element the page's height, when the page is in a frame.
pub fn report_size() {
    if parent().is_none() {
        return;
    }
    tell_changes(|| {
        let message = Object::new();
        let _ = Reflect::set(&message, &"watchlife".into(), &"size".into());
        let _ = Reflect::set(&message, &"height".into(), &page_height().into());
        message
    });
}

/// Posts `message()` to the parent window whenever it differs from the
/// last one posted, checking every [`REPORT_EVERY_MS`].
fn tell_changes(message: impl Fn() -> Object + 'static) {
    spawn_local(async move {
        let mut last = String::new();
        loop {
            let state = message();
            // Compared as text: the state is a handful of fields.
            let text = js_sys::JSON::stringify(&state)
                .map(String::from)
                .unwrap_or_default();
            if text != last {
                if let Some(parent) = self::parent() {
                    let _ = parent.post_message(&state, "*");
                }
                last = text;
            }
            TimeoutFuture::new(REPORT_EVERY_MS).await;
        }
    });
}

/// The window hosting this page, if it is in a frame.
fn parent() -> Option<web_sys::Window> {
    let window = web_sys::window()?;
    let parent = window.parent().ok().flatten()?;
    (JsValue::from(parent.clone()) != JsValue::from(window)).then_some(parent)
}

/// Carries out one of the host's commands; anything else is ignored.
#[cfg(feature = "replay")]
fn obey(replay: Replay, view: ViewState, data: &JsValue) {
    let field = |name: &str| Reflect::get(data, &name.into()).unwrap_or(JsValue::UNDEFINED);
    match field("watchlife").as_string().as_deref() {
        Some("play") if replay.head.ended.get_untracked() => replay.restart(),
        Some("play") => view.paused.set(false),
        Some("pause") => view.paused.set(true),
        Some("seek") => {
            if let Some(seconds) = field("time").as_f64().filter(|t| t.is_finite()) {
                replay.seek(seconds * 1000.0);
            }
        }
        _ => {}
    }
}

/// Where the replay stands, as the message to the host.
#[cfg(feature = "replay")]
fn state(replay: Replay, view: ViewState) -> Object {
    let message = Object::new();
    let set = |key: &str, value: JsValue| {
        let _ = Reflect::set(&message, &key.into(), &value);
    };
    let status = match replay.status.get_untracked() {
        Status::Off => "off",
        Status::Loading { .. } => "loading",
        Status::Ready => "ready",
        Status::Failed { .. } => "failed",
    };
    set("watchlife", "state".into());
    set("status", status.into());
    set(
        "currentTime",
        (replay.head.position_ms.get_untracked() / 1000.0).into(),
    );
    set(
        "duration",
        (replay.duration_ms.get_untracked() / 1000.0).into(),
    );
    set("paused", view.paused.get_untracked().into());
    set("ended", replay.head.ended.get_untracked().into());
    set("height", page_height().into());
    let markers: Array = replay.markers.with_untracked(|markers| {
        markers
            .iter()
            .map(|m| {
                let marker = Object::new();
                let _ = Reflect::set(&marker, &"time".into(), &(m.t_ms as f64 / 1000.0).into());
                let _ = Reflect::set(&marker, &"label".into(), &m.label.as_str().into());
                JsValue::from(marker)
            })
            .collect()
    });
    set("markers", markers.into());
    let reached = match replay.reached.get_untracked() {
        Some((index, count)) => {
            let reached = Object::new();
            let _ = Reflect::set(&reached, &"index".into(), &(index as f64).into());
            let _ = Reflect::set(&reached, &"count".into(), &(count as f64).into());
            reached.into()
        }
        None => JsValue::NULL,
    };
    set("reached", reached);
    message
}

/// The page's height in CSS px: its root element's box, which is the
/// content's height whatever the frame's (the root has no height of its own).
fn page_height() -> f64 {
    document()
        .document_element()
        .map_or(0.0, |root| root.get_bounding_client_rect().height().ceil())
}
