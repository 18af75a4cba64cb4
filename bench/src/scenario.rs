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

/// A scenario that needs etcd and kube-apiserver v1.20.2 (`make test`
/// installs them): measured only where they are installed; elsewhere
/// "Not measured yet" lists `missing`.
pub struct OnRealCluster<'a, S> {
    pub scenario: &'a S,
    /// What the report says when they are not installed.
    pub missing: &'static str,
}

impl<S: Scenario> Scenario for OnRealCluster<'_, S> {
    type Figures = Option<S::Figures>;

    fn measure(&self) -> Option<S::Figures> {
        real_cluster_installed().then(|| self.scenario.measure())
    }

    fn report(&self, figures: Option<S::Figures>, report: &mut Report, seconds: f64) {
        match figures {
            Some(figures) => self.scenario.report(figures, report, seconds),
            None => report.not_measured.push(self.missing.into()),
        }
    }
}

/// Whether etcd and kube-apiserver are installed (`make test` installs them).
fn real_cluster_installed() -> bool {
    std::process::Command::new("scripts/ensure-real-cluster.sh")
        .arg("--check")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// What a scenario's runs found: the figures of every run that finished,
/// and why the runs stopped early, if they did.
pub struct Runs<F> {
    pub figures: F,
    pub failure: Option<String>,
}

/// The note of a section whose runs stopped early, saying why; `None` when
/// they did not.
pub fn stopped_early(failure: Option<&str>) -> Option<String> {
    failure.map(|e| format!("The measurement stopped early: {e}."))
}

/// Writes delivered to watchers, repeated: in each of `runs`, each count of
/// `watchers` in turn takes `writes` for throughput (each batch waited for
/// until every watcher has it), then `paced_writes` at a steady pace for
/// latency.
#[derive(Debug, Clone)]
pub struct WriteLoad {
    pub runs: usize,
    pub watchers: Vec<usize>,
    pub writes: usize,
    pub paced_writes: usize,
}
