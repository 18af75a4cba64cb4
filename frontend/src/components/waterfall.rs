//! One event's waterfall: a labelled row per hop, server and client, its bar
//! as long as its measured share of the whole journey and placed where it
//! happened; a hop not measured says so instead of drawing a bar. The
//! connected controllers' hops with the same version of the object follow
//! the bridge's, and appear as their taps tell them.

use crate::micros::format_micros;
use crate::model::Model;
use crate::waterfall_spans::{Span, controller_spans, spans};
use leptos::prelude::*;
use std::sync::Arc;
use watchlife_protocol::WatchEvent;

/// Narrowest bar drawn (% of the track), so that a 1 µs hop is still seen.
const MIN_BAR_PCT: f64 = 0.6;

/// The hops of `e` as a list of rows: label, bar, duration; hidden while
/// there is no event.
///
/// Made once and fed the event, not made again for each one: its memo of
/// the controllers' hops reads the taps, which live as long as the page,
/// and a memo dropped with a view would stay among their subscribers (see
/// [`crate::components`]).
#[component]
pub fn Waterfall(e: Signal<Option<Arc<WatchEvent>>>) -> impl IntoView {
    // Redrawn when a controller's hops with this event change, not on
    // every tap frame.
    let taps = use_context::<Model>().map(|m| m.taps);
    let controllers = Memo::new(move |_| {
        let Some(event) = e.get() else {
            return Vec::new();
        };
        let t = &event.target;
        taps.map(|taps| {
            taps.with(|taps| taps.hops_of(t.namespace.as_deref(), &t.name, &event.resource_version))
        })
        .unwrap_or_default()
    });
    let rows = move || {
        let e = e.get()?;
        let bridge = spans(&e);
        let theirs: Vec<_> = controllers.with(|c| {
            c.iter()
                .map(|h| (h.controller.clone(), h.tap, controller_spans(&e, h)))
                .collect()
        });
        let all = || bridge.iter().chain(theirs.iter().flat_map(|(.., s)| s));
        let measured = || all().filter_map(|s| s.at);
        let start = measured().flat_map(|(a, b)| [a, b]).min().unwrap_or(0);
        let end = measured().flat_map(|(a, b)| [a, b]).max().unwrap_or(0);
        let whole = end.saturating_sub(start).max(1) as f64;
        let ours = bridge.iter().map(|s| row(s, start, whole)).collect_view();
        let theirs = theirs
            .iter()
            .map(|(name, tap, spans)| {
                view! {
                    <li class="hop-controller" data-tap=*tap>
                        {format!("{name}, on its own clock")}
                    </li>
                    {spans.iter().map(|s| row(s, start, whole)).collect_view()}
                }
            })
            .collect_view();
        Some((ours, theirs))
    };
    view! {
        <ol
            class="hop-waterfall"
            aria-label="Every hop of this event, with its measured time"
            hidden=move || e.with(Option::is_none)
        >
            {rows}
        </ol>
    }
}

/// One hop's row.
fn row(s: &Span, start: u64, whole: f64) -> impl IntoView + use<> {
    let (bar, words, class) = match s.at {
        Some((from, to)) => {
            let (lo, hi) = (from.min(to), from.max(to));
            let left = (lo - start) as f64 * 100.0 / whole;
            let width = ((hi - lo) as f64 * 100.0 / whole).max(MIN_BAR_PCT);
            let us = s.micros().unwrap_or(0);
            let style = format!("left:{left:.2}%;width:{width:.2}%");
            let class = if us < 0 {
                "hop measured negative"
            } else {
                "hop measured"
            };
            (Some(style), format_micros(us), class)
        }
        None => (None, "not measured".to_string(), "hop unmeasured"),
    };
    let class = if s.id.starts_with("tap_") {
        format!("{class} tap")
    } else {
        class.to_string()
    };
    view! {
        <li class=class data-hop=s.id data-micros=s.micros()>
            <span class="hop-label" title=s.label.to_string()>{s.label.to_string()}</span>
            <span class="hop-track">
                {bar.map(|style| view! { <span class=format!("hop-bar {}", s.id) style=style></span> })}
            </span>
            <span class="hop-time">{words}</span>
        </li>
    }
}
