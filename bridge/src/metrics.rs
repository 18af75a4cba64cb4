//! The bridge's own numbers, served at `GET /metrics` in the Prometheus text
//! format.
//!
//! [`Metrics`] is a cheap-to-clone handle (one `Arc` of atomics) reachable
//! from the hub ([`crate::hub::Hub::metrics`]), so every part of the bridge
//! counts into the same place without locks:
//!
//! - the Reflector: [`Metrics::upstream_watch_opened`],
//!   [`Metrics::upstream_watch_closed`], [`Metrics::relisted`];
//! - the hub: [`Metrics::observe_stages`] for every event it publishes;
//! - each viewer: [`Metrics::viewer_connected`], [`Metrics::frames_sent`],
//!   [`Metrics::resynced`], [`Metrics::message_rejected`],
//!   [`Metrics::viewer_closed`];
//! - the `/ws` handshake: [`Metrics::viewer_refused`].
//!
//! Counters only grow; gauges go up and down. Every metric is rendered even
//! at zero, so a dashboard sees it from the first scrape.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use watchlife_protocol::{ErrorCode, Handled, Stage, StageTimes};

/// Upper bounds of the stage latency buckets, in microseconds. Stages inside
/// one process follow each other within tens of microseconds; a hop over the
/// network or a queue behind a busy worker takes milliseconds; a stalled
/// stage (a slow handler, a watch that waits for a relist) takes seconds. Two
/// buckets a decade from 10 µs to 10 s tell those apart.
pub const LATENCY_BUCKETS_MICROS: [u64; 13] = [
    10, 50, 100, 500, 1_000, 5_000, 10_000, 50_000, 100_000, 500_000, 1_000_000, 5_000_000,
    10_000_000,
];

/// Why a viewer was refused at the `/ws` handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No token, or the wrong one (401).
    Unauthorized,
    /// An `Origin` that is neither this bridge's nor allowed (403).
    Origin,
    /// A `Host` that a loopback bridge does not answer to (403).
    Host,
    /// `--max-viewers` reached (503).
    Capacity,
}

impl Refusal {
    const ALL: [Refusal; 4] = [
        Refusal::Unauthorized,
        Refusal::Origin,
        Refusal::Host,
        Refusal::Capacity,
    ];

    fn label(self) -> &'static str {
        match self {
            Refusal::Unauthorized => "unauthorized",
            Refusal::Origin => "origin",
            Refusal::Host => "host",
            Refusal::Capacity => "capacity",
        }
    }
}

/// Why a viewer received `resync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResyncCause {
    /// It fell more than [`crate::hub::VIEWER_LAG`] frames behind.
    Lagged,
    /// It reconnected with a cursor no longer in the window.
    Cursor,
}

impl ResyncCause {
    const ALL: [ResyncCause; 2] = [ResyncCause::Lagged, ResyncCause::Cursor];

    fn label(self) -> &'static str {
        match self {
            ResyncCause::Lagged => "lagged",
            ResyncCause::Cursor => "cursor",
        }
    }
}

/// Why the bridge ended a viewer's connection (a viewer that leaves by
/// itself is not counted here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closed {
    /// It kept sending faster than the rate limit.
    Flood,
    /// A message over the WebSocket size limit.
    TooLarge,
    /// It answered no ping for [`crate::viewer::DEAD_AFTER`].
    Unresponsive,
    /// A write to it did not complete within [`crate::viewer::DEAD_AFTER`].
    SendStalled,
    /// The bridge is shutting down.
    Shutdown,
}

impl Closed {
    const ALL: [Closed; 5] = [
        Closed::Flood,
        Closed::TooLarge,
        Closed::Unresponsive,
        Closed::SendStalled,
        Closed::Shutdown,
    ];

    fn label(self) -> &'static str {
        match self {
            Closed::Flood => "flood",
            Closed::TooLarge => "too_large",
            Closed::Unresponsive => "unresponsive",
            Closed::SendStalled => "send_stalled",
            Closed::Shutdown => "shutdown",
        }
    }
}

/// Error codes a viewer's message can be rejected with.
const REJECTED: [ErrorCode; 3] = [
    ErrorCode::Malformed,
    ErrorCode::TooLarge,
    ErrorCode::RateLimited,
];

fn rejected_label(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::Malformed => "malformed",
        ErrorCode::TooLarge => "too_large",
        ErrorCode::RateLimited => "rate_limited",
        ErrorCode::Forbidden => "forbidden",
        ErrorCode::ActionFailed => "action_failed",
    }
}

/// Handle on the bridge's metrics. Cheap to clone; every clone counts into
/// the same numbers.
#[derive(Clone, Default)]
pub struct Metrics(Arc<Inner>);

#[derive(Default)]
struct Inner {
    viewers: AtomicI64,
    viewers_connected: AtomicU64,
    refused: [AtomicU64; Refusal::ALL.len()],
    closed: [AtomicU64; Closed::ALL.len()],
    frames_published: AtomicU64,
    frames_sent: AtomicU64,
    messages_sent: AtomicU64,
    bytes_sent: AtomicU64,
    resyncs: [AtomicU64; ResyncCause::ALL.len()],
    rejected: [AtomicU64; REJECTED.len()],
    upstream_watches: AtomicI64,
    upstream_watches_opened: AtomicU64,
    relists: AtomicU64,
    lists: AtomicU64,
    /// Handler calls by listener and callback, as the page counts them.
    handler_calls: Mutex<BTreeMap<(String, &'static str), u64>>,
    resync_deliveries: AtomicU64,
    final_state_unknown: AtomicU64,
    stages: [Histogram; Stage::ALL.len()],
    stage_clock_skew: [AtomicU64; Stage::ALL.len()],
}

#[derive(Default)]
struct Histogram {
    /// Observations at or under each bound (not cumulative; summed on render).
    buckets: [AtomicU64; LATENCY_BUCKETS_MICROS.len()],
    /// Observations over the last bound.
    over: AtomicU64,
    sum_micros: AtomicU64,
}

impl Histogram {
    fn observe(&self, micros: u64) {
        match LATENCY_BUCKETS_MICROS.iter().position(|&le| micros <= le) {
            Some(i) => self.buckets[i].fetch_add(1, Relaxed),
            None => self.over.fetch_add(1, Relaxed),
        };
        self.sum_micros.fetch_add(micros, Relaxed);
    }
}

/// Counts one connected viewer for as long as it lives.
#[must_use = "the viewer is counted until this is dropped"]
pub struct ViewerGauge(Metrics);

impl Drop for ViewerGauge {
    fn drop(&mut self) {
        self.0.0.viewers.fetch_sub(1, Relaxed);
    }
}

impl Metrics {
    /// The Reflector opened a watch on the source (an upstream watch).
    pub fn upstream_watch_opened(&self) {
        self.0.upstream_watches.fetch_add(1, Relaxed);
        self.0.upstream_watches_opened.fetch_add(1, Relaxed);
    }

    /// An upstream watch ended (closed by the server, failed, or dropped).
    pub fn upstream_watch_closed(&self) {
        self.0.upstream_watches.fetch_sub(1, Relaxed);
    }

    /// A Reflector began a list-watch cycle again, after the last one ended
    /// (410 Gone, a failed watch or LIST).
    pub fn relisted(&self) {
        self.0.relists.fetch_add(1, Relaxed);
    }

    /// A Reflector sent a LIST request (its first page).
    pub fn listed(&self) {
        self.0.lists.fetch_add(1, Relaxed);
    }

    /// What the informer did with a published event: its handler calls.
    pub fn observe_handled(&self, handled: &Handled) {
        if handled.resync {
            self.0.resync_deliveries.fetch_add(1, Relaxed);
        }
        if handled.final_state_unknown {
            self.0.final_state_unknown.fetch_add(1, Relaxed);
        }
        if handled.calls.is_empty() {
            return;
        }
        let mut calls = self
            .0
            .handler_calls
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        for call in &handled.calls {
            let callback = call.callback.as_str();
            match calls.get_mut(&(call.listener.clone(), callback)) {
                Some(n) => *n += 1,
                None => {
                    calls.insert((call.listener.clone(), callback), 1);
                }
            }
        }
    }

    /// A viewer connected; it is counted until the returned gauge is dropped.
    pub fn viewer_connected(&self) -> ViewerGauge {
        self.0.viewers.fetch_add(1, Relaxed);
        self.0.viewers_connected.fetch_add(1, Relaxed);
        ViewerGauge(self.clone())
    }

    /// A viewer was refused at the handshake.
    pub fn viewer_refused(&self, why: Refusal) {
        self.0.refused[why as usize].fetch_add(1, Relaxed);
    }

    /// The bridge closed a viewer's connection.
    pub fn viewer_closed(&self, why: Closed) {
        self.0.closed[why as usize].fetch_add(1, Relaxed);
    }

    /// The hub published a stream frame.
    pub fn frame_published(&self) {
        self.0.frames_published.fetch_add(1, Relaxed);
    }

    /// `frames` frames of `bytes` bytes in all were written to one viewer.
    /// Viewers count in batches, so that thousands of them do not contend on
    /// one counter for every frame.
    /// `frames` went out in `messages` WebSocket messages (fewer when the
    /// viewer asked for batches).
    pub fn frames_sent(&self, frames: u64, messages: u64, bytes: u64) {
        self.0.frames_sent.fetch_add(frames, Relaxed);
        self.0.messages_sent.fetch_add(messages, Relaxed);
        self.0.bytes_sent.fetch_add(bytes, Relaxed);
    }

    /// A viewer was sent `resync`.
    pub fn resynced(&self, cause: ResyncCause) {
        self.0.resyncs[cause as usize].fetch_add(1, Relaxed);
    }

    /// A viewer's message was answered with an error frame of this code.
    pub fn message_rejected(&self, code: ErrorCode) {
        if let Some(i) = REJECTED.iter().position(|&c| c == code) {
            self.0.rejected[i].fetch_add(1, Relaxed);
        }
    }

    /// Records, for each observed stage of an event after the first, the time
    /// since the previous observed stage. A stage timed before its
    /// predecessor (clocks of two machines disagree) is counted as skew,
    /// not as a latency.
    pub fn observe_stages(&self, stages: &StageTimes) {
        let mut previous: Option<u64> = None;
        for (stage, mark) in stages {
            let i = stage_index(*stage);
            if let Some(before) = previous {
                match mark.at.checked_sub(before) {
                    Some(micros) => self.0.stages[i].observe(micros),
                    None => {
                        self.0.stage_clock_skew[i].fetch_add(1, Relaxed);
                    }
                }
            }
            previous = Some(mark.at);
        }
    }

    /// Viewers connected now.
    pub fn viewers(&self) -> i64 {
        self.0.viewers.load(Relaxed)
    }

    /// Upstream watches open now.
    pub fn upstream_watches(&self) -> i64 {
        self.0.upstream_watches.load(Relaxed)
    }

    /// Everything, in the Prometheus text exposition format (0.0.4).
    pub fn render(&self) -> String {
        let m = &self.0;
        let mut out = String::with_capacity(8 * 1024);
        gauge(
            &mut out,
            "watchlife_viewers",
            "Viewers connected to /ws now.",
            m.viewers.load(Relaxed),
        );
        counter(
            &mut out,
            "watchlife_viewers_connected_total",
            "Viewers that connected to /ws.",
            m.viewers_connected.load(Relaxed),
        );
        labelled_counter(
            &mut out,
            "watchlife_viewers_refused_total",
            "WebSocket handshakes refused, by reason.",
            Refusal::ALL
                .iter()
                .map(|r| (format!("reason=\"{}\"", r.label()), &m.refused[*r as usize])),
        );
        labelled_counter(
            &mut out,
            "watchlife_viewers_closed_total",
            "Viewer connections the bridge closed, by reason.",
            Closed::ALL
                .iter()
                .map(|c| (format!("reason=\"{}\"", c.label()), &m.closed[*c as usize])),
        );
        counter(
            &mut out,
            "watchlife_frames_published_total",
            "Stream frames published by the hub (each encoded once).",
            m.frames_published.load(Relaxed),
        );
        counter(
            &mut out,
            "watchlife_frames_sent_total",
            "Frames written to viewers' sockets, all viewers together.",
            m.frames_sent.load(Relaxed),
        );
        counter(
            &mut out,
            "watchlife_messages_sent_total",
            "WebSocket messages those frames went out in (several frames to a message for viewers that asked for batches).",
            m.messages_sent.load(Relaxed),
        );
        counter(
            &mut out,
            "watchlife_sent_bytes_total",
            "Bytes of frames written to viewers' sockets.",
            m.bytes_sent.load(Relaxed),
        );
        labelled_counter(
            &mut out,
            "watchlife_resyncs_total",
            "resync frames sent to viewers, by cause.",
            ResyncCause::ALL
                .iter()
                .map(|c| (format!("cause=\"{}\"", c.label()), &m.resyncs[*c as usize])),
        );
        labelled_counter(
            &mut out,
            "watchlife_viewer_messages_rejected_total",
            "Viewer messages answered with an error frame, by code.",
            REJECTED
                .iter()
                .enumerate()
                .map(|(i, c)| (format!("code=\"{}\"", rejected_label(*c)), &m.rejected[i])),
        );
        gauge(
            &mut out,
            "watchlife_upstream_watches",
            "Watches open on the source now (one per resource, whatever the number of viewers).",
            m.upstream_watches.load(Relaxed),
        );
        counter(
            &mut out,
            "watchlife_upstream_watches_opened_total",
            "Watches opened on the source.",
            m.upstream_watches_opened.load(Relaxed),
        );
        counter(
            &mut out,
            "watchlife_relists_total",
            "List-watch cycles the Reflectors began again after one ended (410 Gone, a failed watch or LIST).",
            m.relists.load(Relaxed),
        );
        counter(
            &mut out,
            "watchlife_lists_total",
            "LIST requests the Reflectors made (first pages), the first ones included.",
            m.lists.load(Relaxed),
        );
        self.render_handlers(&mut out);
        self.render_stages(&mut out);
        out
    }

    fn render_handlers(&self, out: &mut String) {
        let name = "watchlife_handler_calls_total";
        let _ = writeln!(
            out,
            "# HELP {name} Event handler calls, by listener and callback, of the events published.\n# TYPE {name} counter"
        );
        let calls = self
            .0
            .handler_calls
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        for ((listener, callback), n) in calls.iter() {
            let listener = listener.replace('\\', "\\\\").replace('"', "\\\"");
            let _ = writeln!(
                out,
                "{name}{{listener=\"{listener}\",callback=\"{callback}\"}} {n}"
            );
        }
        drop(calls);
        counter(
            out,
            "watchlife_resync_deliveries_total",
            "Events delivered as resyncs (a Sync delta, or a relisted object whose resourceVersion did not change).",
            self.0.resync_deliveries.load(Relaxed),
        );
        counter(
            out,
            "watchlife_deleted_final_state_unknown_total",
            "Deletions found by a relist rather than seen on the watch.",
            self.0.final_state_unknown.load(Relaxed),
        );
    }

    fn render_stages(&self, out: &mut String) {
        let name = "watchlife_stage_latency_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} Time from an event's previous observed stage to this stage."
        );
        let _ = writeln!(out, "# TYPE {name} histogram");
        for (i, stage) in Stage::ALL.iter().enumerate().skip(1) {
            let h = &self.0.stages[i];
            let label = stage_label(*stage);
            let mut cumulative = 0;
            for (le, count) in LATENCY_BUCKETS_MICROS.iter().zip(&h.buckets) {
                cumulative += count.load(Relaxed);
                let le = *le as f64 / 1e6;
                let _ = writeln!(
                    out,
                    "{name}_bucket{{stage=\"{label}\",le=\"{le}\"}} {cumulative}"
                );
            }
            cumulative += h.over.load(Relaxed);
            let _ = writeln!(
                out,
                "{name}_bucket{{stage=\"{label}\",le=\"+Inf\"}} {cumulative}"
            );
            let sum = h.sum_micros.load(Relaxed) as f64 / 1e6;
            let _ = writeln!(out, "{name}_sum{{stage=\"{label}\"}} {sum}");
            let _ = writeln!(out, "{name}_count{{stage=\"{label}\"}} {cumulative}");
        }
        labelled_counter(
            out,
            "watchlife_stage_clock_skew_total",
            "Events whose stage was timed before the previous observed stage.",
            Stage::ALL.iter().enumerate().skip(1).map(|(i, s)| {
                (
                    format!("stage=\"{}\"", stage_label(*s)),
                    &self.0.stage_clock_skew[i],
                )
            }),
        );
    }
}

fn stage_index(stage: Stage) -> usize {
    Stage::ALL
        .iter()
        .position(|s| *s == stage)
        .expect("Stage::ALL lists every stage")
}

/// The stage's name as on the wire (`watch_cache`).
fn stage_label(stage: Stage) -> String {
    serde_json::to_value(stage)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn gauge(out: &mut String, name: &str, help: &str, value: i64) {
    let _ = writeln!(
        out,
        "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
    );
}

fn counter(out: &mut String, name: &str, help: &str, value: u64) {
    let _ = writeln!(
        out,
        "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
    );
}

fn labelled_counter<'a>(
    out: &mut String,
    name: &str,
    help: &str,
    series: impl Iterator<Item = (String, &'a AtomicU64)>,
) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
    for (labels, value) in series {
        let _ = writeln!(out, "{name}{{{labels}}} {}", value.load(Relaxed));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use watchlife_protocol::StageMark;

    fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line {prefix}:\n{text}"))
    }

    #[test]
    fn counts_from_every_clone_and_renders_them() {
        let m = Metrics::default();
        let reflector = m.clone();
        reflector.upstream_watch_opened();
        reflector.upstream_watch_opened();
        reflector.upstream_watch_closed();
        reflector.relisted();
        let gauge = m.viewer_connected();
        m.frames_sent(3, 2, 300);
        m.resynced(ResyncCause::Lagged);
        m.message_rejected(ErrorCode::RateLimited);
        m.viewer_refused(Refusal::Capacity);
        let text = m.render();
        assert_eq!(
            line(&text, "watchlife_upstream_watches "),
            "watchlife_upstream_watches 1"
        );
        assert_eq!(
            line(&text, "watchlife_upstream_watches_opened_total "),
            "watchlife_upstream_watches_opened_total 2"
        );
        assert_eq!(
            line(&text, "watchlife_relists_total "),
            "watchlife_relists_total 1"
        );
        assert_eq!(line(&text, "watchlife_viewers "), "watchlife_viewers 1");
        assert_eq!(
            line(&text, "watchlife_frames_sent_total "),
            "watchlife_frames_sent_total 3"
        );
        assert_eq!(
            line(&text, "watchlife_messages_sent_total "),
            "watchlife_messages_sent_total 2"
        );
        assert!(text.contains("watchlife_resyncs_total{cause=\"lagged\"} 1"));
        assert!(text.contains("watchlife_resyncs_total{cause=\"cursor\"} 0"));
        assert!(text.contains("watchlife_viewer_messages_rejected_total{code=\"rate_limited\"} 1"));
        assert!(text.contains("watchlife_viewers_refused_total{reason=\"capacity\"} 1"));
        let mut handled = Handled {
            resync: true,
            ..Handled::default()
        };
        handled.calls.push(watchlife_protocol::HandlerCall {
            listener: "controller".into(),
            callback: watchlife_protocol::Callback::OnUpdate,
            depth: 1,
            dequeued: 1,
            returned: 2,
        });
        m.observe_handled(&handled);
        m.observe_handled(&handled);
        m.listed();
        let text = m.render();
        assert!(text.contains(
            "watchlife_handler_calls_total{listener=\"controller\",callback=\"OnUpdate\"} 2"
        ));
        assert_eq!(
            line(&text, "watchlife_resync_deliveries_total "),
            "watchlife_resync_deliveries_total 2"
        );
        assert_eq!(
            line(&text, "watchlife_lists_total "),
            "watchlife_lists_total 1"
        );
        drop(gauge);
        assert_eq!(m.viewers(), 0);
    }

    #[test]
    fn stage_latency_is_measured_from_the_previous_observed_stage() {
        let m = Metrics::default();
        // etcd at 0, watch cache not observed, Reflector 40 µs later, FIFO
        // timed before the Reflector (skew).
        let stages = StageTimes::from([
            (Stage::Etcd, StageMark::at(1_000)),
            (Stage::Reflector, StageMark::at(1_040)),
            (Stage::Fifo, StageMark::at(1_030)),
        ]);
        m.observe_stages(&stages);
        let text = m.render();
        let h = "watchlife_stage_latency_seconds";
        assert!(text.contains(&format!(
            "{h}_bucket{{stage=\"reflector\",le=\"0.00001\"}} 0"
        )));
        assert!(text.contains(&format!(
            "{h}_bucket{{stage=\"reflector\",le=\"0.00005\"}} 1"
        )));
        assert!(text.contains(&format!("{h}_bucket{{stage=\"reflector\",le=\"+Inf\"}} 1")));
        assert!(text.contains(&format!("{h}_sum{{stage=\"reflector\"}} 0.00004")));
        assert!(text.contains(&format!("{h}_count{{stage=\"watch_cache\"}} 0")));
        assert!(text.contains(&format!("{h}_count{{stage=\"fifo\"}} 0")));
        assert!(text.contains("watchlife_stage_clock_skew_total{stage=\"fifo\"} 1"));
        assert!(
            !text.contains("stage=\"etcd\""),
            "the first stage has no latency"
        );
    }

    #[test]
    fn every_line_is_a_comment_or_a_sample() {
        let text = Metrics::default().render();
        for l in text.lines() {
            assert!(
                l.starts_with("# HELP ")
                    || l.starts_with("# TYPE ")
                    || l.rsplit_once(' ')
                        .is_some_and(|(_, v)| v.parse::<f64>().is_ok()),
                "not Prometheus text: {l}"
            );
        }
    }
}
