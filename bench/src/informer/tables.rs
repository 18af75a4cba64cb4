//! The informer section's tables and words.

use super::intervals::{self, CONTROLLER_PATH, Distribution, WHOLE};
use super::lists;
use super::{AtRate, Config, Measured, SLOW, SLOW_DELAY};
use crate::report::{Report, Table};
use crate::stats::{Spread, count, micros, num, ratio, times};
use watchlife_informer::informer::CONTROLLER;

/// A percentile of a distribution, in µs.
type Pick = fn(&Distribution) -> i64;

const P50: (&str, Pick) = ("p50", |d| d.p50);
const P99: (&str, Pick) = ("p99", |d| d.p99);

/// One interval's percentile over runs (a run without the interval is left out).
fn spread(runs: &[Measured], interval: &str, pick: Pick) -> Spread {
    let mut s = Spread::default();
    for m in runs {
        if let Some(d) = m.interval(interval) {
            s.push(pick(&d) as f64);
        }
    }
    s
}

fn rate_name(rate: f64) -> String {
    format!("{} events/s", num(rate))
}

/// `n (x%)` of `total`.
fn share(n: usize, total: usize) -> String {
    if total == 0 {
        return "–".into();
    }
    format!("{} ({:.1}%)", count(n), 100.0 * n as f64 / total as f64)
}

/// What each load delivered and what came back finished.
pub fn load(rates: &[AtRate]) -> Table {
    let mut t = Table::new(
        "The loads (all runs):",
        &[
            "events/s asked",
            "slow listener",
            "events delivered per run",
            "generator's achieved rate",
            "finished events collected",
            "coalesced in the workqueue",
        ],
    );
    for at in rates {
        for (slow, runs) in [(false, &at.baseline), (true, &at.slow)] {
            let delivered: usize = runs.iter().map(|m| m.delivered).sum();
            let finished: usize = runs.iter().map(|m| m.finished).sum();
            let coalesced: usize = runs.iter().map(|m| m.coalesced).sum();
            let achieved = Spread {
                runs: runs.iter().map(|m| m.achieved_rate).collect(),
            };
            t.row(vec![
                num(at.rate),
                if slow {
                    format!("`{SLOW}`, {} ms", SLOW_DELAY.as_millis())
                } else {
                    "none".into()
                },
                runs.first().map_or("–".into(), |m| num(m.delivered as f64)),
                achieved.show(num),
                format!("{} of {}", num(finished as f64), num(delivered as f64)),
                share(coalesced, finished),
            ]);
        }
    }
    t
}

/// Every interval's distribution at one rate, no slow listener.
pub fn stages(at: &AtRate) -> Table {
    let mut t = Table::new(
        &format!(
            "At {}, no slow listener: each interval of an event's life.",
            rate_name(at.rate)
        ),
        &[
            "interval",
            "samples per run",
            "p50",
            "p90",
            "p99",
            "max",
            "exactly 0 µs (all runs)",
            "below 0 (all runs)",
        ],
    );
    let Some(first) = at.baseline.first() else {
        return t;
    };
    for (name, _) in &first.intervals {
        let dists: Vec<Distribution> = at
            .baseline
            .iter()
            .filter_map(|m| m.interval(name))
            .collect();
        let total: usize = dists.iter().map(|d| d.samples).sum();
        let samples = Spread {
            runs: dists.iter().map(|d| d.samples as f64).collect(),
        };
        let pick = |f: Pick| spread(&at.baseline, name, f).show(micros);
        t.row(vec![
            name.clone(),
            num(samples.median()),
            pick(|d| d.p50),
            pick(|d| d.p90),
            pick(|d| d.p99),
            pick(|d| d.max),
            share(dists.iter().map(|d| d.zeros).sum(), total),
            share(dists.iter().map(|d| d.negative).sum(), total),
        ]);
    }
    t
}

/// The other listeners and the controller's path, without and with the
/// slow listener; the ratio is taken run by run (each run measures both,
/// one after the other). Adds the headlines at the highest rate.
pub fn slow_listener(rates: &[AtRate], listeners: &[String], report: &mut Report) -> Table {
    let mut t = Table::new(
        &format!(
            "The cost of a slow handler on the others: `{SLOW}`'s handler waits {} ms (tokio's \
             timer, which rounds a wait up to its next millisecond tick: the last row says how \
             long the call took). The last two rows at each rate are the slow listener's own; \
             the others are what it should not change.",
            SLOW_DELAY.as_millis()
        ),
        &[
            "events/s",
            "interval",
            "no slow listener",
            &format!("`{SLOW}` waits {} ms", SLOW_DELAY.as_millis()),
            "with ÷ without",
        ],
    );
    let mut compared: Vec<String> = listeners
        .iter()
        .filter(|l| *l != SLOW)
        .map(|l| intervals::dequeue_wait(l))
        .collect();
    compared.extend([CONTROLLER_PATH.to_string(), WHOLE.to_string()]);
    let own = [intervals::dequeue_wait(SLOW), intervals::call_time(SLOW)];
    for at in rates {
        let rows = compared
            .iter()
            .flat_map(|i| [(i, P50), (i, P99)])
            .chain(own.iter().map(|i| (i, P50)));
        for (interval, (pname, pick)) in rows {
            let without = spread(&at.baseline, interval, pick);
            let with = spread(&at.slow, interval, pick);
            let r = ratio(&with, &without);
            t.row(vec![
                num(at.rate),
                format!("{interval}, {pname}"),
                without.show(micros),
                with.show(micros),
                ratio_or_why(&r, &without),
            ]);
        }
    }
    if let Some(at) = rates.last() {
        for (what, interval) in [
            (
                format!("`{CONTROLLER}` waits in its buffer"),
                intervals::dequeue_wait(CONTROLLER),
            ),
            (
                "controller → reconcile finished".to_string(),
                CONTROLLER_PATH.to_string(),
            ),
        ] {
            let r = ratio(
                &spread(&at.slow, &interval, P50.1),
                &spread(&at.baseline, &interval, P50.1),
            );
            report.headline(
                format!(
                    "informer at {}: {what} (p50), another listener's handler waiting {} ms ÷ none",
                    rate_name(at.rate),
                    SLOW_DELAY.as_millis()
                ),
                ratio_or_why(&r, &spread(&at.baseline, &interval, P50.1)),
            );
        }
    }
    t
}

/// A ratio as `1.02× (…)`, or why there is none.
fn ratio_or_why(r: &Spread, without: &Spread) -> String {
    if r.runs.is_empty() && !without.runs.is_empty() {
        "– (0 µs without)".into()
    } else {
        r.show(times)
    }
}

/// LISTs per fault, each side; adds the headline.
pub fn lists(outcome: &lists::Outcome, report: &mut Report) -> Table {
    let mut t = Table::new(
        "LISTs per fault, client-go v1.20.2 beside watchlife, on the same kube-apiserver (one run of the differential tests):",
        &[
            "fault (the differential test)",
            "client-go: LIST requests",
            "watchlife: LIST requests",
            "client-go: as compared",
            "watchlife: as compared",
            "the test found the sides equal",
        ],
    );
    let (mut go, mut wl) = (0, 0);
    for f in &outcome.faults {
        go += f.client_go.requests;
        wl += f.watchlife.requests;
        t.row(vec![
            f.fault.replace('_', " "),
            f.client_go.requests.to_string(),
            f.watchlife.requests.to_string(),
            f.client_go.compared.to_string(),
            f.watchlife.compared.to_string(),
            if f.equal { "yes" } else { "**no**" }.into(),
        ]);
    }
    if !outcome.faults.is_empty() {
        let mut r = Spread::default();
        r.push(wl as f64 / go as f64);
        report.headline(
            format!(
                "LIST requests over {} faults of the differential tests, watchlife ÷ client-go v1.20.2",
                outcome.faults.len()
            ),
            r.show(times),
        );
    }
    t
}

pub fn method(config: &Config) -> String {
    format!(
        "The bridge's own informer pipeline (`watchlife::upstream::pipeline::Pipeline`: the processing \
         loop, a task per listener, {workers} workqueue worker, publishing to a hub) on one \
         tokio runtime of {threads} threads, shaped as the bridge's upstream runtime. A task \
         of the same runtime delivers pod watch events at a steady rate for {secs} s ({keys} \
         pods, each going ADDED unscheduled → MODIFIED onto a node → MODIFIED → DELETED, so \
         that each of the three listeners calls its handler), stamping each event's \
         `reflector` stage the moment before `Pipeline::deliver`, as the bridge's Reflector \
         stamps a decoded event; tokio's timer wakes it at most once a millisecond, so the \
         events due since the last wake go out together (one at 1,000 events/s, ten at \
         10,000). A viewer of the hub collects every finished event, and the bench reads \
         each stage's stamp (the system clock, in µs, as in the bridge). Percentiles are \
         nearest-rank samples of each run; the figure is the median over {runs} runs. The \
         slow runs register `{SLOW}` with a handler that waits {ms} ms \
         (`Pipeline::start_with_slow_listener`, a seam for benchmarks and demos).",
        workers = 1,
        threads = crate::bridge::UPSTREAM_THREADS,
        secs = config.seconds,
        keys = super::load::KEYS,
        runs = config.runs,
        ms = SLOW_DELAY.as_millis(),
    )
}

pub fn notes(rates: &[AtRate], outcome: &lists::Outcome) -> Vec<String> {
    let mut notes = vec![
        "**Intervals as they are.** Each interval is the later stamp less the earlier, in whole \
         microseconds, never clamped: two stamps read within the same microsecond make exactly \
         0 (the tables count them), and stamps read by different threads from the system clock \
         could make a negative one (counted too). A listener's intervals count only the \
         notifications its handler was called for (a filtering handler that filters an object \
         out leaves no call)."
            .to_string(),
        format!(
            "**A slow handler.** `{SLOW}`'s task takes its notification, then waits {ms} ms \
             without holding the informer, then runs the handler: its own buffer grows (its \
             wait is the last rows of the table) while the other listeners' tasks and the \
             worker go on, as each processorListener's goroutine does in client-go. An event \
             is published only once every listener has run, so the slow runs take longer to \
             drain; their figures are read from the stamps, not from when the event came \
             out. The slow runs also do less work while the load lasts: an event is \
             published (its frame encoded by the hub) when its last listener returns, which \
             in the slow runs is the slow listener, after the load and at its pace, and so are \
             its calls. A ratio under 1 above is that lighter load, not a gain the slow \
             handler brings. A handler that burns {ms} ms of CPU instead is not measured here: \
             handlers run under the informer's lock, so it would hold up every stage.",
            ms = SLOW_DELAY.as_millis()
        ),
        "**LISTs per fault.** The differential tests run as `make test` runs them (each with its \
         own etcd and kube-apiserver), with `WATCHLIFE_DIFFERENTIAL_LISTS` set so that each \
         prints both sides' LIST requests (first pages). \"As compared\" is what the test \
         holds equal: a failed LIST and its retries count once, since how many retries fit \
         in a backoff with jitter is chance."
            .to_string(),
    ];
    let lost: u64 = rates
        .iter()
        .flat_map(|at| at.baseline.iter().chain(&at.slow))
        .map(|m| m.lost)
        .sum();
    if lost > 0 {
        notes.push(format!(
            "The collector missed {lost} finished events (it fell behind the hub's ring); the \
             figures are of the others."
        ));
    }
    if let Some(failure) = &outcome.failure {
        notes.push(format!(
            "The differential tests did not all pass: {failure}."
        ));
    }
    notes
}

pub fn summary(rates: &[AtRate], outcome: &lists::Outcome) -> Vec<String> {
    let mut lines: Vec<String> = rates
        .iter()
        .map(|at| {
            let whole = |runs: &[Measured]| spread(runs, WHOLE, P50.1).show(micros);
            format!(
                "{}: Reflector → reconcile finished p50 {} ({} with `{SLOW}` slow)",
                rate_name(at.rate),
                whole(&at.baseline),
                whole(&at.slow)
            )
        })
        .collect();
    for f in &outcome.faults {
        lines.push(format!(
            "{}: LISTs client-go {}, watchlife {}",
            f.fault, f.client_go.requests, f.watchlife.requests
        ));
    }
    lines
}
