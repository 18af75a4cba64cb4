//! The shape every section of the bench has: measure, then report.
//!
//! A section's [`Scenario::measure`] repeats its runs; each run sets up what
//! it measures (a control plane, a cluster, a `watchlife` process), drives
//! it with load, and takes its figures. [`Scenario::report`] then turns the
//! figures of every run into the section's tables, headlines, notes and
//! plotted series. [`run`] times the two together, as the section's
//! "This section took" line says.

use crate::report::Report;
use std::time::Instant;

/// One section of the bench.
pub trait Scenario {
    /// What the runs found, every run's figures side by side.
    type Figures;

    /// Sets up, drives and measures every run, in order.
    fn measure(&self) -> Self::Figures;

    /// Adds the section, its headlines and its series to `report`;
    /// `seconds` is the wall time the section took.
    fn report(&self, figures: Self::Figures, report: &mut Report, seconds: f64);
}

/// Measures `scenario` and reports it, timing both.
pub fn run(scenario: &impl Scenario, report: &mut Report) {
    let started = Instant::now();
    let figures = scenario.measure();
    scenario.report(figures, report, started.elapsed().as_secs_f64());
}
