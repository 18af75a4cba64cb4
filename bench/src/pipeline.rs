//! Events per second through the informer on one core, from the raw bytes of
//! a watch stream to reconcile.
//!
//! One thread does everything, in the order the bridge does it for each
//! event: read the watch line (serde_json, the object kept as its text),
//! redact the object as the bridge does (`watchlife::upstream::redact::redact_text`),
//! make the Reflector's `WatchEvent` (stage `reflector` stamped), `Informer::enqueue` (FIFO),
//! `drain` (Indexer, listeners, workqueue, reconcile), and encode
//! the event frame the hub sends to every viewer. Each stage reads the system
//! clock, as the bridge's do. The references on the same bytes: parsing
//! alone, and parsing plus the encoding of the frame, so the informer's own
//! share is visible; and kube-rs's `watcher` + `reflector` ([`crate::kube_watcher`]).

use crate::objects::{pod_event, watch_stream};
use crate::report::{Report, Section, Table};
use crate::scenario::Scenario;
use crate::stats::{Spread, micros, num, ratio};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::bridge::{Received, redact_text};
use std::time::Instant;
use watchlife_controlplane::Clock;
use watchlife_informer::Object;
use watchlife_informer_frames::Informer;
use watchlife_protocol::{EventType, FrameBody, ServerFrame, WatchEvent};

/// Distinct pods the events go round.
const KEYS: usize = 1000;

#[derive(Debug, Clone)]
pub struct Config {
    pub runs: usize,
    pub events: usize,
}

/// One line of a watch stream, its object parsed into a tree (the references).
#[derive(Deserialize)]
struct Line {
    #[serde(rename = "type")]
    event_type: EventType,
    object: Value,
}

/// One line of a watch stream as the bridge reads it: the object kept as text.
#[derive(Deserialize)]
struct RawLine {
    #[serde(rename = "type")]
    event_type: EventType,
    object: Box<RawValue>,
}

#[derive(Clone, Copy)]
enum Path {
    ParseOnly,
    ParseAndEncode,
    Pipeline,
}

/// What the runs found: events/s of each path, run by run.
pub struct Gathered {
    /// Watch events driven per run.
    events: usize,
    /// Mean bytes per watch line.
    mean_line: f64,
    parse: Spread,
    parse_encode: Spread,
    pipeline: Spread,
    kube_rs: Spread,
    /// Why kube-rs's watcher did not finish a run, if it did not.
    kube_failure: Option<String>,
}

impl Scenario for Config {
    type Figures = Gathered;

    fn measure(&self) -> Gathered {
        let stream = watch_stream(self.events, KEYS);
        let lines = lines_of(&stream);
        let mut gathered = Gathered {
            events: lines.len(),
            mean_line: stream.len() as f64 / lines.len() as f64,
            parse: Spread::default(),
            parse_encode: Spread::default(),
            pipeline: Spread::default(),
            kube_rs: Spread::default(),
            kube_failure: None,
        };
        let bytes = bytes::Bytes::from(stream.clone());
        for run in 0..self.runs {
            progress!("pipeline: run {}/{}", run + 1, self.runs);
            let g = &mut gathered;
            g.parse.push(events_per_second(&lines, Path::ParseOnly));
            g.parse_encode
                .push(events_per_second(&lines, Path::ParseAndEncode));
            g.pipeline.push(events_per_second(&lines, Path::Pipeline));
            match crate::kube_watcher::events_per_second(&bytes, lines.len()) {
                Ok(rate) => g.kube_rs.push(rate),
                Err(e) => g.kube_failure = Some(e),
            }
        }
        gathered
    }

    fn report(&self, gathered: Gathered, report: &mut Report, seconds: f64) {
        let g = &gathered;
        report.headline(
            "pipeline: events/s through the whole pipeline ÷ events/s of parsing alone",
            ratio(&g.pipeline, &g.parse).show(|v| format!("{:.2}", v)),
        );
        report.headline(
            "pipeline: events/s, watchlife's whole pipeline ÷ kube-rs's watcher + reflector",
            ratio(&g.pipeline, &g.kube_rs).show(|v| format!("{:.2}", v)),
        );
        report.sections.push(Section {
            title: "Informer pipeline: raw watch bytes to reconcile, one core".into(),
            method: self.method(g),
            tables: vec![table(g)],
            notes: notes(g),
            summary: vec![format!(
                "{} events/s through the whole pipeline (parsing alone: {} events/s)",
                num(g.pipeline.median()),
                num(g.parse.median())
            )],
            seconds,
        });
    }
}

impl Config {
    fn method(&self, g: &Gathered) -> String {
        format!(
            "{} watch events (pods of about {:.0} bytes per line, over {KEYS} keys: ADDED, then \
             MODIFIED, with a DELETED now and then) are generated in memory, then driven through \
             the `watchlife-informer` crate on one thread: `serde_json` reads each line (the \
             object kept as text), the bridge's redaction drops what must not leave it, the \
             Reflector's `WatchEvent` is made, then `enqueue` and `drain` (every stage), \
             and the event's viewer frame is encoded with `serde_json`, as the hub does once \
             for all viewers. Every stage stamps its time from the system clock. {} runs.",
            num(g.events as f64),
            g.mean_line,
            self.runs
        )
    }
}

/// Microseconds per event, run by run, from events/s.
fn per_event(s: &Spread) -> Spread {
    Spread {
        runs: s.runs.iter().map(|r| 1e6 / r).collect(),
    }
}

/// One row per path, the references first.
fn table(g: &Gathered) -> Table {
    let mut table = Table::new(
        "",
        &[
            "path, on one thread",
            "events/s",
            "time per event",
            "MB/s of watch bytes",
        ],
    );
    for (name, s) in [
        (
            "parse the watch line into a tree only (reference)",
            &g.parse,
        ),
        (
            "parse into a tree + encode the viewer frame (reference)",
            &g.parse_encode,
        ),
        (
            "kube-rs: `kube_runtime::watcher` (typed `Pod`) → `reflector` store (reference)",
            &g.kube_rs,
        ),
        (
            "**watchlife: read (object as text) → redact → Reflector event → FIFO → Indexer → handlers → workqueue → reconcile → frame**",
            &g.pipeline,
        ),
    ] {
        table.row(vec![
            name.into(),
            s.show(num),
            per_event(s).show(micros),
            s.show(|v| num(v * g.mean_line / 1e6)),
        ]);
    }
    table
}

fn notes(g: &Gathered) -> Vec<String> {
    let informer_share = Spread {
        runs: g
            .pipeline
            .runs
            .iter()
            .zip(&g.parse_encode.runs)
            .map(|(p, r)| 1e6 / p - 1e6 / r)
            .collect(),
    };
    let mut notes = vec![format!(
        "watchlife keeps each object as the text of its JSON and parses only the few \
         fields its stages read, so its whole pipeline can cost less than parsing the line \
         into a tree. Its time per event minus that of the tree-and-frame reference: {}.",
        informer_share.show(micros)
    )];
    notes.push(
        "kube-rs's watcher and reflector get the same bytes through a `kube::Client` over an \
         in-memory service (no socket, no TLS), in 16 KiB chunks, on one thread: the \
         client's line splitting, serde into a typed `Pod`, the watcher's state machine and \
         the store's write. They do less than watchlife's pipeline (no FIFO, no workqueue, \
         no timestamps, no frame to encode, no redaction) and decode into a typed struct \
         where watchlife keeps the object's text; the row says what a Rust controller's informer costs \
         per event on this machine."
            .to_string(),
    );
    if let Some(e) = &g.kube_failure {
        notes.push(format!("kube-rs's watcher did not finish every run: {e}."));
    }
    notes
}

/// Events a second of the reference path that parses each watch line into
/// a tree, on this machine: the median of `runs` passes over `events`
/// generated events. One thread, no I/O: a reading of this machine's
/// single-core speed, which the phone section scales its phone by.
pub fn parse_per_second(events: usize, runs: usize) -> f64 {
    let stream = watch_stream(events, KEYS);
    let lines = lines_of(&stream);
    let mut rates = Spread::default();
    for _ in 0..runs {
        rates.push(events_per_second(&lines, Path::ParseOnly));
    }
    rates.median()
}

/// The lines of a generated watch stream.
fn lines_of(stream: &[u8]) -> Vec<&[u8]> {
    stream
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect()
}

fn events_per_second(lines: &[&[u8]], path: Path) -> f64 {
    let clock = Clock::system();
    let mut informer = Informer::new(watchlife_informer::informer::Options::pods());
    let mut frames = 0usize;
    let mut seq = 0u64;
    let start = Instant::now();
    for line in lines {
        let parse =
            || -> Line { serde_json::from_slice(line).expect("the bench's own JSON parses") };
        match path {
            Path::ParseOnly => {
                std::hint::black_box(&parse());
            }
            Path::ParseAndEncode => {
                let parsed = parse();
                let object = Object::from_value(&parsed.object);
                let event = pod_event(parsed.event_type, object, clock.now(), false);
                seq += 1;
                frames += encode(seq, event.0).len();
            }
            Path::Pipeline => {
                let read: RawLine =
                    serde_json::from_slice(line).expect("the bench's own JSON parses");
                let object = Object::from_json(redact_text(Received {
                    kind: "Pod",
                    api_version: "v1",
                    json: &read.object,
                    listed: false,
                }));
                let (event, object) = pod_event(read.event_type, object, clock.now(), false);
                informer.enqueue(event, object, clock.now());
                for finished in informer.drain(&|| clock.now()) {
                    seq += 1;
                    frames += encode(seq, finished.event).len();
                }
            }
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    std::hint::black_box(frames);
    lines.len() as f64 / elapsed
}

fn encode(seq: u64, event: WatchEvent) -> String {
    serde_json::to_string(&ServerFrame {
        seq,
        body: FrameBody::Event(event),
    })
    .expect("frames always serialize")
}
