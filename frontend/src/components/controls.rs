//! The toolbar: pause, step, speed, filters, captions, presenter mode,
//! theme, and the list of shortcuts.

use crate::model::Model;
use crate::player::Player;
use crate::throttle::throttled;
use crate::view_query::{SPEEDS, Theme};
use crate::view_state::ViewState;
use leptos::prelude::*;

/// Event types a viewer can filter on, as the API spells them.
const EVENT_TYPES: [&str; 5] = ["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"];
/// Shortest time between two redraws of the namespaces offered as objects
/// come and go: a new namespace is rare, and a busy demo would otherwise
/// rebuild the list on every frame.
const NAMESPACES_REDRAW_MS: f64 = 1_000.0;

#[component]
pub fn Controls() -> impl IntoView {
    let view = expect_context::<ViewState>();
    view! {
        <nav class="controls" aria-label="Playback and filters">
            <Playback/>
            <SpeedSelect/>
            <Filters/>
            <label class="toggle">
                <input
                    id="captions"
                    type="checkbox"
                    prop:checked=move || view.captions.get().unwrap_or(true)
                    on:change=move |ev| view.captions.set(Some(event_target_checked(&ev)))
                />
                " captions"
            </label>
            <ThemeSelect/>
            <button id="presenter" on:click=move |_| view.presenter.set(true) title="Presenter mode (P)">
                "presenter"
            </button>
            <button id="help-button" on:click=move |_| view.help.update(|h| *h = !*h) title="Keyboard shortcuts (?)">
                "?"
            </button>
        </nav>
    }
}

/// Pause, step, and how many events wait for a lane.
#[component]
fn Playback() -> impl IntoView {
    let view = expect_context::<ViewState>();
    let player = expect_context::<Player>();
    view! {
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
            {move || match (view.paused.get(), player.waiting()) {
                (true, n) => format!("paused · {n} waiting"),
                (false, 0) => String::new(),
                (false, n) => format!("{n} waiting"),
            }}
        </span>
    }
}

/// How fast tokens travel.
#[component]
fn SpeedSelect() -> impl IntoView {
    let view = expect_context::<ViewState>();
    let options = SPEEDS
        .iter()
        .enumerate()
        .map(|(i, (name, _))| (i.to_string(), *name))
        .collect();
    let is_chosen = move |value: &str| value.parse() == Ok(view.speed.get());
    let choose = move |value: String| {
        if let Ok(i) = value.parse() {
            view.speed.set(i);
        }
    };
    view! { <LabelledSelect words="speed " id="speed" options is_chosen choose/> }
}

/// Which events the log and the animation show: by resource, namespace,
/// type and name.
#[component]
fn Filters() -> impl IntoView {
    let model = expect_context::<Model>();
    let view = expect_context::<ViewState>();
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
    let event_types = || EVENT_TYPES.map(String::from).to_vec();
    view! {
        <span class="filters" role="group" aria-label="Filters">
            <FilterSelect name="resource " id="filter-resource" chosen=view.resource offered=resources/>
            <FilterSelect name="namespace " id="filter-namespace" chosen=view.namespace offered=namespaces/>
            <FilterSelect name="type " id="filter-type" chosen=view.event_type offered=event_types/>
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
    }
}

/// A filter's select: "all", then each value `offered`, the one in
/// `chosen` selected.
#[component]
fn FilterSelect(
    name: &'static str,
    id: &'static str,
    chosen: RwSignal<String>,
    offered: impl Fn() -> Vec<String> + Send + Sync + 'static,
) -> impl IntoView {
    view! {
        <label>
            {name}
            <select id=id on:change=move |ev| chosen.set(event_target_value(&ev))>
                <option value="" selected=move || chosen.get().is_empty()>"all"</option>
                // The options are made again whenever `offered` changes, so
                // each one's `selected` is a value of this closure, not a
                // closure of its own (see `crate::components`).
                {move || {
                    let now = chosen.get();
                    offered()
                        .into_iter()
                        .map(|v| {
                            let selected = v == now;
                            view! { <option value=v.clone() selected=selected>{v.clone()}</option> }
                        })
                        .collect_view()
                }}
            </select>
        </label>
    }
}

/// The page's colours: the system's, light or dark.
#[component]
fn ThemeSelect() -> impl IntoView {
    let view = expect_context::<ViewState>();
    let options = [Theme::System, Theme::Light, Theme::Dark]
        .into_iter()
        .map(|t| (t.as_str().to_string(), t.as_str()))
        .collect();
    let is_chosen = move |value: &str| view.theme.get().as_str() == value;
    let choose = move |value: String| {
        view.theme.set(match value.as_str() {
            "light" => Theme::Light,
            "dark" => Theme::Dark,
            _ => Theme::System,
        })
    };
    view! { <LabelledSelect words="theme " id="theme" options is_chosen choose/> }
}

/// A select with its words before it: an option per `(value, text)` of
/// `options`, selected while `is_chosen` says so of its value; `choose` gets
/// the value chosen.
#[component]
fn LabelledSelect<S, C>(
    words: &'static str,
    id: &'static str,
    options: Vec<(String, &'static str)>,
    is_chosen: S,
    choose: C,
) -> impl IntoView
where
    S: Fn(&str) -> bool + Copy + Send + Sync + 'static,
    C: Fn(String) + 'static,
{
    view! {
        <label>
            {words}
            <select id=id on:change=move |ev| choose(event_target_value(&ev))>
                {options
                    .into_iter()
                    .map(|(value, text)| {
                        let v = value.clone();
                        view! { <option value=value selected=move || is_chosen(&v)>{text}</option> }
                    })
                    .collect_view()}
            </select>
        </label>
    }
}
