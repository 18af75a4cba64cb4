//! The bridge's own numbers, served at `GET /metrics` in the OpenMetrics
//! text format through the `prometheus-client` crate.
//!
//! [`Metrics`] is a cheap-to-clone handle on one registry, reachable from the
//! hub ([`crate::downstream::hub::Hub::metrics`]), so every part of the bridge counts
//! into the same place:
//!
//! - the Reflector: [`Metrics::upstream_watch_opened`],
//!   [`Metrics::upstream_watch_closed`], [`Metrics::relisted`];
//! - the hub: [`Metrics::observe_stages`] for every event it publishes;
//! - each viewer: [`Metrics::viewer_connected`], [`Metrics::frames_sent`],
//!   [`Metrics::resynced`], [`Metrics::message_rejected`],
//!   [`Metrics::viewer_closed`];
//! - the `/ws` handshake: [`Metrics::viewer_refused`].
//!
//! Each series with a fixed label set is created when the registry is, and
//! its handle kept: counting is one atomic add, with no lookup, and every
//! series is rendered even at zero, so a dashboard sees it from the first
//! scrape. Only the handler calls, whose listeners are known once the
//! informer names them, are looked up by label.
//!
//! The sample names are those the bridge served before it used the crate
//! (counters end in `_total`); OpenMetrics names a counter's family without
//! that suffix in its `# TYPE` line. The encoder ends every `# HELP` text
//! with a full stop, so the texts here have none.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::sync::Arc;
use watchlife_protocol::{ErrorCode, Handled, Stage, StageTimes};

/// The `Content-Type` of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

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
    /// It fell more than [`crate::downstream::hub::VIEWER_LAG`] frames behind.
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
    /// It answered no ping for [`crate::downstream::viewer::DEAD_AFTER`].
    Unresponsive,
    /// A write to it did not complete within [`crate::downstream::viewer::DEAD_AFTER`].
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

/// What became of a frame a tap sent (see [`crate::downstream::tap`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TapOutcome {
    /// Relayed to the viewers.
    Relayed,
    /// Over the tap's rate: dropped.
    OverRate,
    /// Not a tap frame, or not the frame due: the connection was closed.
    Refused,
}

impl TapOutcome {
    const ALL: [TapOutcome; 3] = [
        TapOutcome::Relayed,
        TapOutcome::OverRate,
        TapOutcome::Refused,
    ];

    fn label(self) -> &'static str {
        match self {
            TapOutcome::Relayed => "relayed",
            TapOutcome::OverRate => "over_rate",
            TapOutcome::Refused => "refused",
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

/// Label of the series that count by reason.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ByReason {
    reason: &'static str,
}

/// Label of the tap frames counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ByOutcome {
    outcome: &'static str,
}

/// Label of the resync counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ByCause {
    cause: &'static str,
}

/// Label of the rejected messages counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ByCode {
    code: &'static str,
}

/// Labels of the handler calls counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ByHandler {
    listener: String,
    callback: &'static str,
}

/// Label of the per-stage series: the stage's name as on the wire.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ByStage {
    stage: String,
}

/// Handle on the bridge's metrics. Cheap to clone; every clone counts into
/// the same numbers.
#[derive(Clone)]
pub struct Metrics(Arc<Inner>);

impl Default for Metrics {
    fn default() -> Self {
        Metrics(Arc::new(Inner::new()))
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

struct Inner {
    registry: Registry,
    down: Downstream,
    up: Upstream,
    taps: Taps,
}

/// Controllers' taps: connected now, and what became of their frames.
struct Taps {
    connected: Gauge,
    frames: [Counter; TapOutcome::ALL.len()],
}

impl Taps {
    fn register(r: &mut Registry) -> Taps {
        Taps {
            connected: gauge(
                r,
                "watchlife_taps",
                "Controllers' taps connected to /tap now",
            ),
            frames: family(
                r,
                "watchlife_tap_frames",
                "Frames controllers' taps sent, by what became of them",
                TapOutcome::ALL.map(|o| ByOutcome { outcome: o.label() }),
            ),
        }
    }
}

/// The viewers' side: connections, refusals, what was sent to them.
struct Downstream {
    viewers: Gauge,
    compressed: Gauge,
    patched: Gauge,
    viewers_connected: Counter,
    refused: [Counter; Refusal::ALL.len()],
    closed: [Counter; Closed::ALL.len()],
    frames_published: Counter,
    frames_sent: Counter,
    messages_sent: Counter,
    bytes_sent: Counter,
    resyncs: [Counter; ResyncCause::ALL.len()],
    rejected: [Counter; REJECTED.len()],
}

/// The source's side: its watches and lists, the informer stages.
struct Upstream {
    upstream_watches: Gauge,
    upstream_watches_opened: Counter,
    relists: Counter,
    lists: Counter,
    /// Handler calls by listener and callback, as the page counts them.
    handler_calls: Family<ByHandler, Counter>,
    resync_deliveries: Counter,
    final_state_unknown: Counter,
    /// Indexed by the stage's place in [`Stage::ALL`] less one: the first
    /// stage has no predecessor, hence no latency.
    stages: Vec<Histogram>,
    stage_clock_skew: Vec<Counter>,
}

/// A family whose series are `labels`, created now (so rendered at zero),
/// registered as `name`; returns the series' handles in the same order.
fn family<S, const N: usize>(
    registry: &mut Registry,
    name: &str,
    help: &str,
    labels: [S; N],
) -> [Counter; N]
where
    S: EncodeLabelSet + Clone + std::hash::Hash + Eq + std::fmt::Debug + Send + Sync + 'static,
{
    let family = Family::<S, Counter>::default();
    let handles = labels.map(|l| family.get_or_create_owned(&l));
    registry.register(name, help, family);
    handles
}

/// A counter registered as `name` (the encoder adds `_total` to its samples).
fn counter(registry: &mut Registry, name: &str, help: &str) -> Counter {
    let counter = Counter::default();
    registry.register(name, help, counter.clone());
    counter
}

fn gauge(registry: &mut Registry, name: &str, help: &str) -> Gauge {
    let gauge = Gauge::default();
    registry.register(name, help, gauge.clone());
    gauge
}

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS_MICROS.iter().map(|&le| le as f64 / 1e6))
}

impl Inner {
    fn new() -> Inner {
        let mut registry = Registry::default();
        Inner {
            down: Downstream::register(&mut registry),
            up: Upstream::register(&mut registry),
            taps: Taps::register(&mut registry),
            registry,
        }
    }
}

impl Downstream {
    fn register(r: &mut Registry) -> Downstream {
        let viewers = gauge(r, "watchlife_viewers", "Viewers connected to /ws now");
        let compressed = gauge(
            r,
            "watchlife_viewers_compressed",
            "Viewers connected to /ws now that take their frames compressed",
        );
        let patched = gauge(
            r,
            "watchlife_viewers_patched",
            "Viewers connected to /ws now that take updates' bodies as merge patches",
        );
        let viewers_connected = counter(
            r,
            "watchlife_viewers_connected",
            "Viewers that connected to /ws",
        );
        let refused = family(
            r,
            "watchlife_viewers_refused",
            "WebSocket handshakes refused, by reason",
            Refusal::ALL.map(|w| ByReason { reason: w.label() }),
        );
        let closed = family(
            r,
            "watchlife_viewers_closed",
            "Viewer connections the bridge closed, by reason",
            Closed::ALL.map(|w| ByReason { reason: w.label() }),
        );
        let frames_published = counter(
            r,
            "watchlife_frames_published",
            "Stream frames published by the hub (each encoded once)",
        );
        let frames_sent = counter(
            r,
            "watchlife_frames_sent",
            "Frames written to viewers' sockets, all viewers together",
        );
        let messages_sent = counter(
            r,
            "watchlife_messages_sent",
            "WebSocket messages those frames went out in (several frames to a message for viewers that asked for batches)",
        );
        let bytes_sent = counter(
            r,
            "watchlife_sent_bytes",
            "Bytes of messages written to viewers' sockets (compressed, for viewers who take them so)",
        );
        let resyncs = family(
            r,
            "watchlife_resyncs",
            "resync frames sent to viewers, by cause",
            ResyncCause::ALL.map(|c| ByCause { cause: c.label() }),
        );
        let rejected = family(
            r,
            "watchlife_viewer_messages_rejected",
            "Viewer messages answered with an error frame, by code",
            REJECTED.map(|c| ByCode {
                code: rejected_label(c),
            }),
        );
        Downstream {
            viewers,
            compressed,
            patched,
            viewers_connected,
            refused,
            closed,
            frames_published,
            frames_sent,
            messages_sent,
            bytes_sent,
            resyncs,
            rejected,
        }
    }
}

impl Upstream {
    fn register(r: &mut Registry) -> Upstream {
        let upstream_watches = gauge(
            r,
            "watchlife_upstream_watches",
            "Watches open on the source now (one per resource, whatever the number of viewers)",
        );
        let upstream_watches_opened = counter(
            r,
            "watchlife_upstream_watches_opened",
            "Watches opened on the source",
        );
        let relists = counter(
            r,
            "watchlife_relists",
            "List-watch cycles the Reflectors began again after one ended (410 Gone, a failed watch or LIST)",
        );
        let lists = counter(
            r,
            "watchlife_lists",
            "LIST requests the Reflectors made (first pages), the first ones included",
        );
        let handler_calls = Family::<ByHandler, Counter>::default();
        r.register(
            "watchlife_handler_calls",
            "Event handler calls, by listener and callback, of the events published",
            handler_calls.clone(),
        );
        let resync_deliveries = counter(
            r,
            "watchlife_resync_deliveries",
            "Events delivered as resyncs (a Sync delta, or a relisted object whose resourceVersion did not change)",
        );
        let final_state_unknown = counter(
            r,
            "watchlife_deleted_final_state_unknown",
            "Deletions found by a relist rather than seen on the watch",
        );
        let later_stages = || {
            Stage::ALL.iter().skip(1).map(|s| ByStage {
                stage: stage_label(*s),
            })
        };
        let latency = Family::<ByStage, Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram,
        );
        let stages = later_stages()
            .map(|l| latency.get_or_create_owned(&l))
            .collect();
        r.register(
            "watchlife_stage_latency_seconds",
            "Time from an event's previous observed stage to this stage",
            latency,
        );
        let skew = Family::<ByStage, Counter>::default();
        let stage_clock_skew = later_stages()
            .map(|l| skew.get_or_create_owned(&l))
            .collect();
        r.register(
            "watchlife_stage_clock_skew",
            "Events whose stage was timed before the previous observed stage",
            skew,
        );
        Upstream {
            upstream_watches,
            upstream_watches_opened,
            relists,
            lists,
            handler_calls,
            resync_deliveries,
            final_state_unknown,
            stages,
            stage_clock_skew,
        }
    }
}

/// Counts one connected viewer for as long as it lives.
#[must_use = "the viewer is counted until this is dropped"]
pub struct ViewerGauge(Metrics);

impl Drop for ViewerGauge {
    fn drop(&mut self) {
        self.0.0.down.viewers.dec();
    }
}

/// A viewer that takes its frames a certain way (compressed, patched),
/// counted in that way's gauge while it lives.
#[must_use = "the viewer is counted until this is dropped"]
pub struct CountedWhileHeld(Gauge);

impl Drop for CountedWhileHeld {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// A connected tap, counted in `watchlife_taps` while it lives.
#[must_use = "the tap is counted until this is dropped"]
pub struct TapGauge(Metrics);

impl Drop for TapGauge {
    fn drop(&mut self) {
        self.0.0.taps.connected.dec();
    }
}

impl Metrics {
    /// The Reflector opened a watch on the source (an upstream watch).
    pub fn upstream_watch_opened(&self) {
        self.0.up.upstream_watches.inc();
        self.0.up.upstream_watches_opened.inc();
    }

    /// How many upstream watches are open now.
    pub fn upstream_watches_open(&self) -> u64 {
        self.0.up.upstream_watches.get().max(0) as u64
    }

    /// An upstream watch ended (closed by the server, failed, or dropped).
    pub fn upstream_watch_closed(&self) {
        self.0.up.upstream_watches.dec();
    }

    /// A Reflector began a list-watch cycle again, after the last one ended
    /// (410 Gone, a failed watch or LIST).
    pub fn relisted(&self) {
        self.0.up.relists.inc();
    }

    /// A Reflector sent a LIST request (its first page).
    pub fn listed(&self) {
        self.0.up.lists.inc();
    }

    /// What the informer did with a published event: its handler calls.
    pub fn observe_handled(&self, handled: &Handled) {
        if handled.resync {
            self.0.up.resync_deliveries.inc();
        }
        if handled.final_state_unknown {
            self.0.up.final_state_unknown.inc();
        }
        for call in &handled.calls {
            self.0
                .up
                .handler_calls
                .get_or_create(&ByHandler {
                    listener: call.listener.clone(),
                    callback: call.callback.as_str(),
                })
                .inc();
        }
    }

    /// A viewer connected; it is counted until the returned gauge is dropped.
    pub fn viewer_connected(&self) -> ViewerGauge {
        self.0.down.viewers.inc();
        self.0.down.viewers_connected.inc();
        ViewerGauge(self.clone())
    }

    /// A viewer that takes its frames compressed connected; it is counted
    /// until the returned gauge is dropped.
    pub fn viewer_compressed(&self) -> CountedWhileHeld {
        self.0.down.compressed.inc();
        CountedWhileHeld(self.0.down.compressed.clone())
    }

    /// How many connected viewers take their frames compressed.
    pub fn compressed_viewers(&self) -> i64 {
        self.0.down.compressed.get()
    }

    /// A viewer that takes updates' bodies as merge patches connected; it
    /// is counted until the returned gauge is dropped.
    pub fn viewer_patched(&self) -> CountedWhileHeld {
        self.0.down.patched.inc();
        CountedWhileHeld(self.0.down.patched.clone())
    }

    /// How many connected viewers take updates' bodies as merge patches.
    pub fn patched_viewers(&self) -> i64 {
        self.0.down.patched.get()
    }

    /// A tap connected; it is counted until the returned gauge is dropped.
    pub fn tap_connected(&self) -> TapGauge {
        self.0.taps.connected.inc();
        TapGauge(self.clone())
    }

    /// A tap's frame was relayed, dropped or refused.
    pub fn tap_frame(&self, outcome: TapOutcome) {
        self.0.taps.frames[outcome as usize].inc();
    }

    /// A viewer was refused at the handshake.
    pub fn viewer_refused(&self, why: Refusal) {
        self.0.down.refused[why as usize].inc();
    }

    /// The bridge closed a viewer's connection.
    pub fn viewer_closed(&self, why: Closed) {
        self.0.down.closed[why as usize].inc();
    }

    /// The hub published a stream frame.
    pub fn frame_published(&self) {
        self.0.down.frames_published.inc();
    }

    /// `frames` frames of `bytes` bytes in all were written to one viewer,
    /// in `messages` WebSocket messages (fewer when the viewer asked for
    /// batches). Viewers count in batches, so that thousands of them do not
    /// contend on one counter for every frame.
    pub fn frames_sent(&self, frames: u64, messages: u64, bytes: u64) {
        self.0.down.frames_sent.inc_by(frames);
        self.0.down.messages_sent.inc_by(messages);
        self.0.down.bytes_sent.inc_by(bytes);
    }

    /// A viewer was sent `resync`.
    pub fn resynced(&self, cause: ResyncCause) {
        self.0.down.resyncs[cause as usize].inc();
    }

    /// A viewer's message was answered with an error frame of this code.
    pub fn message_rejected(&self, code: ErrorCode) {
        if let Some(i) = REJECTED.iter().position(|&c| c == code) {
            self.0.down.rejected[i].inc();
        }
    }

    /// Records, for each observed stage of an event after the first, the time
    /// since the previous observed stage. A stage timed before its
    /// predecessor (clocks of two machines disagree) is counted as skew,
    /// not as a latency.
    pub fn observe_stages(&self, stages: &StageTimes) {
        let mut previous: Option<u64> = None;
        for (stage, mark) in stages {
            // Stages come in their order, so only the first can be Stage::ALL[0].
            let i = stage_index(*stage).checked_sub(1);
            if let (Some(before), Some(i)) = (previous, i) {
                match mark.at.checked_sub(before) {
                    Some(micros) => self.0.up.stages[i].observe(micros as f64 / 1e6),
                    None => {
                        self.0.up.stage_clock_skew[i].inc();
                    }
                }
            }
            previous = Some(mark.at);
        }
    }

    /// Viewers connected now.
    pub fn viewers(&self) -> i64 {
        self.0.down.viewers.get()
    }

    /// Upstream watches open now.
    pub fn upstream_watches(&self) -> i64 {
        self.0.up.upstream_watches.get()
    }

    /// Everything, in the OpenMetrics text format ([`CONTENT_TYPE`]).
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(8 * 1024);
        encode(&mut out, &self.0.registry).expect("writing to a String cannot fail");
        out
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

#[cfg(test)]
mod tests {
    use super::*;
    use watchlife_protocol::StageMark;

    /// The value of the sample `series` (name and labels, as rendered).
    fn sample(text: &str, series: &str) -> f64 {
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .find_map(|l| {
                let (name, value) = l.rsplit_once(' ')?;
                (name == series).then(|| value.parse().expect("a number"))
            })
            .unwrap_or_else(|| panic!("no sample {series}:\n{text}"))
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
        assert_eq!(sample(&text, "watchlife_upstream_watches"), 1.0);
        assert_eq!(
            sample(&text, "watchlife_upstream_watches_opened_total"),
            2.0
        );
        assert_eq!(sample(&text, "watchlife_relists_total"), 1.0);
        assert_eq!(sample(&text, "watchlife_viewers"), 1.0);
        assert_eq!(sample(&text, "watchlife_frames_sent_total"), 3.0);
        assert_eq!(sample(&text, "watchlife_messages_sent_total"), 2.0);
        assert_eq!(sample(&text, "watchlife_sent_bytes_total"), 300.0);
        assert_eq!(
            sample(&text, "watchlife_resyncs_total{cause=\"lagged\"}"),
            1.0
        );
        assert_eq!(
            sample(&text, "watchlife_resyncs_total{cause=\"cursor\"}"),
            0.0
        );
        assert_eq!(
            sample(
                &text,
                "watchlife_viewer_messages_rejected_total{code=\"rate_limited\"}"
            ),
            1.0
        );
        assert_eq!(
            sample(
                &text,
                "watchlife_viewers_refused_total{reason=\"capacity\"}"
            ),
            1.0
        );
        assert_eq!(
            sample(&text, "watchlife_viewers_closed_total{reason=\"flood\"}"),
            0.0
        );
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
        assert_eq!(
            sample(
                &text,
                "watchlife_handler_calls_total{listener=\"controller\",callback=\"OnUpdate\"}"
            ),
            2.0
        );
        assert_eq!(sample(&text, "watchlife_resync_deliveries_total"), 2.0);
        assert_eq!(sample(&text, "watchlife_lists_total"), 1.0);
        drop(gauge);
        assert_eq!(m.viewers(), 0);
        assert_eq!(sample(&m.render(), "watchlife_viewers"), 0.0);
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
        let bucket = |stage: &str, le: &str| {
            sample(
                &text,
                &format!("{h}_bucket{{le=\"{le}\",stage=\"{stage}\"}}"),
            )
        };
        assert_eq!(bucket("reflector", "0.00001"), 0.0);
        assert_eq!(bucket("reflector", "0.00005"), 1.0);
        assert_eq!(bucket("reflector", "10.0"), 1.0);
        assert_eq!(bucket("reflector", "+Inf"), 1.0);
        let sum = sample(&text, &format!("{h}_sum{{stage=\"reflector\"}}"));
        assert!((sum - 0.000_04).abs() < 1e-12, "{sum}");
        assert_eq!(
            sample(&text, &format!("{h}_count{{stage=\"watch_cache\"}}")),
            0.0
        );
        assert_eq!(sample(&text, &format!("{h}_count{{stage=\"fifo\"}}")), 0.0);
        assert_eq!(
            sample(&text, "watchlife_stage_clock_skew_total{stage=\"fifo\"}"),
            1.0
        );
        assert!(
            !text.contains("stage=\"etcd\""),
            "the first stage has no latency"
        );
    }

    #[test]
    fn the_exposition_is_openmetrics_with_every_family_declared_once() {
        let text = Metrics::default().render();
        assert!(text.ends_with("# EOF\n"), "{text}");
        let mut typed = std::collections::BTreeSet::new();
        for l in text.lines() {
            if let Some(rest) = l.strip_prefix("# TYPE ") {
                let name = rest.split(' ').next().unwrap();
                assert!(typed.insert(name.to_string()), "declared twice: {name}");
            } else {
                assert!(
                    l.starts_with("# HELP ")
                        || l == "# EOF"
                        || l.rsplit_once(' ')
                            .is_some_and(|(_, v)| v.parse::<f64>().is_ok()),
                    "not OpenMetrics text: {l}"
                );
            }
        }
        assert!(typed.contains("watchlife_stage_latency_seconds"));
        assert!(typed.contains("watchlife_frames_published"));
    }
}
