//! The caption bar: what the narrated token is doing, in plain words, and
//! the latest notice (a demo action's outcome, an error, a 410).

use crate::model::Model;
use crate::narration::caption;
use crate::player::Player;
use crate::view_state::ViewState;
use leptos::prelude::*;

#[component]
pub fn Captions() -> impl IntoView {
    let model = expect_context::<Model>();
    let view = expect_context::<ViewState>();
    let player = expect_context::<Player>();
    let step = player.reduced_motion;
    let narration = move || {
        player.tick.track();
        player.state.with_value(|s| {
            let token = s.narrated()?;
            let place = token.place(s.clock, step)?;
            Some(caption(place.stage, &token.row.event))
        })
    };
    let on = move || view.captions.get().unwrap_or(true);
    view! {
        <section class="captions" aria-label="Captions">
            <Show when=on>
                <p class="narration" id="narration">
                    {move || narration().unwrap_or_else(|| "Waiting for the next event…".into())}
                </p>
            </Show>
            <p
                id="notice"
                class="notice"
                class:alarming=move || model.notice.with(|n| n.as_ref().is_some_and(|n| n.alarming))
                role="status"
                aria-live="polite"
            >
                {move || model.notice.with(|n| n.as_ref().map(|n| n.text.clone()).unwrap_or_default())}
            </p>
        </section>
    }
}
