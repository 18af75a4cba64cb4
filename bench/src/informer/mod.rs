//! The informer under a steady load, as the bridge runs it: each stage's
//! time at 1,000 and 10,000 events/s ([`load`], [`intervals`]); what a slow
//! handler on one listener costs the others (nothing, by client-go's
//! design); and LISTs per fault beside client-go v1.20.2 ([`lists`]).

mod intervals;
mod lists;
mod load;
mod tables;

use crate::bridge::SlowListener;
use crate::report::{Report, Section};
use crate::scenario::Scenario;
use intervals::Distribution;
use load::Load;
use std::path::PathBuf;
use std::time::Duration;
use watchlife_informer::informer::{Options, SCHEDULER_SCHEDULED};
use watchlife_informer_frames::Informer;

/// How long the slow listener's handler takes: one request to a nearby
/// server, the kind of call a handler should not make but sometimes does.
const SLOW_DELAY: Duration = Duration::from_millis(1);

/// The listener made slow: one of the scheduler's, so that the
/// controller's path to the reconcile is among those compared.
const SLOW: &str = SCHEDULER_SCHEDULED;

#[derive(Debug, Clone)]
pub struct Config {
    pub runs: usize,
    /// Seconds of load at each rate.
    pub seconds: f64,
    /// Events per second.
    pub rates: Vec<f64>,
    /// The `watchlife` binary the differential tests run.
    pub watchlife: PathBuf,
}

/// One load's figures.
#[derive(Debug)]
struct Measured {
    intervals: Vec<(String, Option<Distribution>)>,
    delivered: usize,
    finished: usize,
    lost: u64,
    coalesced: usize,
    achieved_rate: f64,
}

impl Measured {
    fn of(outcome: load::Outcome, listeners: &[String]) -> Measured {
        Measured {
            intervals: intervals::of(&outcome.events, listeners)
                .into_iter()
                .map(|(name, samples)| (name, Distribution::of(&samples)))
                .collect(),
            delivered: outcome.delivered,
            finished: outcome.events.len(),
            lost: outcome.lost,
            coalesced: outcome.events.iter().filter(|e| e.coalesced).count(),
            achieved_rate: outcome.achieved_rate,
        }
    }

    fn interval(&self, name: &str) -> Option<Distribution> {
        self.intervals.iter().find(|(n, _)| n == name)?.1
    }
}

/// Every run of one rate, without and with the slow listener.
#[derive(Debug, Default)]
pub struct AtRate {
    rate: f64,
    baseline: Vec<Measured>,
    slow: Vec<Measured>,
}

/// What the runs found.
pub struct Gathered {
    /// The listeners of the pods' informer, by name.
    listeners: Vec<String>,
    rates: Vec<AtRate>,
    lists: lists::Outcome,
}

impl Scenario for Config {
    type Figures = Gathered;

    fn measure(&self) -> Gathered {
        let listeners = Informer::new(Options::pods()).listeners();
        let mut rates: Vec<AtRate> = self
            .rates
            .iter()
            .map(|&rate| AtRate {
                rate,
                ..AtRate::default()
            })
            .collect();
        for run in 0..self.runs {
            for at in &mut rates {
                for slow in [false, true] {
                    self.measure_load(run, at, slow, &listeners);
                }
            }
        }
        progress!("informer: LISTs per fault, the differential tests beside client-go");
        let lists = lists::run(&self.watchlife);
        Gathered {
            listeners,
            rates,
            lists,
        }
    }

    fn report(&self, gathered: Gathered, report: &mut Report, seconds: f64) {
        let Gathered {
            listeners,
            rates,
            lists,
        } = gathered;
        let mut tables = vec![tables::load(&rates)];
        tables.extend(rates.iter().map(tables::stages));
        tables.push(tables::slow_listener(&rates, &listeners, report));
        tables.push(tables::lists(&lists, report));
        report.sections.push(Section {
            title: "Informer stages under a steady load, a slow handler, and LISTs per fault"
                .into(),
            method: tables::method(self),
            tables,
            notes: tables::notes(&rates, &lists),
            summary: tables::summary(&rates, &lists),
            seconds,
        });
    }
}

impl Config {
    /// One run of the pipeline at `at`'s rate, with or without the slow listener.
    fn measure_load(&self, run: usize, at: &mut AtRate, slow: bool, listeners: &[String]) {
        progress!(
            "informer: run {}/{}, {} events/s for {} s{}",
            run + 1,
            self.runs,
            at.rate,
            self.seconds,
            if slow { ", one listener slow" } else { "" }
        );
        let load = Load {
            rate: at.rate,
            seconds: self.seconds,
            slow: slow.then(|| SlowListener {
                listener: SLOW.into(),
                delay: SLOW_DELAY,
            }),
        };
        let measured = Measured::of(load::run(&load), listeners);
        if slow {
            at.slow.push(measured);
        } else {
            at.baseline.push(measured);
        }
    }
}
