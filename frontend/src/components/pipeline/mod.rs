//! The pipeline as one SVG: a node per stage, server side then client side,
//! with live numbers, the Reflector's state, and the tokens travelling. The
//! server side opens (a click; open by default in presenter mode) into the
//! apiserver's inner hops.
//!
//! - [`layout`]: where the nodes and the lanes stand, on a desk or a
//!   projector, in one row or two; [`spot`]: the places a token can be.
//! - [`node`]: one stage's node; [`hop_node`]: an inner hop's;
//!   [`numbers`]: the numbers on a node; [`reflector_lines`]: the
//!   Reflector's short lines.
//! - [`tokens`]: the tokens on their lanes; [`journey`]: where a token is;
//!   [`untokened`]: the events that went by without one.
//! - [`stage_id`]: a stage's name in selectors and classes.

pub mod hop_node;
pub mod journey;
pub mod layout;
pub mod node;
pub mod numbers;
pub mod reflector_lines;
pub mod spot;
pub mod stage_id;
pub mod tokens;
pub mod untokened;

use crate::model::Model;
use crate::player::Player;
use crate::throttle::clock_every;
use crate::view_state::ViewState;
use hop_node::HopNode;
use layout::{Geometry, MARGIN, Placed};
use leptos::prelude::*;
use node::StageNode;
use spot::Spot;
pub use stage_id::stage_id;
use tokens::Tokens;
use untokened::Untokened;

/// How often the numbers on the nodes are refreshed (and only then: they
/// do not follow every event).
const REFRESH_MS: u64 = 500;

/// The diagram. Stages the source cannot measure (not in `hello` and never
/// carried by an event) are greyed and say "not observed", with no numbers.
#[component]
pub fn Pipeline() -> impl IntoView {
    let player = expect_context::<Player>();
    let model = expect_context::<Model>();
    let view = expect_context::<ViewState>();
    let now = clock_every(model, REFRESH_MS);
    // `None` until the viewer chooses: open in presenter mode, closed on a desk.
    let opened: RwSignal<Option<bool>> = RwSignal::new(None);
    let open = move || opened.get().unwrap_or_else(|| view.presenter.get());
    let narrow = crate::media::follow(crate::media::NARROW_QUERY);
    let geometry = Memo::new(move |_| Geometry::new(view.presenter.get(), open(), narrow.get()));
    let toggle = move |_| opened.set(Some(!open()));
    let launched = move || {
        player.tick.track();
        player.state.with_value(|s| s.launched)
    };
    let waiting = move || player.waiting();
    view! {
        <section class="pipeline" aria-label="The pipeline of a watch event">
            <svg
                id="pipeline"
                viewBox=move || {
                    let g = geometry.get();
                    format!("0 0 {} {}", g.width(), g.height())
                }
                role="group"
                aria-label="Stages from etcd to reconcile, with events travelling through them"
                data-launched=launched
                data-waiting=waiting
                data-open=move || open().to_string()
                data-rows=move || geometry.get().rows().to_string()
                data-narrow=move || geometry.get().narrow().then_some("true")
            >
                {move || drawing(geometry.get(), now, toggle)}
                <Tokens geometry/>
            </svg>
            <Untokened geometry/>
        </section>
    }
}

/// The network between the two sides, as `[x1, x2, y1, y2]`: a
/// horizontal line above the client side's row when the sides are stacked,
/// else a vertical one before the client side's first node.
fn network_line(g: &Geometry, first_client: Option<Placed>) -> [f64; 4] {
    match (g.two_rows, first_client) {
        (true, Some(p)) => {
            let y = p.y - g.dims.head;
            [MARGIN, g.width() - MARGIN, y, y]
        }
        (_, Some(p)) => {
            let x = p.x - g.dims.gap / 2.0;
            [x, x, 8.0, g.height() - 4.0]
        }
        _ => [0.0; 4],
    }
}

/// Everything but the tokens, drawn anew when the arrangement changes.
fn drawing(
    g: Geometry,
    now: RwSignal<f64>,
    toggle: impl Fn(leptos::ev::MouseEvent) + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let placed = g.placed();
    let first_client = placed.iter().find(|p| !p.spot.is_server_side()).copied();
    let last_server = placed.iter().rfind(|p| p.spot.is_server_side()).copied();
    let label_y = if g.two_rows { g.dims.head - 8.0 } else { 20.0 };
    let client_x = if g.two_rows {
        MARGIN
    } else {
        first_client.map_or(0.0, |p| (p.x + g.width() - MARGIN) / 2.0)
    };
    let client_anchor = if g.two_rows { "start" } else { "middle" };
    // A phone's rows end where the drawing does; its side labels are short,
    // to leave the toggle room beside the server side's.
    let server_end = match last_server {
        _ if g.narrow() => g.width() - MARGIN,
        Some(p) => p.x + p.w,
        None => 0.0,
    };
    let (server_words, client_words) = if g.narrow() {
        ("server side", "client side")
    } else {
        (
            "server side: etcd and the apiserver",
            "client side: the informer and a controller",
        )
    };
    let client_y = match first_client {
        Some(p) if g.two_rows => p.y - 8.0,
        _ => label_y,
    };
    let network = network_line(&g, first_client);
    let toggle_words = if g.open {
        "▾ hide inner hops"
    } else {
        "▸ inner hops"
    };
    view! {
        <text class="side-label" x=MARGIN y=label_y text-anchor="start">
            {server_words}
        </text>
        <text
            class="server-toggle"
            x=server_end
            y=label_y
            text-anchor="end"
            role="button"
            tabindex="0"
            aria-expanded=g.open.to_string()
            on:click=toggle
        >
            {toggle_words}
        </text>
        <text class="side-label" x=client_x y=client_y text-anchor=client_anchor>
            {client_words}
        </text>
        <line class="network" x1=network[0] x2=network[1] y1=network[2] y2=network[3]/>
        {placed
            .into_iter()
            .map(|at| match at.spot {
                Spot::Stage(stage) => view! { <StageNode stage now at dims=g.dims/> }.into_any(),
                Spot::Hop(hop) => view! { <HopNode hop at dims=g.dims/> }.into_any(),
            })
            .collect_view()}
    }
}
