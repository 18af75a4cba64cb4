//! The fan-out section's tables, notes, summary and headlines.

use super::{CROWD_RATES, FULL_RATE, Gathered};
use crate::bridge;
use crate::report::{Report, Table};
use crate::scenario::stopped_early;
use crate::stats::{bytes, count, micros, num, percent, plural, share};

/// One row per step under load; each step's latencies go to the plot.
pub fn steps_table(gathered: &Gathered, report: &mut Report) -> Table {
    let mut table = Table::new(
        "",
        &[
            "viewers",
            "workload",
            "changes/s asked → events/s published",
            "upstream arrival → viewer p50",
            "p99",
            "hub → viewer p50",
            "p99",
            "upstream arrival → hub p50",
            "events each viewer got ÷ published",
            "resyncs per viewer-minute",
            "watchlife CPU (100% = one core)",
            "watchlife CPU per frame sent",
            "per message sent",
            "the viewers' CPU (the bench)",
            "watchlife RSS",
        ],
    );
    let busy = &gathered.plan.busy;
    for (f, s) in gathered.figures.iter().zip(&gathered.plan.steps()) {
        let workload = if busy.contains(s) {
            "the demo's story"
        } else {
            "the bench's writes"
        };
        table.row(vec![
            count(s.viewers),
            workload.to_string(),
            format!(
                "{} → {}",
                count(s.rate as usize),
                num(f.published_per_second.median())
            ),
            f.reflector_p50.show(micros),
            f.reflector_p99.show(micros),
            f.hub_p50.show(micros),
            f.hub_p99.show(micros),
            f.informer_p50.show(micros),
            f.delivered_share.show(share),
            f.resyncs_per_viewer_minute.show(num),
            f.cpu_percent.show(percent),
            f.cpu_per_frame.show(micros),
            f.cpu_per_message.show(micros),
            f.viewers_cpu_percent.show(percent),
            f.rss.show(bytes),
        ]);
        let changes = if busy.contains(s) {
            "changes"
        } else {
            "writes"
        };
        report.series(
            "fan-out: upstream arrival → WebSocket viewer",
            &format!(
                "{} viewer{}, {} {changes}/s",
                count(s.viewers),
                plural(s.viewers),
                count(s.rate as usize),
            ),
            f.reflector.shape(),
        );
    }
    table
}

/// Memory per viewer as the crowd joins an idle demo.
pub fn memory_table(gathered: &Gathered) -> Table {
    let mut memory = Table::new(
        "Memory per viewer, as the crowd joins `watchlife --demo --demo-idle` (no workload, \
         so nothing else grows meanwhile):",
        &["viewers", "RSS per viewer", "viewers connected per second"],
    );
    for (f, n) in gathered.idle.iter().zip(&gathered.plan.memory_steps) {
        memory.row(vec![
            count(*n),
            f.rss_per_viewer.show(bytes),
            f.connects_per_second.show(num),
        ]);
    }
    memory
}

pub fn notes(gathered: &Gathered) -> Vec<String> {
    let mut notes = vec![format!(
        "With no viewer, `watchlife --demo --demo-rate {FULL_RATE}` published {} stream \
         frames per second and used {} of a core: the demo's workload, its control plane, \
         its HTTP API and the bridge's list-watch of it all run in that one process. \
         \"Upstream arrival\" is the event's `reflector` stage, so that latency includes \
         the informer's stages before the hub; \"hub\" is its `reconcile` stage, right \
         before the hub publishes it, so that latency is the fan-out alone. \"Events each \
         viewer got\" counts, over the window, the event frames the viewers read against \
         those the hub published; a viewer still reading an earlier backlog can exceed \
         100%.",
        gathered.quiet_rate.show(num),
        gathered.quiet_cpu.show(percent)
    )];
    notes.extend(gathered.plan.limited.clone());
    notes.extend(informer_note(gathered));
    notes.push(crowd_note(gathered.plan.crowd));
    notes.push(
        "The viewers run in the bench, on the same two cores as `watchlife`: at the larger \
         steps they compete with it for CPU, and their reading is part of the latency."
            .to_string(),
    );
    if gathered.failures > 0 {
        notes.push(format!(
            "{} viewer connections failed or were closed by `watchlife` over all runs.",
            gathered.failures
        ));
    }
    notes.extend(stopped_early(gathered.failure.as_deref()));
    notes
}

/// The informer's share of the latency, step by step on the demo's story.
fn informer_note(gathered: &Gathered) -> Option<String> {
    let busy = &gathered.plan.busy;
    if busy.len() < 2 {
        return None;
    }
    let cells: Vec<String> = gathered.figures[..busy.len()]
        .iter()
        .zip(busy)
        .map(|(f, s)| {
            format!(
                "{} with {} viewer{}",
                micros(f.informer_p50.median()),
                count(s.viewers),
                plural(s.viewers)
            )
        })
        .collect();
    Some(format!(
        "**Where the time goes inside `watchlife`.** On the demo's story at {FULL_RATE} \
         changes/s, the time from an event's arrival at the Reflector to the hub (its \
         `reconcile` stage: the informer's FIFO, Indexer, handlers and workqueue) is, at the \
         median, {}. The source and the informer run on a runtime of their own, apart from \
         the viewers' connections, so a crowd slows them only by the CPU the kernel gives \
         the viewers' threads; what the viewers wait beyond that is the fan-out itself.",
        cells.join(", ")
    ))
}

/// How the crowd is paced, with the bridge's pacing rules.
fn crowd_note(crowd: usize) -> String {
    let pacing = bridge::ViewerPacing::describe(crowd);
    format!(
        "**The crowd.** Every viewer asks for batches (`/ws?batch=true`), as the page does \
         (and, in the compressed section, for compression too), and reads every frame of \
         every message. A write per event to each of {} viewers at \
         {} writes/s would be {} million WebSocket messages a second through loopback, \
         written by `watchlife` and read by the bench on the same two cores; the bridge \
         paces each viewer's writes instead, so that all of them together stay under {} \
         messages a second (an interval of {} with {} viewers, never over {}), and frames \
         that arrive meanwhile share a message. Connecting a crowd that large to a demo \
         already running its story took minutes, so the crowd joins a demo with no story of \
         its own, and the bench then updates one configmap through the demo's API at {} \
         writes/s: one event, one frame per viewer, per write. Where the viewers cannot keep \
         up, the table shows it as a share of the events under 100% and as resyncs: the \
         bridge's slow-viewer policy (a bounded queue per viewer, then `resync` and a \
         snapshot) at work, while the upstream → hub time shows whether the stream itself \
         stayed on time.",
        count(crowd),
        count(*CROWD_RATES.last().unwrap_or(&1) as usize),
        num(crowd as f64 * *CROWD_RATES.last().unwrap_or(&1) as f64 / 1e6),
        count(pacing.writes_per_second as usize),
        micros(pacing.interval.as_micros() as f64),
        count(crowd),
        micros(pacing.max_interval.as_micros() as f64),
        CROWD_RATES.map(|r| count(r as usize)).join(", "),
    )
}

pub fn summary(gathered: &Gathered) -> Vec<String> {
    let mut summary = Vec::new();
    for (f, s) in gathered.figures.iter().zip(&gathered.plan.steps()) {
        summary.push(format!(
            "{} viewers at {}/s: upstream → viewer p50 {} p99 {}, hub → viewer p50 {}; got {:.0}% of events; CPU {:.0}%",
            count(s.viewers),
            count(s.rate as usize),
            micros(f.reflector_p50.median()),
            micros(f.reflector_p99.median()),
            micros(f.hub_p50.median()),
            f.delivered_share.median() * 100.0,
            f.cpu_percent.median()
        ));
    }
    if let (Some(f), Some(n)) = (gathered.idle.last(), gathered.plan.memory_steps.last()) {
        summary.push(format!(
            "memory per viewer at {}: {} (no workload)",
            count(*n),
            bytes(f.rss_per_viewer.median())
        ));
    }
    summary
}

/// The most viewers of the demo's story beside one, hub → viewer and upstream → hub.
pub fn headlines(gathered: &Gathered, name: &str, report: &mut Report) {
    let busy = &gathered.plan.busy;
    let figures = &gathered.figures;
    let (Some(first), Some(last)) = (figures.first(), figures.get(busy.len().saturating_sub(1)))
    else {
        return;
    };
    let most = count(busy.last().map_or(1, |s| s.viewers));
    report.ratio_headline(
        format!("{name}: hub → viewer p50, {most} viewers ÷ 1 viewer, at {FULL_RATE} changes/s"),
        &last.hub_p50,
        &first.hub_p50,
    );
    report.ratio_headline(
        format!(
            "{name}: upstream arrival → hub p50 (the informer inside watchlife), {most} viewers ÷ 1 viewer"
        ),
        &last.informer_p50,
        &first.informer_p50,
    );
    let crowded = gathered.plan.crowded.iter().enumerate();
    let Some((i, step)) = crowded.clone().find(|(_, s)| s.rate == CROWD_RATES[1]) else {
        return;
    };
    let f = &figures[busy.len() + i];
    let viewers = count(step.viewers);
    report.headline(
        format!(
            "{name}: watchlife's memory per busy viewer, {viewers} viewers at {} writes/s (goal ≤ {} in every run)",
            step.rate,
            bytes(BUSY_VIEWER_GOAL_BYTES)
        ),
        f.rss_per_busy_viewer.show(bytes),
    );
    report.headline(
        format!(
            "{name}: upstream arrival → viewer p99, {viewers} viewers at {} writes/s (goal < {} in every run)",
            step.rate,
            micros(CROWD_P99_GOAL_MICROS)
        ),
        f.reflector_p99.show(micros),
    );
}

/// Goals for an audience of a thousand phones and more: what a viewer that reads on
/// may cost the bridge, and how late its frames may arrive, at 100 writes/s.
const BUSY_VIEWER_GOAL_BYTES: f64 = 50.0 * 1024.0;
const CROWD_P99_GOAL_MICROS: f64 = 500_000.0;
