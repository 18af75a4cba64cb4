//! The toolbar: pause, step, speed, filters, captions, presenter mode,
//! theme, and the list of shortcuts.

use crate::model::Model;
use crate::player::Player;
use crate::throttle::throttled;
use crate::view_state::{SPEEDS, Theme, ViewState};
use leptos::prelude::*;

/// Event types a viewer can filter on, as the API spells them.
const EVENT_TYPES: [&str; 5] = ["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"];
/// Shortest time between two redraws of the namespaces offered as objects
/// come and go: a new namespace is rare, and a busy demo would otherwise
/// rebuild the list on every frame.
const NAMESPACES_REDRAW_MS: f64 = 1_000.0;

#[component]
pub fn Controls() -> impl IntoView {
    let model = expect_context::<Model>();
    let view = expect_context::<ViewState>();
    let player = expect_context::<Player>();
    let resources = move || {
        model
            .hello
            .with(|h| h.as_ref().map(|h| h.resources.clone()).unwrap_or_default())
    };
    // The namespaces follow which objects exist, not their every change.
    let roster = throttled(NAMESPACES_REDRAW_MS, move || model.roster.track());
    let namespaces = move || {
        roster.track();
        let mut ns: Vec<String> = model.objects.with_untracked(|o| {
            o.values()
                .filter_map(|h| h.target.namespace.clone())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect()
        });
        let chosen = view.namespace.get();
        if !chosen.is_empty() && !ns.contains(&chosen) {
            ns.push(chosen);
        }
        ns
    };
    let waiting = move || {
        player.tick.track();
        player.state.with_value(|s| s.waiting.len())
    };
    view! {
        <nav class="controls" aria-label="Playback and filters">
            <button
                id="pause"
                aria-pressed=move || view.paused.get().to_string()
                on:click=move |_| view.paused.update(|p| *p = !*p)
                title="Pause or resume (Space)"
            >
                {move || if view.paused.get() { "resume" } else { "pause" }}
            </button>
            <button
                id="step"
                disabled=move || !view.paused.get()
                on:click=move |_| player.step()
                title="Let the next event travel (→)"
            >
                "step →"
            </button>
            <span class="waiting" aria-live="polite">
                {move || match (view.paused.get(), waiting()) {
                    (true, n) => format!("paused · {n} waiting"),
                    (false, 0) => String::new(),
                    (false, n) => format!("{n} waiting"),
                }}
            </span>
            <label>
                "speed "
                <select
                    id="speed"
                    on:change=move |ev| {
                        if let Ok(i) = event_target_value(&ev).parse() {
                            view.speed.set(i);
                        }
                    }
                >
                    {SPEEDS
                        .iter()
                        .enumerate()
                        .map(|(i, (name, _))| {
                            view! { <option value=i.to_string() selected=move || view.speed.get() == i>{*name}</option> }
                        })
                        .collect_view()}
                </select>
            </label>
            <span class="filters" role="group" aria-label="Filters">
                <label>
                    "resource "
                    <select id="filter-resource" on:change=move |ev| view.resource.set(event_target_value(&ev))>
                        <option value="" selected=move || view.resource.get().is_empty()>"all"</option>
                        {move || {
                            resources()
                                .into_iter()
                                .map(|r| {
                                    let r2 = r.clone();
                                    view! { <option value=r.clone() selected=move || view.resource.get() == r2>{r.clone()}</option> }
                                })
                                .collect_view()
                        }}
                    </select>
                </label>
                <label>
                    "namespace "
                    <select id="filter-namespace" on:change=move |ev| view.namespace.set(event_target_value(&ev))>
                        <option value="" selected=move || view.namespace.get().is_empty()>"all"</option>
                        {move || {
                            namespaces()
                                .into_iter()
                                .map(|n| {
                                    let n2 = n.clone();
                                    view! { <option value=n.clone() selected=move || view.namespace.get() == n2>{n.clone()}</option> }
                                })
                                .collect_view()
                        }}
                    </select>
                </label>
                <label>
                    "type "
                    <select id="filter-type" on:change=move |ev| view.event_type.set(event_target_value(&ev))>
                        <option value="" selected=move || view.event_type.get().is_empty()>"all"</option>
                        {EVENT_TYPES
                            .iter()
                            .map(|t| {
                                view! { <option value=*t selected=move || view.event_type.get() == *t>{*t}</option> }
                            })
                            .collect_view()}
                    </select>
                </label>
                <label>
                    "name "
                    <input
                        id="filter-search"
                        type="search"
                        placeholder="namespace/name"
                        prop:value=move || view.search.get()
                        on:input=move |ev| view.search.set(event_target_value(&ev))
                    />
                </label>
            </span>
            <label class="toggle">
                <input
                    id="captions"
                    type="checkbox"
                    prop:checked=move || view.captions.get().unwrap_or(true)
                    on:change=move |ev| view.captions.set(Some(event_target_checked(&ev)))
                />
                " captions"
            </label>
            <label>
                "theme "
                <select
                    id="theme"
                    on:change=move |ev| {
                        view.theme.set(match event_target_value(&ev).as_str() {
                            "light" => Theme::Light,
                            "dark" => Theme::Dark,
                            _ => Theme::System,
                        })
                    }
                >
                    {[Theme::System, Theme::Light, Theme::Dark]
                        .into_iter()
                        .map(|t| view! { <option value=t.as_str() selected=move || view.theme.get() == t>{t.as_str()}</option> })
                        .collect_view()}
                </select>
            </label>
            <button id="presenter" on:click=move |_| view.presenter.set(true) title="Presenter mode (P)">
                "presenter"
            </button>
            <button id="help-button" on:click=move |_| view.help.update(|h| *h = !*h) title="Keyboard shortcuts (?)">
                "?"
            </button>
        </nav>
    }
}
