//! The line under the lanes that says which events went by without a token.
//! At live speed it is drawn in the same frame as the tokens: an event that
//! finds no free lane is shown at once, and this line is its first visible
//! sign (the event log is redrawn at most ten times a second). Slower, the
//! events wait their turn anyway, and the line is redrawn at a pace a person
//! can read: under load it would change on every frame. Its `data-rvs` names
//! the resourceVersions the latest such frame showed, as of its last redraw.
//!
//! The line is HTML laid over the foot of the drawing, not SVG text: the
//! browser paints an SVG's text again whenever anything in the drawing moves
//! (the tokens do, every frame), and this, the longest text of the drawing,
//! was a tenth of a phone's main thread at a thousand events a second. Over
//! the drawing, in a box of its own, it is painted only when it changes.

use super::layout::Geometry;
use crate::event_row::EventRow;
use crate::model::Model;
use crate::player::Player;
use crate::throttle::clock_every;
use crate::view_state::ViewState;
use leptos::prelude::*;

/// Room a foot needs for the line: the projector's lanes have none, and
/// there the event log says it.
const MIN_FOOT: f64 = 20.0;

/// How often the line is redrawn below live speed, once it shows: four
/// times a second reads as a running count, where every frame (sixty) is a
/// blur that costs the phone a text layout each time.
const PACE_MS: u64 = 250;

/// The line's two parts: how many events were shown without a token, and
/// the newest of them.
pub fn untokened_text(total: u64, newest: &EventRow) -> (String, String) {
    let e = &newest.event;
    let events = if total == 1 { "event" } else { "events" };
    (
        format!("{total} {events} shown without a token ·"),
        format!(
            "newest: {} {} {} @{}",
            e.event_type.as_str(),
            e.target.resource,
            e.target.key(),
            e.resource_version
        ),
    )
}

/// What the line shows: the resourceVersions for `data-rvs`, and its words.
type Line = Option<(String, (String, String))>;

/// The line, over the foot of the last row of lanes, once an event went by
/// untokened. A phone breaks it in two, one part a line.
#[component]
pub fn Untokened(geometry: Memo<Geometry>) -> impl IntoView {
    let player = expect_context::<Player>();
    let model = expect_context::<Model>();
    let view = expect_context::<ViewState>();
    let pace = clock_every(model, PACE_MS);
    let line = Memo::new(move |drawn: Option<&Line>| {
        // Live, or before the first such event: every frame. Else at the pace.
        if view.journey_ms().is_none() || drawn.is_none_or(Option::is_none) {
            player.tick.track();
        } else {
            pace.track();
        }
        player.state.with_value(|s| {
            let newest = s.untokened.newest.as_ref()?;
            Some((
                s.untokened.rvs.join(" "),
                untokened_text(s.skipped_total, newest),
            ))
        })
    });
    let shown = move || geometry.with(|g| g.dims.foot >= MIN_FOOT) && line.with(Option::is_some);
    let part = move |second: bool| {
        move || {
            line.with(|l| {
                l.as_ref()
                    .map(|(_, (a, b))| if second { b.clone() } else { a.clone() })
            })
        }
    };
    view! {
        <p
            class="untokened"
            style:display=move || (!shown()).then_some("none")
            data-rvs=move || line.with(|l| l.as_ref().map(|l| l.0.clone()))
        >
            <span>{part(false)}</span>
            " "
            <span>{part(true)}</span>
        </p>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_events::pod_event;
    use std::sync::Arc;
    use watchlife_protocol::EventType;

    #[test]
    fn the_line_names_the_count_and_the_newest_event() {
        let row = EventRow {
            seq: 7,
            event: Arc::new(pod_event(EventType::Modified, "web-1", "812", &[])),
        };
        let (count, newest) = untokened_text(3, &row);
        assert_eq!(count, "3 events shown without a token ·");
        assert!(
            newest.starts_with("newest: MODIFIED pods") && newest.ends_with("web-1 @812"),
            "{newest}"
        );
    }
}
