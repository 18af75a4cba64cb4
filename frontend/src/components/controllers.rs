//! "Your controllers": the user's kube-rs controllers whose tap is
//! connected, one lane each (see [`super::controller_lane`]). Shown once a
//! tap frame has been seen, never before: a page with no tap has nothing
//! to say here.

use super::controller_lane::lane;
use crate::model::Model;
use leptos::prelude::*;

/// The section, redrawn when a tap frame is shown (once per batch of
/// frames the animation lets go of).
#[component]
pub fn Controllers() -> impl IntoView {
    let model = expect_context::<Model>();
    let seen = move || model.taps.with(|t| !t.lanes.is_empty());
    let lanes = move || model.taps.with(|t| t.lanes.iter().map(lane).collect_view());
    view! {
        <Show when=seen>
            <section class="controllers panel" id="controllers" aria-labelledby="controllers-title">
                <h2 id="controllers-title">
                    "Your controllers "
                    <small>"kube-rs controllers with watchlife-tap: one lane per connection, times on the controller's clock"</small>
                </h2>
                <div class="tap-lanes">{lanes}</div>
            </section>
        </Show>
    }
}
