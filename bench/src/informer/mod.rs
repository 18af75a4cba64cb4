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
use intervals::Distribution;
use load::Load;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use watchlife_informer_frames::Informer;
use watchlife_informer::informer::{Options, SCHEDULER_SCHEDULED};

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
struct AtRate {
    rate: f64,
    baseline: Vec<Measured>,
    slow: Vec<Measured>,
}

pub fn run(report: &mut Report, config: &Config) {
    let started = Instant::now();
    let listeners = Informer::new(Options::pods()).listeners();
    let mut rates: Vec<AtRate> = config
        .rates
        .iter()
        .map(|&rate| AtRate {
            rate,
            ..AtRate::default()
        })
        .collect();
    for run in 0..config.runs {
        for at in &mut rates {
            for slow in [false, true] {
                progress!(
                    "informer: run {}/{}, {} events/s for {} s{}",
                    run + 1,
                    config.runs,
                    at.rate,
                    config.seconds,
                    if slow { ", one listener slow" } else { "" }
                );
                let load = Load {
                    rate: at.rate,
                    seconds: config.seconds,
                    slow: slow.then(|| SlowListener {
                        listener: SLOW.into(),
                        delay: SLOW_DELAY,
                    }),
                };
                let measured = Measured::of(load::run(&load), &listeners);
                if slow {
                    at.slow.push(measured);
                } else {
                    at.baseline.push(measured);
                }
            }
        }
    }
    progress!("informer: LISTs per fault, the differential tests beside client-go");
    let lists = lists::run(&config.watchlife);
    let mut tables = vec![tables::load(&rates)];
    tables.extend(rates.iter().map(tables::stages));
    tables.push(tables::slow_listener(&rates, &listeners, report));
    tables.push(tables::lists(&lists, report));
    report.sections.push(Section {
        title: "Informer stages under a steady load, a slow handler, and LISTs per fault".into(),
        method: tables::method(config),
        tables,
        notes: tables::notes(&rates, &lists),
        summary: tables::summary(&rates, &lists),
        seconds: started.elapsed().as_secs_f64(),
    });
}
