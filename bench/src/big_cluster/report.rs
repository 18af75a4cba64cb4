//! The big cluster's tables, notes, summary and method, each figure read
//! against its goal where it has one.

use super::viewer::DRAIN;
use super::{
    Config, DATA_BYTES, Empty, Figures, GOAL_IDLE_VIEWER, GOAL_OPENING_BYTES, GOAL_OPENING_SECONDS,
    GOAL_RENDERER_BYTES, GOAL_RSS_PER_OBJECT, Gathered, NAMESPACES, WRITE_FOR, WRITE_RATE,
};
use crate::etcd_fill::{PER_TXN, TXNS_AT_ONCE};
use crate::report::Table;
use crate::stats::{bytes, count, micros, num, share};
use std::time::Duration;

/// `–` for what was not measured, else the value shown.
fn or_dash(v: Option<f64>, show: fn(f64) -> String) -> String {
    v.map_or("–".to_string(), show)
}

fn duration(d: Option<Duration>) -> String {
    or_dash(d.map(|d| d.as_secs_f64() * 1e6), micros)
}

/// The value with ✓ or ✗ beside it where it has a goal.
fn against_goal(value: String, met: Option<bool>) -> String {
    match met {
        Some(true) => format!("{value} ✓"),
        Some(false) => format!("{value} ✗"),
        None => value,
    }
}

/// Resident memory per object beyond the empty bridge's.
fn per_object(f: &Figures, empty: &Empty) -> Option<f64> {
    Some((f.rss? - empty.rss?) / f.objects.max(1) as f64)
}

/// One row per size.
pub fn sizes_table(gathered: &Gathered) -> Table {
    let mut table = Table::new(
        "`watchlife --resources configmaps` on kube-apiserver v1.20.2, one run per size:",
        &[
            "objects",
            "start → LIST finished",
            "start → every object out",
            "resident memory per object (goal ≤ 2 KiB)",
            "new viewer: hello + snapshot (goal ≤ 14 MiB at 150k)",
            "its time (goal ≤ 1 s at 150k)",
            "page: open → ready",
            "page: all renderers' memory",
            "the tab's renderer (goal ≤ 300 MB)",
            "under writes: writes/s",
            "frames/s to a viewer (events)",
            "events seen ÷ writes (resyncs)",
            "page fps",
        ],
    );
    for f in &gathered.figures {
        table.row(size_row(f, &gathered.empty));
    }
    table
}

fn size_row(f: &Figures, empty: &Empty) -> Vec<String> {
    let big = f.objects >= 150_000;
    let per_object = per_object(f, empty);
    vec![
        count(f.objects),
        duration(f.list_finished),
        duration(f.all_out),
        against_goal(
            or_dash(per_object, bytes),
            per_object.map(|b| b <= GOAL_RSS_PER_OBJECT),
        ),
        against_goal(
            f.opening_bytes.map_or("–".to_string(), |b| {
                format!("{} in {} message(s)", bytes(b), f.opening_messages)
            }),
            f.opening_bytes
                .filter(|_| big)
                .map(|b| b <= GOAL_OPENING_BYTES),
        ),
        against_goal(
            duration(f.opening_time),
            f.opening_time
                .filter(|_| big)
                .map(|t| t.as_secs_f64() <= GOAL_OPENING_SECONDS),
        ),
        duration(f.page_ready),
        f.renderer.as_ref().map_or("–".to_string(), |r| {
            format!("{} in {} process(es)", megabytes(r.rss), r.processes)
        }),
        against_goal(
            f.renderer.as_ref().map_or("–".to_string(), |r| {
                format!(
                    "{} ({} anonymous)",
                    megabytes(r.tab_rss),
                    megabytes(r.tab_anon)
                )
            }),
            f.renderer
                .as_ref()
                .map(|r| r.tab_rss <= GOAL_RENDERER_BYTES),
        ),
        or_dash(f.writes_per_second, num),
        match (f.frames_per_second, f.events_per_second) {
            (Some(frames), Some(events)) => format!("{} ({})", num(frames), num(events)),
            _ => "–".into(),
        },
        f.events_seen.map_or("–".to_string(), |v| {
            format!("{} ({})", share(v), f.resyncs)
        }),
        or_dash(f.page_fps, num),
    ]
}

pub fn idle_table(empty: &Empty) -> Table {
    let mut idle = Table::new(
        "Idle viewers of the bridge over the empty cluster:",
        &[
            "viewers",
            "resident memory per viewer (goal ≤ 16 KiB)",
            "bridge's resident memory with no viewer",
        ],
    );
    for (n, per_viewer) in &empty.idle {
        idle.row(vec![
            count(*n),
            against_goal(bytes(*per_viewer), Some(*per_viewer <= GOAL_IDLE_VIEWER)),
            or_dash(empty.rss, bytes),
        ]);
    }
    idle
}

pub fn fill_table(figures: &[Figures]) -> Table {
    let mut fill = Table::new(
        "The fill, straight into etcd:",
        &[
            "objects",
            "stored JSON per object",
            "objects written per second",
        ],
    );
    let mut filled_before = 0;
    for f in figures {
        fill.row(vec![
            count(f.objects),
            bytes(f.stored_json),
            num((f.objects - filled_before) as f64 / f.fill_seconds.max(1e-9)),
        ]);
        filled_before = f.objects;
    }
    fill
}

/// Bytes per frame under writes, an uncompressed viewer beside the page's
/// compressed stream.
pub fn wire_table(figures: &[Figures]) -> Table {
    let mut wire = Table::new(
        "Bytes on the wire under writes, two more viewers of the same events side by side \
         (goal: compressed ≤ 10 % of uncompressed):",
        &[
            "objects",
            "`/ws?batch=true`: bytes per frame",
            "`&compress=deflate&bodies=patch` (the page's): bytes per frame",
            "compressed ÷ uncompressed",
        ],
    );
    for f in figures {
        let Some((plain, compressed)) = f.wire else {
            continue;
        };
        let ratio = compressed / plain;
        wire.row(vec![
            count(f.objects),
            bytes(plain),
            bytes(compressed),
            against_goal(format!("{:.1}%", ratio * 100.0), Some(ratio <= 0.10)),
        ]);
    }
    wire
}

pub fn summary(gathered: &Gathered) -> Vec<String> {
    let mut summary: Vec<String> = gathered
        .figures
        .iter()
        .map(|f| {
            format!(
                "{} objects: LIST finished after {}, {} resident per object, hello + snapshot {} in {}, page ready after {} with a {} renderer, {} frames/s to a viewer under {} writes/s",
                count(f.objects),
                duration(f.list_finished),
                or_dash(per_object(f, &gathered.empty), bytes),
                or_dash(f.opening_bytes, bytes),
                duration(f.opening_time),
                duration(f.page_ready),
                or_dash(f.renderer.as_ref().map(|r| r.tab_rss), megabytes),
                or_dash(f.frames_per_second, num),
                or_dash(f.writes_per_second, num),
            ) + &f
                .wire
                .map(|(plain, compressed)| {
                    format!(
                        ", {} per frame uncompressed and {} compressed",
                        bytes(plain),
                        bytes(compressed)
                    )
                })
                .unwrap_or_default()
        })
        .collect();
    summary.extend(
        gathered
            .empty
            .idle
            .iter()
            .map(|(n, b)| format!("{} idle viewers: {} per viewer", count(*n), bytes(*b))),
    );
    summary
}

/// "10,000, 50,000" and the like.
fn counts(ns: &[usize], between: &str) -> String {
    ns.iter()
        .map(|n| count(*n))
        .collect::<Vec<_>>()
        .join(between)
}

impl Config {
    pub fn notes(&self, gathered: &Gathered) -> Vec<String> {
        let mut notes = vec![
            "Goals, read by eye (a ✓ or ✗ beside the figure; the snapshot's goals are for \
             150k objects only): resident memory ≤ 2 KiB per cached object; a new viewer's \
             hello and snapshot ≤ 14 MiB and ≤ 1 s at 150k objects; the tab's renderer ≤ 300 MB (its `VmRSS`); \
             an idle viewer ≤ 16 KiB of the bridge's memory."
                .to_string(),
            "\"Start\" is when the bench spawned `watchlife`: the times include the process \
             starting, discovery, the LIST (served by kube-apiserver's watch cache, from \
             resourceVersion 0, unpaged) and decoding it. Resident memory per object holds \
             everything the bridge keeps for an object (its text and parsed fields, once; the \
             Indexer's map and namespace index; the hub's entry for snapshots, the same object \
             shared), the frames kept for resuming viewers, and the allocator's slack; kernel \
             socket buffers are not in it."
                .to_string(),
            "The renderers' memory is the sum of `VmRSS` over the browser's renderer processes \
             (Chromium keeps a few beside the tab's; the pages of the Chromium binary and \
             libraries they share are counted in each). The tab's renderer alone is the one with \
             the most anonymous memory: its `VmRSS`, and in brackets its `RssAnon`, where the \
             page's wasm memory, JS heap and DOM live. \"Page fps\" counts `requestAnimationFrame` callbacks of the headless \
             window, which draws without a display and shares the two cores with the bridge, \
             kube-apiserver, etcd and the writer."
                .to_string(),
        ];
        if let Some(e) = &gathered.empty.failure {
            notes.push(format!("The empty bridge or the idle viewers: {e}."));
        }
        for f in &gathered.figures {
            if let Some(e) = &f.failure {
                notes.push(format!("At {} objects: {e}.", count(f.objects)));
            }
        }
        if !gathered.browser {
            notes.push(
                "Chromium or chromedriver is not installed: the page was not measured.".into(),
            );
        }
        if gathered.viewers != self.viewers {
            notes.push(format!(
                "This process may open {} files, so the viewers were capped at {}: raise \
                 the limit (`ulimit -n`) to measure more.",
                gathered.limit,
                count(gathered.affordable)
            ));
        }
        notes
    }

    pub fn method(&self, gathered: &Gathered) -> String {
        format!(
            "kube-apiserver v1.20.2 over etcd 3.4 on loopback. Configmaps of about {} of \
             data in {NAMESPACES} namespaces, written straight into etcd as JSON ({PER_TXN} \
             puts to a transaction, {TXNS_AT_ONCE} transactions at once); kube-apiserver \
             restarted after each fill and its watch cache ready before the bridge starts. \
             Sizes {}. Per size, a fresh `{} --kubeconfig K --resources configmaps`: the \
             initial LIST, resident memory per object, a new WebSocket viewer's opening \
             (hello and snapshot: the sum of WebSocket message lengths until the message \
             that holds the snapshot frame), the page in headless Chromium (ready when \
             connected and counting every object; renderer `VmRSS`), then {WRITE_RATE} \
             writes/s through the API (merge patches of random configmaps) for {} s, the \
             frames a WebSocket viewer receives and the page's frame rate meanwhile (and the \
             events that viewer saw by {} s after the last write, against the writes), and \
             the bytes per frame of two more viewers meanwhile, one uncompressed and one \
             as the page asks (`compress=deflate&bodies=patch`: compressed, updates as \
             merge patches; read and inflated). Idle \
             viewers ({}) on a bridge over the empty cluster. One run.",
            bytes(DATA_BYTES as f64),
            counts(&gathered.sizes, ", "),
            self.watchlife.display(),
            WRITE_FOR.as_secs(),
            DRAIN.as_secs(),
            counts(&gathered.viewers, " then "),
        )
    }
}

pub fn megabytes(b: f64) -> String {
    format!("{} MB", num(b / 1e6))
}
