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
    // A memo: the sentence is recomputed every frame but changes (and is
    // announced to screen readers) only when the token reaches a new stage.
    let narration = Memo::new(move |_| {
        player.tick.track();
        let step = player.reduced_motion.get();
        player.state.with_value(|s| {
            let token = s.narrated()?;
            let place = token.place(s.clock, step)?;
            Some(caption(place.stage, &token.row.event))
        })
    });
    let on = move || view.captions.get().unwrap_or(true);
    view! {
        <section class="captions" aria-label="Captions">
            <Show when=on>
                <p class="narration" id="narration" aria-live="polite" aria-atomic="true">
                    {move || narration.get().unwrap_or_else(|| "Waiting for the next event…".into())}
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
