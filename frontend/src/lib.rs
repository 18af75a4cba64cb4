//! The watchlife browser app.
//!
//! # Layout
//! - [`model`]: what the page knows — connection status, the bridge's hello,
//!   recent events — as signals, updated by one function per frame.
//! - [`connection`]: the WebSocket to the bridge, reconnecting with backoff,
//!   resuming from the last `seq`, and noticing a stalled link.
//! - [`components`]: what is drawn.

pub mod components;
pub mod connection;
pub mod model;

use leptos::prelude::*;

/// The whole page.
#[component]
pub fn App() -> impl IntoView {
    let model = model::Model::new();
    provide_context(model);
    connection::connect(model);
    view! {
        <components::header::Header/>
        <main>
            <components::reflectors::Reflectors/>
            <components::event_log::EventLog/>
        </main>
    }
}
