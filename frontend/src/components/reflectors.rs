//! The Reflector of each resource, in its current state.

use crate::model::Model;
use leptos::prelude::*;
use watchlife_protocol::ReflectorState;

/// One line per watched resource: what its Reflector is doing now.
#[component]
pub fn Reflectors() -> impl IntoView {
    let model = expect_context::<Model>();
    let rows = move || model.reflectors.get().into_iter().collect::<Vec<_>>();
    view! {
        <section class="reflectors" aria-label="Reflectors">
            <For each=rows key=|(resource, state)| (resource.clone(), describe(state)) let:row>
                <div class="reflector" data-resource=row.0.clone()>
                    <span class="reflector-resource">{row.0.clone()}</span>
                    <span class="reflector-state">{describe(&row.1)}</span>
                </div>
            </For>
        </section>
    }
}

/// The state in the words drawn on the Reflector's node.
pub fn describe(state: &ReflectorState) -> String {
    match state {
        ReflectorState::ListStarted { .. } => "LIST…".into(),
        ReflectorState::ListFinished {
            count,
            resource_version,
        } => {
            format!("LIST: {count} objects at RV {resource_version}")
        }
        ReflectorState::WatchStarted { resource_version } => {
            format!("WATCH from RV {resource_version}")
        }
        ReflectorState::Bookmark { resource_version } => {
            format!("BOOKMARK at RV {resource_version}")
        }
        ReflectorState::WatchEnded {
            resource_version, ..
        } => {
            format!("watch ended at RV {resource_version}; re-watching")
        }
        ReflectorState::Gone {
            resource_version, ..
        } => format!("410 Gone at RV {resource_version}"),
        ReflectorState::Relist { .. } => "RELIST".into(),
        ReflectorState::Backoff { delay_ms, .. } => format!("backoff {delay_ms} ms"),
    }
}
