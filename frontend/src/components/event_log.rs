//! The live log of recent events.

use crate::model::{EventRow, Model};
use leptos::prelude::*;

/// Recent events, newest first: type, kind, namespace/name, resourceVersion.
#[component]
pub fn EventLog() -> impl IntoView {
    let model = expect_context::<Model>();
    let rows = move || {
        model
            .events
            .with(|e| e.iter().rev().cloned().collect::<Vec<_>>())
    };
    let dropped = move || model.dropped.get();
    view! {
        <section class="event-log" aria-label="Live events">
            <h2>"Live events"</h2>
            <Show when=move || { dropped() > 0 }>
                <p class="dropped">{move || format!("{} older events dropped from view", dropped())}</p>
            </Show>
            <table>
                <thead>
                    <tr><th>"seq"</th><th>"event"</th><th>"kind"</th><th>"namespace/name"</th><th>"resourceVersion"</th></tr>
                </thead>
                <tbody id="events">
                    <For each=rows key=|row| row.seq let:row>
                        <Row row/>
                    </For>
                </tbody>
            </table>
        </section>
    }
}

#[component]
fn Row(row: EventRow) -> impl IntoView {
    let e = row.event;
    let kind = e.event_type.as_str();
    view! {
        <tr class="event-row" data-type=kind data-rv=e.resource_version.clone() data-initial=e.initial.to_string()>
            <td class="seq">{row.seq}</td>
            <td><span class=format!("badge {}", kind.to_lowercase())>{kind}</span></td>
            <td class="kind">{e.target.kind.clone()}</td>
            <td class="name">{e.target.key()}</td>
            <td class="rv">{e.resource_version.clone()}</td>
        </tr>
    }
}
