//! What a JavaScript error says, for the page's own messages.

use wasm_bindgen::{JsCast, JsValue};

/// A JavaScript error's message (or the thrown value as text).
pub fn message(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"))
}
