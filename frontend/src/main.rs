//! Mounts the app; everything else lives in the library.

use wasm_bindgen::prelude::wasm_bindgen;

/// The page's Rust heap, counted, so that its live bytes can be read from
/// outside: the phone bench reads them during its soak.
#[global_allocator]
static ALLOCATOR: watchlife_live_heap::Counting = watchlife_live_heap::Counting;

/// Bytes the page's Rust heap holds right now (the model, the views' state,
/// buffers). The wasm memory around it only ever grows, so this is the
/// figure that shows whether the page keeps what it no longer needs. Read
/// through the app's exports, e.g. from the `TrunkApplicationStarted`
/// event's `detail.wasm`.
#[wasm_bindgen]
pub fn heap_live_bytes() -> f64 {
    watchlife_live_heap::live_bytes() as f64
}

fn main() {
    leptos::mount::mount_to_body(watchlife_frontend::App);
}
