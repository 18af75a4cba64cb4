//! The line under the lanes that says which events went by without a token,
//! drawn in the same frame as the tokens: at live speed, an event that finds
//! no free lane is shown at once, and this line is its first visible sign
//! (the event log is redrawn at most ten times a second). Its `data-rvs`
//! names the resourceVersions the latest such frame showed.

use super::layout::{Geometry, MARGIN};
use crate::event_row::EventRow;
use crate::player::Player;
use leptos::prelude::*;

/// Room a foot needs for the line: the projector's lanes have none, and
/// there the event log says it.
const MIN_FOOT: f64 = 20.0;

/// The line's words: how many events were shown without a token, and the
/// newest of them.
pub fn untokened_text(total: u64, newest: &EventRow) -> String {
    let e = &newest.event;
    let events = if total == 1 { "event" } else { "events" };
    format!(
        "{total} {events} shown without a token · newest: {} {} {} @{}",
        e.event_type.as_str(),
        e.target.resource,
        e.target.key(),
        e.resource_version
    )
}

/// The line, under the last row of lanes, once an event went by untokened.
#[component]
pub fn Untokened(geometry: Memo<Geometry>) -> impl IntoView {
    let player = expect_context::<Player>();
    let line = Memo::new(move |_| {
        player.tick.track();
        player.state.with_value(|s| {
            let newest = s.untokened.newest.as_ref()?;
            Some((
                s.untokened.rvs.join(" "),
                untokened_text(s.skipped_total, newest),
            ))
        })
    });
    let shown = move || geometry.with(|g| g.dims.foot >= MIN_FOOT) && line.with(Option::is_some);
    let y = move || {
        let g = geometry.get();
        g.foot_y(g.rows() - 1)
    };
    // Squeezed into the drawing's width when longer (a phone's).
    let squeeze = move || {
        let g = geometry.get();
        let room = g.width() - 2.0 * MARGIN;
        let chars = line.with(|l| l.as_ref().map_or(0, |l| l.1.chars().count())) as f64;
        (chars * g.dims.sans_char_w > room).then(|| room.to_string())
    };
    view! {
        <text
            class="untokened"
            x=MARGIN
            y=y
            textLength=squeeze
            lengthAdjust="spacingAndGlyphs"
            display=move || (!shown()).then_some("none")
            data-rvs=move || line.with(|l| l.as_ref().map(|l| l.0.clone()))
        >
            {move || line.with(|l| l.as_ref().map(|l| l.1.clone()))}
        </text>
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
        let text = untokened_text(3, &row);
        assert!(text.starts_with("3 events shown without a token"), "{text}");
        assert!(
            text.contains("MODIFIED pods") && text.ends_with("web-1 @812"),
            "{text}"
        );
    }
}
