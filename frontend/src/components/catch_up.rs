//! The one control that says the animation is behind what has arrived:
//! "N events behind · catch up". A click shows everything held at once, with
//! no tokens; it goes away once the animation has caught up.

use crate::animator::LANES;
use crate::player::Player;
use leptos::prelude::*;

/// Events held beyond which the animation is behind: more than one token per
/// lane waiting is more than the next moment of the picture will show. Fewer
/// is the ordinary wait of a token for its turn, not worth a control.
pub const BEHIND_AT: usize = LANES;

/// The words of the control for `n` events held, or none when the page is
/// not behind.
pub fn behind_text(n: usize) -> Option<String> {
    (n > BEHIND_AT).then(|| {
        let events = if n == 1 { "event" } else { "events" };
        format!("{n} {events} behind · catch up")
    })
}

/// The control, shown only while the page is behind.
#[component]
pub fn CatchUp() -> impl IntoView {
    let player = expect_context::<Player>();
    let behind = Memo::new(move |_| player.waiting());
    let text = move || behind_text(behind.get());
    view! {
        <button
            id="catch-up"
            class="catch-up"
            hidden=move || text().is_none()
            data-behind=move || behind.get().to_string()
            on:click=move |_| player.catch_up()
            title="Show at once every event that has arrived; their tokens are not drawn"
        >
            {move || text().unwrap_or_default()}
        </button>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_control_shows_only_beyond_a_lane_each() {
        assert_eq!(behind_text(0), None);
        assert_eq!(behind_text(BEHIND_AT), None);
        assert_eq!(
            behind_text(31).as_deref(),
            Some("31 events behind · catch up")
        );
    }
}
