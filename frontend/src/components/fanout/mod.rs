//! The watch cache's fan-out (demo only): for one resource the page draws
//! (a tab each), the cache's ring of recent events — how full, from which
//! revision to which — and one lane per watcher it dispatches every event to,
//! with how full that watcher's buffer is. While a token passes the watch
//! cache, a copy of it runs down every lane: one cached watch, many watchers.
//!
//! - [`layout`]: where the ring and the lanes stand.
//! - [`cache_block`]: one cache's drawing.

pub mod cache_block;
pub mod layout;

use crate::model::Model;
use crate::on_screen::on_screen;
use crate::view_state::ViewState;
use cache_block::{CacheBlock, Copies, lane_ys};
use layout::{BLOCK_MIN_H, WIDTH, block_h, ring_y};
use leptos::prelude::*;
use watchlife_protocol::CacheState;

/// The caches of the resources the page draws tokens for (the tabs), and
/// the others (only counted).
fn split(model: Model) -> (Vec<CacheState>, Vec<CacheState>) {
    let resources = model
        .hello
        .with(|h| h.as_ref().map(|h| h.resources.clone()).unwrap_or_default());
    model.watch_caches.with(|r| {
        let caches = r.as_ref().map(|r| r.caches.clone()).unwrap_or_default();
        caches
            .into_iter()
            .partition::<Vec<_>, _>(|c| resources.contains(&c.resource))
    })
}

/// The cache drawn: the one `wanted`, else the busiest.
fn chosen(caches: &[CacheState], wanted: Option<String>) -> Option<CacheState> {
    wanted
        .and_then(|w| caches.iter().find(|c| c.resource == w).cloned())
        .or_else(|| {
            caches
                .iter()
                .max_by_key(|c| (c.watchers.len(), std::cmp::Reverse(c.resource.clone())))
                .cloned()
        })
}

/// The caches with no tab that someone watches, as words.
fn others_text(others: Vec<CacheState>) -> String {
    let others = others
        .into_iter()
        .filter(|c| !c.watchers.is_empty())
        .map(|c| {
            let n = c.watchers.len();
            format!(
                "{} ({n} watcher{})",
                c.resource,
                if n == 1 { "" } else { "s" }
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    if others.is_empty() {
        String::new()
    } else {
        format!("Also cached and watched: {others}.")
    }
}

/// The panel: a tab per cache the page draws tokens for, the chosen
/// cache's block, and the other caches counted under it.
#[component]
pub fn Fanout() -> impl IntoView {
    let model = expect_context::<Model>();
    let view = expect_context::<ViewState>();
    // The resource whose cache is drawn, when the viewer picked one.
    let picked: RwSignal<Option<String>> = RwSignal::new(None);
    let tabs = Memo::new(move |_| {
        split(model)
            .0
            .into_iter()
            .map(|c| (c.resource.clone(), c.watchers.len()))
            .collect::<Vec<_>>()
    });
    // The picked cache, else the filtered resource's, else the busiest.
    let selected = Memo::new(move |_| {
        let wanted = picked
            .get()
            .or_else(|| Some(view.resource.get()).filter(|r| !r.is_empty()));
        chosen(&split(model).0, wanted)
    });
    let current = Signal::derive(move || selected.with(|c| c.as_ref().map(|c| c.resource.clone())));
    let lane_ys = Memo::new(move |_| {
        selected.with(|c| c.as_ref().map(|c| lane_ys(c, 0.0)).unwrap_or_default())
    });
    let section = NodeRef::<leptos::html::Section>::new();
    let visible = on_screen(section);
    view! {
        <Show when=move || model.watch_caches.with(Option::is_some)>
            <section node_ref=section class="fanout panel" aria-label="The watch cache's fan-out">
                <h2>
                    "Fan-out "
                    <small>"one watch cache, many watchers"</small>
                </h2>
                <CacheTabs tabs current picked/>
                <svg
                    id="fanout"
                    viewBox=move || format!("0 0 {WIDTH} {}", selected.with(|c| c.as_ref().map_or(BLOCK_MIN_H, block_h)))
                    role="group"
                    aria-label="The watch cache's ring of recent events, and one lane per watcher it copies each event to"
                >
                    {move || selected.get().map(|cache| view! { <CacheBlock cache top=0.0/> })}
                    <g class="copies" aria-hidden="true">
                        <Copies resource=current cy=ring_y(0.0) lane_ys visible/>
                    </g>
                </svg>
                <p class="hint fanout-others">{move || others_text(split(model).1)}</p>
            </section>
        </Show>
    }
}

/// A tab per `(resource, watchers)` of `tabs`, pressed for the `current`
/// one; a click sets `picked`.
#[component]
fn CacheTabs(
    tabs: Memo<Vec<(String, usize)>>,
    current: Signal<Option<String>>,
    picked: RwSignal<Option<String>>,
) -> impl IntoView {
    view! {
        <div class="tabs" role="group" aria-label="Watch cache of">
            // `aria-pressed` is a value of the closure that makes the tabs,
            // not a closure in each (see `crate::components`).
            {move || {
                let now = current.get();
                tabs.get()
                    .into_iter()
                    .map(|(resource, n)| {
                        let r = resource.clone();
                        let pressed = (now.as_deref() == Some(resource.as_str())).to_string();
                        view! {
                            <button
                                class="tab"
                                data-resource=resource.clone()
                                aria-pressed=pressed
                                on:click=move |_| picked.set(Some(r.clone()))
                            >
                                {resource.clone()}
                                <span class="tab-count">{format!(" {n}")}</span>
                            </button>
                        }
                    })
                    .collect_view()
            }}
        </div>
    }
}
