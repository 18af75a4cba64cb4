//! An inner hop's node, drawn when the server side is opened: its name,
//! what happens there, and how long the narrated event spent on it (from
//! its measured `server` path), or that it was not measured.

use super::layout::{Dims, Placed};
use super::spot::Hop;
use crate::micros::format_micros;
use crate::player::Player;
use crate::waterfall_spans::spans;
use leptos::prelude::*;

/// Where a hop's two name lines stand, from a one-line name's baseline:
/// 16 units apart, more than the 13-pixel type's height, and the lower one
/// clear of the explanation under it.
const HOP_NAME_SHIFT: [f64; 2] = [-10.0, 6.0];

/// The waterfall's span that ends at the hop (see [`crate::waterfall_spans`]):
/// the time it took to be reached, or spent there.
fn span_id(hop: Hop) -> &'static str {
    match hop {
        Hop::CacherReflector => "cacher_reflector",
        Hop::Incoming => "incoming",
        Hop::Dispatcher => "buffer",
        Hop::Buffer => "watch_stream",
    }
}

/// One inner hop's node.
#[component]
pub fn HopNode(hop: Hop, at: Placed, dims: &'static Dims) -> impl IntoView {
    let player = expect_context::<Player>();
    let (x, top, w) = (at.x, at.y, at.w);
    let cx = x + w / 2.0;
    // Recomputed every frame, redrawn only when the words change.
    let measured = Memo::new(move |_| {
        player.tick.track();
        player.state.with_value(|s| {
            let e = &s.narrated()?.row.event;
            let span = spans(e).into_iter().find(|s| s.id == span_id(hop))?;
            Some(match span.micros() {
                Some(us) => format_micros(us),
                None => "not measured".into(),
            })
        })
    });
    let [first, second] = hop.label();
    // A hop's name is always two lines; where a stage's name takes one
    // (a desk, a phone), they share its room, a little above and below.
    let name_y = match dims.name_lines {
        1 => HOP_NAME_SHIFT.map(|shift| dims.name_y[0] + shift),
        _ => dims.name_y,
    };
    view! {
        <g class="hop server" data-hop=hop.id() role="group" aria-label=format!("{first} {second}: {}", hop.explain())>
            <rect class="node hop-node" x=x y=top width=w height=dims.node_h rx=10/>
            <text class="hop-name" x=cx y=top + name_y[0] text-anchor="middle">{first}</text>
            <text class="hop-name" x=cx y=top + name_y[1] text-anchor="middle">{second}</text>
            <text class="stage-explain" x=cx y=top + dims.explain_y[0] text-anchor="middle"
                textLength=(hop.explain().len() as f64 * dims.sans_char_w * 0.75 > w - 8.0).then_some(w - 8.0)
                lengthAdjust="spacingAndGlyphs">
                {hop.explain()}
            </text>
            <line class="node-rule" x1=x + 8.0 x2=x + w - 8.0 y1=top + dims.rule_y y2=top + dims.rule_y/>
            <text class="hop-time" x=cx y=top + dims.rate_y text-anchor="middle">
                {move || measured.get().unwrap_or_default()}
            </text>
            <text class="stage-explain" x=cx y=top + dims.latency_y text-anchor="middle">
                {move || measured.get().map(|_| "this event")}
            </text>
        </g>
    }
}
