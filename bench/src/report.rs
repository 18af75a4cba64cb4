//! What a bench run found, as BENCHMARKS.md and as a one-screen summary.

use crate::machine::Machine;
use crate::stats::{Shape, Spread, ratio, times};
use std::fmt::Write as _;

/// One measurement's part of the report.
#[derive(Debug, Default)]
pub struct Section {
    pub title: String,
    /// How it was measured, in a few sentences (markdown).
    pub method: String,
    pub tables: Vec<Table>,
    /// What the figures mean, or where they fall short (markdown, one paragraph each).
    pub notes: Vec<String>,
    /// Lines for the screen summary.
    pub summary: Vec<String>,
    /// Wall-clock time the measurement took.
    pub seconds: f64,
}

impl Section {
    /// The section as markdown: its heading, method, tables, notes and time.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "## {}\n", self.title);
        let _ = writeln!(out, "{}\n", self.method.trim());
        for t in &self.tables {
            if !t.caption.is_empty() {
                let _ = writeln!(out, "{}\n", t.caption);
            }
            let _ = writeln!(out, "| {} |", t.header.join(" | "));
            let _ = writeln!(
                out,
                "|{}|",
                t.header
                    .iter()
                    .map(|_| " --- ")
                    .collect::<Vec<_>>()
                    .join("|")
            );
            for r in &t.rows {
                let _ = writeln!(out, "| {} |", r.join(" | "));
            }
            out.push('\n');
        }
        for n in &self.notes {
            let _ = writeln!(out, "{}\n", n.trim());
        }
        let _ = writeln!(out, "_This section took {:.0} s._", self.seconds);
        out
    }
}

/// A table of figures; the first column names the row.
#[derive(Debug, Default)]
pub struct Table {
    pub caption: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(caption: &str, header: &[&str]) -> Table {
        Table {
            caption: caption.into(),
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }
}

/// A ratio measured within one run: the headline figures.
#[derive(Debug)]
pub struct Headline {
    pub what: String,
    pub value: String,
}

/// One latency distribution for the plot.
#[derive(Debug)]
pub struct Series {
    pub group: String,
    pub label: String,
    pub shape: Shape,
}

/// The whole run.
#[derive(Debug)]
pub struct Report {
    pub machine: Machine,
    pub command: String,
    pub sections: Vec<Section>,
    pub headlines: Vec<Headline>,
    pub series: Vec<Series>,
    /// What the bench does not measure yet, and why.
    pub not_measured: Vec<String>,
    /// Where the plot was written; empty when it was not (a run of some
    /// sections leaves the earlier plot).
    pub plot_path: String,
    pub total_seconds: f64,
}

impl Report {
    pub fn headline(&mut self, what: impl Into<String>, value: impl Into<String>) {
        self.headlines.push(Headline {
            what: what.into(),
            value: value.into(),
        });
    }

    /// The headline `what`: `a ÷ b`, run by run (see [`ratio`]), as `1.23× (…)`.
    pub fn ratio_headline(&mut self, what: impl Into<String>, a: &Spread, b: &Spread) {
        self.headline(what, ratio(a, b).show(times));
    }

    pub fn series(&mut self, group: &str, label: &str, shape: Option<Shape>) {
        if let Some(shape) = shape {
            self.series.push(Series {
                group: group.into(),
                label: label.into(),
                shape,
            });
        }
    }

    /// BENCHMARKS.md.
    pub fn markdown(&self) -> String {
        let m = &self.machine;
        let mut out = String::new();
        let _ = writeln!(out, "# Benchmarks\n");
        let _ = writeln!(
            out,
            "Written by `{}` on {}; do not edit by hand, run it again.\n",
            self.command, m.date
        );
        out.push_str(HOW_TO_READ);
        let _ = writeln!(out, "\n## Machine\n");
        let _ = writeln!(out, "| | |\n| --- | --- |");
        let _ = writeln!(out, "| CPUs (`nproc`) | {} |", m.cpus);
        let _ = writeln!(out, "| CPU model | {} |", m.cpu_model);
        let _ = writeln!(out, "| memory | {} |", m.memory);
        let _ = writeln!(out, "| kernel | {} |", m.kernel);
        let _ = writeln!(out, "| compiler | {} |", m.rustc);
        let _ = writeln!(out, "| commit | `{}` |", m.commit);
        let _ = writeln!(out, "| date (UTC) | {} |", m.date);
        let _ = writeln!(
            out,
            "| load average when it started | {} |",
            m.load_at_start
        );
        let _ = writeln!(out, "| command | `{}` |", self.command);
        let _ = writeln!(
            out,
            "| wall time of the whole bench | {:.0} s |",
            self.total_seconds
        );
        let _ = writeln!(out, "\n## Headline: ratios measured in the same run\n");
        let _ = writeln!(
            out,
            "| | median (lowest–highest over runs) |\n| --- | --- |"
        );
        for h in &self.headlines {
            let _ = writeln!(out, "| {} | {} |", h.what, h.value);
        }
        if !self.series.is_empty() {
            let _ = writeln!(
                out,
                "\n![Latency distributions side by side]({})\n\n\
                 Each box spans p25–p75 with a line at the median; whiskers reach p1 and p99; \
                 the dot is p99.9. The scale is logarithmic. Samples of every run are pooled.",
                self.plot_path
            );
        }
        for s in &self.sections {
            out.push('\n');
            out.push_str(&s.markdown());
        }
        let _ = writeln!(out, "\n## Not measured yet\n");
        for n in &self.not_measured {
            let _ = writeln!(out, "- {n}");
        }
        out
    }

    /// The one-screen summary printed at the end.
    pub fn summary(&self, markdown_path: &str) -> String {
        let mut out = String::new();
        let m = &self.machine;
        let _ = writeln!(
            out,
            "watchlife bench: {} CPUs ({}), {}, commit {}",
            m.cpus, m.cpu_model, m.memory, m.commit
        );
        let _ = writeln!(out, "ratios (same run):");
        for h in &self.headlines {
            let _ = writeln!(out, "  {}: {}", h.what, h.value);
        }
        for s in &self.sections {
            let _ = writeln!(out, "{} ({:.0} s):", s.title, s.seconds);
            for line in &s.summary {
                let _ = writeln!(out, "  {line}");
            }
        }
        let _ = writeln!(
            out,
            "not measured: {} item(s), listed in {markdown_path}",
            self.not_measured.len()
        );
        if self.plot_path.is_empty() {
            let _ = writeln!(
                out,
                "put the sections measured into {markdown_path} in {:.0} s",
                self.total_seconds
            );
        } else {
            let _ = writeln!(
                out,
                "wrote {markdown_path} and {} in {:.0} s",
                self.plot_path, self.total_seconds
            );
        }
        out
    }
}

const HOW_TO_READ: &str = "\
## How to read this

- **Ratios are the headline.** This machine is shared and noisy: absolute
  times move with whatever else runs. A ratio compares two things measured
  minutes apart in the same run, so it moves much less; trust it first.
- **Every figure is a median over repeated runs**, followed by the lowest
  and highest run in brackets. A wide bracket means a noisy machine, not a
  precise number.
- **Latency percentiles** (p50, p99) are of every sample of a run; the
  figure shown is the median of the runs' percentiles.
- **Memory** is heap bytes counted by the bench's own allocator where the code
  runs inside the bench, and resident memory (`VmRSS`) of the `watchlife`
  process where it runs as its own process. Kernel socket buffers are in
  neither.
- **Nothing here is a pass or fail.** No test asserts on time; budgets are
  compared here, by eye.
";
