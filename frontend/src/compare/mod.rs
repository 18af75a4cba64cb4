//! The compare view of the replay page (`embed.html?scenario=NAME&compare=1.20`):
//! one scenario recorded under two Kubernetes profiles, played side by side
//! (stacked on a narrow screen) on one clock, each side labelled with the
//! profile its recording's `hello` names, and under them the steps where the
//! two informers differ.
//!
//! - [`side`]: one recording's player (its own model, animation and replay).
//! - [`clock`]: the one clock that moves both replays.
//! - [`bar`]: the one set of controls.
//! - [`strip`]: where the two differ, read from the recorded frames.

pub mod bar;
pub mod clock;
pub mod side;
pub mod strip;

use crate::components::keyboard;
use crate::view_query::{ViewQuery, encode};
use crate::view_state::ViewState;
use leptos::either::Either;
use leptos::prelude::*;
use side::{CompareSide, Side};

/// The whole compare page, for a URL with `scenario=` and `compare=`.
/// Without a scenario it says what it needs instead.
#[component]
pub fn ComparePage(view: ViewState) -> impl IntoView {
    let scenario = view.scenario.get_value();
    let profile = view.compare.get_value();
    mark_root(view);
    let query = ViewQuery {
        scenario: scenario.clone(),
        compare: profile.clone(),
        ..Default::default()
    };
    let Some((own, other)) = query.compared_recordings() else {
        return Either::Left(view! {
            <CompareHeader scenario=String::new()/>
            <main class="compare">
                <p class="compare-missing" role="status">
                    "compare= needs a shipped scenario to compare: embed.html?scenario=NAME&compare=1.20"
                </p>
            </main>
        });
    };
    let sides = [
        Side::load(view, own, String::new()),
        Side::load(view, other, profile),
    ];
    let clock = clock::CompareClock::new(sides, view);
    clock.start();
    keyboard::install(view, sides[0].player);
    Either::Right(view! {
        <CompareHeader scenario=scenario.clone()/>
        <bar::CompareBar clock view/>
        <main class="compare">
            <div class="compare-sides">
                {sides
                    .into_iter()
                    .enumerate()
                    .map(|(index, side)| view! { <CompareSide side index scenario=scenario.clone()/> })
                    .collect_view()}
            </div>
            <strip::DifferenceStrip sides clock/>
        </main>
    })
}

/// The top bar: what is compared, and the way back to one player.
#[component]
fn CompareHeader(scenario: String) -> impl IntoView {
    let single = format!("?scenario={}", encode(&scenario));
    view! {
        <header class="topbar">
            <h1>"watchlife"</h1>
            <span class="source" id="compare-scenario">{format!("compare: {scenario}")}</span>
            <span class="tagline">"one story under two Kubernetes profiles, on one clock"</span>
            <a class="compare-single" href=single hidden=scenario.is_empty()>"play it alone"</a>
        </header>
    }
}

/// Theme and controls on the root element, for the stylesheet, as the
/// single player sets them; `data-compare` marks the compare view.
fn mark_root(view: ViewState) {
    Effect::new(move |_| {
        if let Some(root) = document().document_element() {
            let _ = root.set_attribute("data-theme", view.theme.get().as_str());
            let _ = root.set_attribute("data-controls", view.controls.get_value().as_str());
            let _ = root.set_attribute("data-page", "replay");
            let _ = root.set_attribute("data-compare", &view.compare.get_value());
        }
    });
}
