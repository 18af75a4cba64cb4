//! The caption bar: what the narrated token is doing, in plain words, the
//! latest notice (a demo action's outcome, an error, a 410), and the one
//! control that says the animation is behind ([`CatchUp`]). All of it
//! follows the animation: a notice shows when the token before it is drawn.

use super::catch_up::CatchUp;
use crate::model::Model;
use crate::narration::caption;
use crate::player::Player;
use crate::view_state::ViewState;
use leptos::prelude::*;

/// How often the notice's age is looked at.
const NOTICE_TICK: std::time::Duration = std::time::Duration::from_millis(500);

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
    let waiting = Memo::new(move |_| player.waiting());
    let idle = move || idle_words(view.paused.get(), waiting.get());
    let on = move || view.captions.get().unwrap_or(true);
    // The page's time, read twice a second: a notice goes once it is old.
    let now = RwSignal::new(model.now());
    let tick = set_interval_with_handle(move || now.set(model.now()), NOTICE_TICK).ok();
    on_cleanup(move || {
        if let Some(tick) = tick {
            tick.clear();
        }
    });
    let notice = move || {
        model.notice.with(|n| {
            n.as_ref()
                .filter(|n| n.current(now.get()))
                .map(|n| n.text.clone())
                .unwrap_or_default()
        })
    };
    view! {
        <section class="captions" aria-label="Captions">
            <Show when=on>
                <p class="narration" id="narration" aria-live="polite" aria-atomic="true">
                    {move || narration.get().unwrap_or_else(idle)}
                </p>
            </Show>
            <p
                id="notice"
                class="notice"
                class:alarming=move || model.notice.with(|n| n.as_ref().is_some_and(|n| n.alarming))
                role="status"
                aria-live="polite"
            >
                {notice}
            </p>
            <CatchUp/>
        </section>
    }
}

/// What the narration says when no token is on the picture: whether events
/// wait their turn (`waiting`), and whether the animation is `paused`.
fn idle_words(paused: bool, waiting: usize) -> String {
    let wait = if waiting == 1 {
        "event waits its turn"
    } else {
        "events wait their turn"
    };
    match (paused, waiting) {
        (true, 0) => "Paused.".into(),
        (true, n) => format!("Paused: {n} {wait}."),
        (false, 0) => "Waiting for the next event…".into(),
        (false, n) => format!("{n} {wait}…"),
    }
}

#[cfg(test)]
mod tests {
    use super::idle_words;

    #[test]
    fn an_idle_caption_says_what_waits() {
        assert_eq!(idle_words(false, 0), "Waiting for the next event…");
        assert_eq!(idle_words(true, 3), "Paused: 3 events wait their turn.");
        assert_eq!(idle_words(false, 1), "1 event waits its turn…");
    }
}
