//! Plots for those who would rather look than read: events received per
//! second over the last minute, by type, and a histogram of each stage's
//! latency from the stage before it. Both are redrawn once a second from
//! the numbers already kept, never on every event. A negative latency (a
//! stage read before the one before it) has no bin on the log scale: each
//! histogram counts its negative samples apart, beside its title.

use super::pipeline::stage_id;
use crate::micros::format_micros;
use crate::model::Model;
use crate::on_screen::on_screen;
use crate::stats::{LATENCY_BINS, SERIES_SECONDS, StageStats, histogram};
use crate::throttle::clock_every_on_screen;
use leptos::prelude::*;
use watchlife_protocol::Stage;

/// How often the plots are redrawn.
const REDRAW_MS: u64 = 1_000;
/// The rate plot's drawing.
const RATE_W: f64 = 600.0;
const RATE_H: f64 = 96.0;
/// Room left of the bars for the axis labels, and below them for the times.
const AXIS_W: f64 = 34.0;
const AXIS_H: f64 = 16.0;
/// One histogram's cell, four to a row.
const CELL_W: f64 = 150.0;
const CELL_H: f64 = 88.0;
const COLUMNS: usize = 4;
/// Height of the bars' area in a cell, under its three lines of title
/// (the stage, its p50, its p99: "p50 < 100 µs (clock tick)" alone fills
/// a cell's width).
const BARS_TOP: f64 = 44.0;
/// Width a cell's text may take: the cell less its margin.
const TEXT_W: f64 = CELL_W - 16.0;
/// A character's width in a summary line (10.5 px sans), to tell when a
/// line must be squeezed into [`TEXT_W`].
const SUMMARY_CHAR_W: f64 = 5.6;
const BARS_H: f64 = 30.0;
/// Event types stacked in the rate plot, bottom first (see `RateSeries`).
const SERIES: [(&str, &str); 4] = [
    ("added", "ADDED"),
    ("modified", "MODIFIED"),
    ("deleted", "DELETED"),
    ("other", "BOOKMARK/ERROR"),
];
/// Bins labelled under the histograms: the first, 1 ms, 100 ms, the last.
const TICKS: [(usize, &str); 4] = [(0, "10µs"), (6, "1ms"), (12, "100ms"), (18, ">5s")];

/// The smallest "round" number (1, 2 or 5 times a power of ten) at least `n`.
fn nice_max(n: u32) -> u32 {
    let mut base = 1u32;
    loop {
        for m in [1, 2, 5] {
            if base.saturating_mul(m) >= n.max(1) {
                return base.saturating_mul(m);
            }
        }
        base = base.saturating_mul(10);
    }
}

#[component]
pub fn Plots() -> impl IntoView {
    let model = expect_context::<Model>();
    // Redrawn once a second, and not at all while off screen.
    let section = NodeRef::<leptos::html::Section>::new();
    let now = clock_every_on_screen(model, REDRAW_MS, on_screen(section));
    view! {
        // Side by side when the panel is wide (no fan-out beside it), else stacked.
        <section node_ref=section class="plots panel" aria-label="Plots">
            <div class="plot-grid">
                <div class="plot-block">
                    <h2>"Events per second " <small>"received, last minute, by type"</small></h2>
                    <RatePlot now/>
                </div>
                <div class="plot-block">
                    <h2>"Latency per stage " <small>"time from the stage before, last 512 events"</small></h2>
                    <LatencyPlot now/>
                </div>
            </div>
        </section>
    }
}

#[component]
fn RatePlot(now: RwSignal<f64>) -> impl IntoView {
    let model = expect_context::<Model>();
    let seconds = move || model.rates.with_untracked(|r| r.seconds(now.get()));
    let bar_w = (RATE_W - AXIS_W) / SERIES_SECONDS as f64;
    let plot_h = RATE_H - AXIS_H;
    let drawing = move || {
        let seconds = seconds();
        let peak = seconds
            .iter()
            .map(|s| s.iter().sum::<u32>())
            .max()
            .unwrap_or(0);
        let top = nice_max(peak);
        let latest: u32 = seconds.last().map(|s| s.iter().sum()).unwrap_or(0);
        let bars = seconds
            .iter()
            .enumerate()
            .flat_map(|(i, counts)| {
                let x = AXIS_W + i as f64 * bar_w;
                let mut y = plot_h;
                counts
                    .iter()
                    .zip(SERIES)
                    .filter(|(c, _)| **c > 0)
                    .map(|(c, (class, _))| {
                        let h = *c as f64 / top as f64 * (plot_h - 4.0);
                        y -= h;
                        view! {
                            <rect class=format!("bar {class}") x=format!("{:.1}", x + 0.5) y=format!("{y:.1}")
                                width=format!("{:.1}", bar_w - 1.0) height=format!("{h:.1}")/>
                        }
                    })
                    .collect::<Vec<_>>()
            })
            .collect_view();
        let label = format!(
            "Events per second over the last minute: {latest} in the last second, at most {peak}"
        );
        (top, bars, label, peak)
    };
    view! {
        {move || {
            let (top, bars, label, peak) = drawing();
            view! {
                <svg id="plot-rate" class="plot" viewBox=format!("0 0 {RATE_W} {RATE_H}") role="img" aria-label=label data-peak=peak>
                    <line class="axis" x1=AXIS_W x2=RATE_W y1=plot_h y2=plot_h/>
                    <line class="grid" x1=AXIS_W x2=RATE_W y1=4 y2=4/>
                    <text class="tick" x=AXIS_W - 4.0 y=8 text-anchor="end">{format!("{top}/s")}</text>
                    <text class="tick" x=AXIS_W - 4.0 y=plot_h text-anchor="end">"0"</text>
                    <text class="tick" x=AXIS_W y=RATE_H - 2.0>"1 min ago"</text>
                    <text class="tick" x=RATE_W y=RATE_H - 2.0 text-anchor="end">"now"</text>
                    {bars}
                </svg>
            }
        }}
        <p class="legend">
            {SERIES
                .iter()
                .map(|(class, name)| view! { <span class=format!("key {class}")>{*name}</span> })
                .collect_view()}
        </p>
    }
}

/// A histogram per stage but the first (each latency is the time from the
/// stage before), [`COLUMNS`] to a row.
#[component]
fn LatencyPlot(now: RwSignal<f64>) -> impl IntoView {
    let model = expect_context::<Model>();
    let stages = &Stage::ALL[1..];
    let rows = stages.len().div_ceil(COLUMNS);
    let height = rows as f64 * CELL_H + 14.0;
    let width = COLUMNS as f64 * CELL_W;
    let cells = move || {
        now.track();
        model.stats.with_untracked(|stats| {
            stages
                .iter()
                .enumerate()
                .map(|(i, stage)| histogram_cell(i, *stage, stats.stage(*stage)))
                .collect_view()
        })
    };
    view! {
        <svg id="plot-latency" class="plot" viewBox=format!("0 0 {width} {height}") role="group" aria-label="Latency histograms, one per stage">
            {cells}
        </svg>
    }
}

/// One line of a cell's summary at (`x`, `y`), squeezed into the cell when
/// it is longer than the cell is wide.
fn summary_line(text: String, x: f64, y: f64) -> impl IntoView + use<> {
    let fit = (text.chars().count() as f64 * SUMMARY_CHAR_W > TEXT_W).then_some(TEXT_W);
    view! {
        <text class="cell-summary" x=x y=y textLength=fit lengthAdjust="spacingAndGlyphs">{text}</text>
    }
}

/// Width of one bin in a histogram's cell: the bins and the overflow bin
/// across the cell, less a margin.
fn bin_width() -> f64 {
    TEXT_W / (LATENCY_BINS.len() + 1) as f64
}

/// The `i`th cell: `stage`'s latencies as bars, its p50 and p99, and its
/// negative samples counted beside its title.
fn histogram_cell(i: usize, stage: Stage, st: Option<&StageStats>) -> impl IntoView + use<> {
    let x0 = (i % COLUMNS) as f64 * CELL_W + 4.0;
    let y0 = (i / COLUMNS) as f64 * CELL_H;
    let hist = st.map(|s| histogram(s.latencies())).unwrap_or_default();
    let (p50, p99) = match st.and_then(|s| s.latency_quantiles([0.5, 0.99])) {
        Some([p50, p99]) => (
            format!("p50 {}", format_micros(p50)),
            format!("p99 {}", format_micros(p99)),
        ),
        None => ("no measurements yet".to_string(), String::new()),
    };
    let summary = if p99.is_empty() {
        p50.clone()
    } else {
        format!("{p50} · {p99}")
    };
    let bars = histogram_bars(&hist.bins, stage, x0, y0);
    let label = format!("{}: {summary}", stage.label());
    let samples: u32 = hist.bins.iter().sum::<u32>() + hist.negative;
    let label = match hist.negative {
        0 => label,
        n => format!("{label}, {n} negative"),
    };
    view! {
        <g class="histogram" data-stage=stage_id(stage) data-samples=samples data-negative=hist.negative role="img" aria-label=label>
            <text class="cell-title" x=x0 y=y0 + 12.0>{stage.label()}</text>
            <text class="cell-negative" x=x0 + TEXT_W y=y0 + 12.0 text-anchor="end">
                {(hist.negative > 0).then(|| format!("{} negative", hist.negative))}
            </text>

            {summary_line(p50, x0, y0 + 25.0)}
            {summary_line(p99, x0, y0 + 38.5)}
            <line class="axis" x1=x0 x2=x0 + TEXT_W y1=y0 + BARS_TOP + BARS_H y2=y0 + BARS_TOP + BARS_H/>
            {bars}
            {bin_ticks(x0, y0)}
        </g>
    }
}

/// A bar per bin that has samples, as tall as its count against the
/// tallest; none at all when no bin has any.
fn histogram_bars(bins: &[u32], stage: Stage, x0: f64, y0: f64) -> Option<impl IntoView + use<>> {
    let tallest = bins.iter().copied().max().unwrap_or(0);
    let bin_w = bin_width();
    (tallest > 0).then(|| {
        bins.iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(b, n)| {
                let h = (*n as f64 / tallest as f64 * BARS_H).max(1.5);
                view! {
                    <rect class=format!("bar {}", stage_id(stage))
                        x=format!("{:.1}", x0 + b as f64 * bin_w) y=format!("{:.1}", y0 + BARS_TOP + BARS_H - h)
                        width=format!("{:.1}", bin_w - 1.0) height=format!("{h:.1}")/>
                }
            })
            .collect_view()
    })
}

/// The [`TICKS`] under a cell's bars: the first and the last at the axis's
/// ends, the others under their bins.
fn bin_ticks(x0: f64, y0: f64) -> impl IntoView + use<> {
    let bin_w = bin_width();
    TICKS
        .iter()
        .map(|(b, text)| {
            let (x, anchor) = match b {
                0 => (x0, "start"),
                18 => (x0 + (LATENCY_BINS.len() + 1) as f64 * bin_w, "end"),
                _ => (x0 + (*b as f64 + 0.5) * bin_w, "middle"),
            };
            view! { <text class="tick" x=format!("{x:.1}") y=y0 + BARS_TOP + BARS_H + 11.0 text-anchor=anchor>{*text}</text> }
        })
        .collect_view()
}

#[cfg(test)]
mod tests {
    use super::nice_max;

    #[test]
    fn the_axis_tops_at_a_round_number() {
        assert_eq!(nice_max(0), 1);
        assert_eq!(nice_max(3), 5);
        assert_eq!(nice_max(7), 10);
        assert_eq!(nice_max(11), 20);
        assert_eq!(nice_max(4_999), 5_000);
    }
}
