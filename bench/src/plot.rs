//! The latency plot: one box per distribution, side by side, on a log scale.
//! A few dozen lines of SVG by hand: no plotting library to build.

use crate::report::Series;
use crate::stats::micros;
use std::fmt::Write as _;

const COLUMN: f64 = 64.0;
const GROUP_GAP: f64 = 28.0;
const TOP: f64 = 64.0;
const PLOT_HEIGHT: f64 = 360.0;
const LEFT: f64 = 72.0;
const BOTTOM: f64 = 170.0;
/// One colour per group, readable on white and by most colour-blind readers.
const COLOURS: [&str; 6] = [
    "#1b6ca8", "#d1711b", "#2e8b57", "#8e44ad", "#b03a2e", "#5d6d7e",
];

/// The SVG document for `series` (grouped in the order given).
pub fn svg(series: &[Series]) -> String {
    let groups = grouped(series);
    let width = LEFT
        + groups
            .iter()
            .map(|(_, m)| m.len() as f64 * COLUMN + GROUP_GAP)
            .sum::<f64>()
        + 16.0;
    let width = width.max(640.0);
    let height = TOP + PLOT_HEIGHT + BOTTOM + 18.0 * groups.len() as f64;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(
        out,
        r##"<rect width="100%" height="100%" fill="#ffffff"/><text x="{LEFT}" y="22" font-size="14" font-weight="bold">Latency distributions, side by side (log scale)</text><text x="{LEFT}" y="40">box: p25–p75 · thick line: p50 · whiskers: p1–p99 · dot: p99.9 · n: samples</text>"##
    );
    if series.is_empty() {
        let _ = writeln!(
            out,
            r#"<text x="{LEFT}" y="{}">no latency was measured in this run</text></svg>"#,
            TOP + 20.0
        );
        return out;
    }
    let scale = LogScale::spanning(series);
    scale.draw_axis(&mut out, width);
    let mut x = LEFT + GROUP_GAP / 2.0;
    for (gi, (group, members)) in groups.iter().enumerate() {
        let colour = COLOURS[gi % COLOURS.len()];
        for s in members {
            scale.draw_box(&mut out, s, x + COLUMN / 2.0, colour);
            x += COLUMN;
        }
        let _ = writeln!(
            out,
            r#"<rect x="{LEFT}" y="{:.1}" width="10" height="10" fill="{colour}"/><text x="{:.0}" y="{:.1}">{}</text>"#,
            TOP + PLOT_HEIGHT + BOTTOM + 18.0 * gi as f64 - 9.0,
            LEFT + 16.0,
            TOP + PLOT_HEIGHT + BOTTOM + 18.0 * gi as f64,
            escape(group)
        );
        x += GROUP_GAP;
    }
    out.push_str("</svg>\n");
    out
}

/// Consecutive series of the same group, together.
fn grouped(series: &[Series]) -> Vec<(&str, Vec<&Series>)> {
    let mut groups: Vec<(&str, Vec<&Series>)> = Vec::new();
    for s in series {
        match groups.last_mut() {
            Some((g, members)) if *g == s.group => members.push(s),
            _ => groups.push((&s.group, vec![s])),
        }
    }
    groups
}

/// The vertical axis: whole decades of microseconds, from below the lowest
/// p1 to above the highest p99.9.
struct LogScale {
    lo_decade: f64,
    hi_decade: f64,
}

impl LogScale {
    fn spanning(series: &[Series]) -> LogScale {
        let low = series
            .iter()
            .map(|s| s.shape.p1.max(1.0))
            .fold(f64::INFINITY, f64::min);
        let high = series
            .iter()
            .map(|s| s.shape.p999.max(s.shape.p99))
            .fold(1.0, f64::max);
        LogScale {
            lo_decade: low.log10().floor(),
            hi_decade: high.log10().ceil().max(low.log10().floor() + 1.0),
        }
    }

    /// The height of `v` µs in the picture.
    fn y(&self, v: f64) -> f64 {
        let v = v.max(10f64.powf(self.lo_decade));
        TOP + PLOT_HEIGHT * (1.0 - (v.log10() - self.lo_decade) / (self.hi_decade - self.lo_decade))
    }

    /// A line and a label per decade.
    fn draw_axis(&self, out: &mut String, width: f64) {
        let mut decade = self.lo_decade;
        while decade <= self.hi_decade {
            let v = 10f64.powf(decade);
            let yy = self.y(v);
            let _ = writeln!(
                out,
                r##"<line x1="{LEFT}" x2="{:.0}" y1="{yy:.1}" y2="{yy:.1}" stroke="#dddddd"/><text x="{:.0}" y="{:.1}" text-anchor="end">{}</text>"##,
                width - 16.0,
                LEFT - 6.0,
                yy + 4.0,
                micros(v)
            );
            decade += 1.0;
        }
    }

    /// One distribution's whiskers, box, median and p99.9, centred on `cx`, and its label.
    fn draw_box(&self, out: &mut String, s: &Series, cx: f64, colour: &str) {
        let y = |v| self.y(v);
        let half = COLUMN * 0.3;
        let sh = s.shape;
        let _ = writeln!(
            out,
            r#"<line x1="{cx:.1}" x2="{cx:.1}" y1="{:.1}" y2="{:.1}" stroke="{colour}"/>"#,
            y(sh.p1),
            y(sh.p99)
        );
        let _ = writeln!(
            out,
            r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{colour}" fill-opacity="0.35" stroke="{colour}"/>"#,
            cx - half,
            y(sh.p75),
            2.0 * half,
            (y(sh.p25) - y(sh.p75)).max(1.0)
        );
        let _ = writeln!(
            out,
            r#"<line x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="{colour}" stroke-width="3"/><circle cx="{cx:.1}" cy="{:.1}" r="3" fill="{colour}"/>"#,
            cx - half,
            cx + half,
            y(sh.p50),
            y(sh.p50),
            y(sh.p999)
        );
        let _ = writeln!(
            out,
            r#"<text x="{cx:.1}" y="{:.1}" text-anchor="end" transform="rotate(-40 {cx:.1} {:.1})">{}</text>"#,
            TOP + PLOT_HEIGHT + 16.0,
            TOP + PLOT_HEIGHT + 16.0,
            escape(&format!(
                "{} (n={})",
                s.label,
                crate::stats::count(sh.count as usize)
            ))
        );
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
