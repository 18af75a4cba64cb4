//! The pipeline as one SVG: a node per stage, server side then client side,
//! with live numbers, the Reflector's state, and the tokens travelling.
//!
//! - [`layout`]: where the nodes and the lanes stand.
//! - [`node`]: one stage's node; [`numbers`]: the numbers on it;
//!   [`reflector_lines`]: the Reflector's short lines.
//! - [`tokens`]: the tokens on their lanes.
//! - [`stage_id`]: a stage's name in selectors and classes.

pub mod layout;
pub mod node;
pub mod numbers;
pub mod reflector_lines;
pub mod stage_id;
pub mod tokens;

use crate::model::Model;
use crate::player::Player;
use crate::throttle::clock_every;
use layout::{GAP, HEIGHT, NODE_W, WIDTH, node_x};
use leptos::prelude::*;
use node::StageNode;
pub use stage_id::stage_id;
use tokens::Tokens;
use watchlife_protocol::Stage;

/// How often the numbers on the nodes are refreshed (and only then: they
/// do not follow every event).
const REFRESH_MS: u64 = 500;

/// The diagram. Stages the source cannot measure (not in `hello` and never
/// carried by an event) are greyed and say "not observed", with no numbers.
#[component]
pub fn Pipeline() -> impl IntoView {
    let player = expect_context::<Player>();
    let model = expect_context::<Model>();
    let now = clock_every(model, REFRESH_MS);
    let split = node_x(3.0) - GAP / 2.0;
    let launched = move || {
        player.tick.track();
        player.state.with_value(|s| s.launched)
    };
    let waiting = move || player.waiting();
    view! {
        <section class="pipeline" aria-label="The pipeline of a watch event">
            <svg
                id="pipeline"
                viewBox=format!("0 0 {WIDTH} {HEIGHT}")
                role="group"
                aria-label="Stages from etcd to reconcile, with events travelling through them"
                data-launched=launched
                data-waiting=waiting
            >
                <text class="side-label" x=node_x(1.5) + NODE_W / 2.0 y=20 text-anchor="middle">
                    "server side: etcd and the apiserver"
                </text>
                <text class="side-label" x=node_x(6.0) + NODE_W / 2.0 y=20 text-anchor="middle">
                    "client side: the informer and a controller"
                </text>
                <line class="network" x1=split x2=split y1=8 y2=HEIGHT - 4.0/>
                {Stage::ALL
                    .into_iter()
                    .map(|stage| view! { <StageNode stage now/> })
                    .collect_view()}
                <Tokens/>
            </svg>
        </section>
    }
}
