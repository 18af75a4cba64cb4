//! Lists whose rows come and go for as long as the page is open, drawn
//! under an owner that is renewed now and then.
//!
//! leptos's `<For>` gives each row a reactive owner of its own, a child of
//! the owner the `<For>` was built under. That parent keeps a pointer to
//! every child it ever had, and with it the child's allocation (about 85
//! bytes of wasm memory), until the parent itself is cleaned up. A list
//! whose rows change for hours (a menu of the demo's objects, renamed as
//! the story goes) would hold every row it ever drew. Drawing the list in
//! a closure that runs again when a generation changes cleans the old
//! owner, and every pointer with it.
//!
//! It is not enough for a list redrawn many times a second: the event log
//! drew about 200 rows a second through a renewed `<For>` and its wasm
//! memory still grew by about 1.5 MiB a minute, so it draws its rows in
//! place instead (`event_log.rs`).

use leptos::prelude::*;

/// `draw`, drawn again from scratch each time `generation` changes.
pub fn renewed<V>(
    generation: Memo<u64>,
    draw: impl Fn() -> V + Send + Sync + 'static,
) -> impl IntoView
where
    V: IntoView + 'static,
{
    move || {
        generation.track();
        draw()
    }
}
