//! The cluster's status line, beside the link badge: "cluster unreachable
//! since 12:01:03 · retrying in 12 s", "forbidden: watchlife may not list
//! pods (RBAC)", "back since 12:02:10"; the plain words under it and the raw
//! error one click away. Drawn where the connection provides a
//! [`ClusterStatus`] (the live page); nothing elsewhere.

use crate::cluster_status::{ClusterStatus, Line};
use leptos::prelude::*;
use std::time::Duration;

/// How often the countdown is redrawn: twice a second, so a whole second
/// is never skipped.
const TICK: Duration = Duration::from_millis(500);

/// The status line, live.
#[component]
pub fn ClusterStatusLine() -> impl IntoView {
    let status = use_context::<RwSignal<ClusterStatus>>();
    let now = RwSignal::new(js_sys::Date::now());
    if status.is_some() {
        let tick = set_interval_with_handle(move || now.set(js_sys::Date::now()), TICK).ok();
        on_cleanup(move || {
            if let Some(tick) = tick {
                tick.clear();
            }
        });
    }
    let line = Memo::new(move |_| {
        let now = now.get();
        status.and_then(|s| s.with(|s| s.line(now, &wall_clock)))
    });
    let part = move |pick: fn(Line) -> String| move || line.get().map(pick).unwrap_or_default();
    let has_raw = move || line.with(|l| l.as_ref().is_some_and(|l| !l.raw.is_empty()));
    view! {
        <Show when=move || line.with(Option::is_some)>
            <div
                id="cluster-status"
                class="cluster-status"
                data-tone=move || line.with(|l| l.as_ref().map_or("", |l| l.tone.as_str()))
                role="status"
                aria-live="polite"
                title="whether the bridge reaches the cluster (the badge beside it is this page's link to the bridge)"
            >
                <span class="cluster-status-headline">{part(|l| l.headline)}</span>
                <span class="cluster-status-words">{part(|l| l.words)}</span>
                <Show when=has_raw>
                    <details class="cluster-status-raw">
                        <summary>"raw text"</summary>
                        <code>{part(|l| l.raw)}</code>
                    </details>
                </Show>
            </div>
        </Show>
    }
}

/// A wall time (ms since the epoch) as the viewer's clock reads it,
/// `12:01:03`.
fn wall_clock(ms: f64) -> String {
    let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(ms));
    format!(
        "{:02}:{:02}:{:02}",
        date.get_hours(),
        date.get_minutes(),
        date.get_seconds()
    )
}
