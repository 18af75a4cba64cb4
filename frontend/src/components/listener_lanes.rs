//! On the event handlers' node, one lane per listener: its name, its
//! buffer's depth at its latest call, its calls by callback, and how long
//! its handler ran (p50, dequeue → return). A listener whose filter turned
//! an event away was not called: that event adds nothing to its lane.
//!
//! The lanes are redrawn with the node's numbers, on the refresh clock,
//! never per event. They are drawn as the node's
//! short lines (see [`super::node_lines`]).

use super::node_lines::NodeLine;
use crate::listeners::Lane;
use crate::micros::format_micros;
use crate::model::Model;
use leptos::prelude::*;

/// Lanes drawn; more listeners are counted on the last one.
pub const LANES_SHOWN: usize = 4;

/// The lane's name as drawn: the part after the last `: `
/// (`scheduler: scheduled` reads `scheduled`); the whole name is its title.
fn short(name: &str) -> &str {
    name.rsplit(": ").next().unwrap_or(name)
}

/// A lane's line in words: `scheduled OnAdd 1, OnUpdate 4 · buffer 2 ·
/// 15 µs` (calls by callback, the buffer's depth at the latest call, p50
/// run time), with `+more` listeners not drawn.
fn lane_line(lane: &Lane, more: usize) -> NodeLine {
    let [adds, updates, deletes] = lane.calls;
    let counts: Vec<String> = [
        ("OnAdd", adds),
        ("OnUpdate", updates),
        ("OnDelete", deletes),
    ]
    .into_iter()
    .filter(|(_, n)| *n > 0)
    .map(|(c, n)| format!("{c} {n}"))
    .collect();
    let [p50, p99] = lane.handling_quantiles().unwrap_or_default();
    let mut words = format!(
        "{} · buffer {} · {}",
        counts.join(", "),
        lane.depth,
        format_micros(p50)
    );
    if more > 0 {
        words.push_str(&format!(" +{more}"));
    }
    let title = format!(
        "{} ({}): buffer depth {} at its latest call; OnAdd {adds}, OnUpdate {updates}, OnDelete {deletes}; \
         handler ran p50 {}, p99 {} (dequeue → return, last {} calls)",
        lane.name,
        lane.resource,
        lane.depth,
        format_micros(p50),
        format_micros(p99),
        lane.samples()
    );
    NodeLine {
        class: "listener".into(),
        key: lane.name.clone(),
        lead: short(&lane.name).into(),
        words,
        title,
    }
}

/// The lanes' lines, as a closure for the handlers' node to draw: redrawn
/// when `now` ticks (twice a second) and when the stream settles, never per
/// event.
pub fn listener_lines(now: RwSignal<f64>) -> impl Fn() -> Vec<NodeLine> + Copy {
    let model = expect_context::<Model>();
    move || {
        model.settled.track();
        now.track();
        model.stats.with_untracked(|s| {
            let all = &s.listeners.lanes;
            let more = all.len().saturating_sub(LANES_SHOWN);
            all.iter()
                .take(LANES_SHOWN)
                .enumerate()
                .map(|(i, l)| lane_line(l, if i + 1 == LANES_SHOWN { more } else { 0 }))
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::listeners::Listeners;
    use watchlife_protocol::{Callback, HandlerCall};

    #[test]
    fn a_lane_reads_name_depth_calls_and_run_time() {
        let mut l = Listeners::default();
        let call = |callback, depth, took: u64| HandlerCall {
            listener: "scheduler: scheduled".into(),
            callback,
            depth,
            dequeued: 10,
            returned: 10 + took,
        };
        l.record("pods", &[call(Callback::OnAdd, 1, 40)]);
        l.record("pods", &[call(Callback::OnUpdate, 3, 0)]);
        let v = lane_line(&l.lanes[0], 0);
        assert_eq!(
            (v.key.as_str(), v.lead.as_str(), v.words.as_str()),
            (
                "scheduler: scheduled",
                "scheduled",
                "OnAdd 1, OnUpdate 1 · buffer 3 · < 1 µs"
            )
        );
        assert!(
            v.title
                .starts_with("scheduler: scheduled (pods): buffer depth 3"),
            "{}",
            v.title
        );
        assert!(lane_line(&l.lanes[0], 2).words.ends_with(" +2"));
    }
}
