//! One viewer's WebSocket connection.
//!
//! Sends `hello`, then either the frames the viewer missed or a snapshot, then
//! the live stream, with a heartbeat on a period. A viewer that asks for
//! batches (`/ws?batch=true`, what the browser app does) gets several frames
//! to a message, one per line, and while frames keep coming at most one write
//! every [`batch_interval`]: [`BATCH_INTERVAL`], longer when so many viewers
//! are connected that their writes together would pass
//! [`WRITES_PER_SECOND`]. Reads the viewer's messages
//! (filters, demo actions) and answers a bad one with an `error` frame; a bad
//! message never closes the connection, let alone the bridge. What does close
//! it, always with a close frame and a reason when the socket still takes
//! one:
//!
//! - the bridge shutting down (1001, going away);
//! - no answer to pings for [`DEAD_AFTER`] (1001): the viewer is gone;
//! - a write that does not complete within [`DEAD_AFTER`]: the viewer stopped
//!   reading altogether, and the socket is dropped (no close frame could get
//!   through);
//! - a sustained flood of messages or pings ([`FLOOD_LIMIT`], 1008, policy);
//! - a message over [`MAX_FRAME_BYTES`] (1009, too big).
//!
//! A viewer that merely falls behind is not closed: it gets `resync` and a
//! snapshot (see [`crate::hub`]).

use crate::app::App;
use crate::hub::{Bodies, Join, Published, encode};
use crate::metrics::{Closed, Metrics, ResyncCause};
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, close_code};
use futures_util::stream::SplitSink;
use futures_util::{SinkExt, StreamExt};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::OwnedSemaphorePermit;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::watch;
use tokio::time::Instant;
use watchlife_protocol::{
    ClientMessage, ErrorCode, ErrorFrame, Filter, FrameBody, Heartbeat, Resync, ServerFrame,
};

/// How often a heartbeat goes out (with a WebSocket ping). A viewer that hears
/// nothing for three periods calls the connection stalled: a dead link is
/// noticed within seconds.
pub const HEARTBEAT: Duration = Duration::from_secs(5);

/// How long the bridge waits for any sign of life from a viewer (a message,
/// or the pong a browser sends by itself for every ping), and for one write
/// to it to complete, before it calls the viewer gone. Three heartbeats: the
/// same rule the viewer applies to the bridge, so a dead connection is
/// noticed from both ends within 15 to 20 seconds.
pub const DEAD_AFTER: Duration = Duration::from_secs(3 * HEARTBEAT.as_secs());

/// Largest message a viewer may send. Viewers send small commands; anything
/// bigger is a mistake or an attack. Bigger ones are answered with an error
/// frame, up to [`MAX_FRAME_BYTES`].
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024;

/// Largest message the WebSocket layer reads at all; beyond it the bridge
/// closes the connection (1009) instead of buffering an attacker's payload.
pub const MAX_FRAME_BYTES: usize = 4 * MAX_MESSAGE_BYTES;

/// The WebSocket read buffer of a viewer's connection. A viewer's messages
/// are a few hundred bytes (a subscription, a demo action): 4 KiB reads any
/// of them at once, where the library's default, 128 KiB, was most of an
/// idle viewer's memory. A larger message (up to [`MAX_FRAME_BYTES`]) still
/// reads, over several reads.
pub const READ_BUFFER_BYTES: usize = 4 * 1024;

/// Messages a viewer may send per second, on average. The app sends one
/// message per filter change or demo action: a person clicking as fast as
/// they can makes a few a second.
pub const MESSAGES_PER_SECOND: f64 = 10.0;

/// Messages a viewer may send at once before the rate applies: a page that
/// restores a view sends a handful together.
pub const MESSAGE_BURST: f64 = 20.0;

/// Messages over the rate the bridge forgives, minus what it forgave at
/// [`MESSAGES_PER_SECOND`], before it closes the connection: a client that
/// goes on sending after being told `rate_limited` is a flood, not a person.
pub const FLOOD_LIMIT: f64 = 100.0;

/// At most one `rate_limited` error frame this often: answering every message
/// of a flood would make the bridge flood back.
pub const RATE_ERROR_EVERY: Duration = Duration::from_secs(1);

/// Most frames written to a socket with one flush. Under load a viewer's
/// frames are written in batches, one system call for many frames; the batch
/// is small enough that its memory does not matter.
pub const MAX_BATCH: usize = 64;

/// Shortest time between two writes to a viewer that takes batches, while
/// frames keep coming: frames that arrive meanwhile wait and go together. A
/// frame after a quiet spell goes at once. Half a frame at 60 Hz: the page
/// draws what arrived in time, and a message costs it the same whether it
/// holds one frame or fifty.
pub const BATCH_INTERVAL: Duration = Duration::from_millis(8);

/// WebSocket writes a second the bridge aims to stay under, all viewers
/// together, by pacing the writes of each viewer that takes batches (see
/// [`batch_interval`], which counts every connected viewer). A write costs a system call on each side, a wake-up
/// and the framing, whether it holds one frame or fifty: on the two cores of
/// the fan-out bench, 100,000 messages a second (10,000 viewers, a frame
/// each, ten times a second) took 1.3 cores of the bridge, and 1,000,000 left
/// viewers seconds behind. Half of what was sustained leaves room for the
/// rest of the bridge.
pub const WRITES_PER_SECOND: u32 = 50_000;

/// Longest pause between two writes to a viewer that takes batches, however
/// many viewers share the bridge: a quarter of a second still reads as
/// live, and the stage times a page shows were stamped where they happened,
/// not when the page got them.
pub const MAX_BATCH_INTERVAL: Duration = Duration::from_millis(250);

/// The pause between two writes to a viewer that takes batches while
/// frames keep coming, with `viewers` connected: [`BATCH_INTERVAL`],
/// stretched so that their writes together stay under [`WRITES_PER_SECOND`],
/// at most [`MAX_BATCH_INTERVAL`]. A frame after a quiet spell goes at once
/// whatever the interval.
pub fn batch_interval(viewers: usize) -> Duration {
    let shared = Duration::from_secs(1) * viewers.min(u32::MAX as usize) as u32 / WRITES_PER_SECOND;
    shared.clamp(BATCH_INTERVAL, MAX_BATCH_INTERVAL)
}

/// Most frames taken per write for a viewer that takes batches: with one
/// write per [`BATCH_INTERVAL`], 32,000 frames a second, far more than a page
/// reads; with one per [`MAX_BATCH_INTERVAL`], 1,024. Each write's frames are
/// copied into its messages, so this bounds a viewer's memory as well.
pub const PACED_BATCH: usize = 256;

/// Largest message of several frames for a viewer that takes batches
/// (`/ws?batch=true`); a single larger frame (a snapshot) goes alone. A page
/// pays for every message it receives (an event dispatched, a string handed
/// to its code), so thousands of frames a second cost far less in tens of
/// messages; 64 KiB holds a full batch of typical events while keeping each
/// message's handling short.
pub const MAX_BATCH_BYTES: usize = 64 * 1024;

/// How long the bridge waits for a viewer's own close frame once it has sent
/// its own: a second, as long as it gives its close frame to go out.
pub const CLOSE_LINGER: Duration = Duration::from_secs(1);

/// Longest accepted resource name (a DNS subdomain) and namespace (a label).
const MAX_NAME: usize = 253;
const MAX_NAMESPACE: usize = 63;
/// Most resources one filter may name.
const MAX_FILTER_RESOURCES: usize = 64;

/// Everything one connection needs, handed over by the `/ws` handler.
pub struct Session {
    pub app: Arc<App>,
    /// The cursor the viewer resumes from, when it is one of this stream.
    pub since: Option<u64>,
    /// The viewer came with a cursor of another stream (another run, or
    /// another replica, of the bridge): it is resynced, and told why.
    pub foreign_cursor: bool,
    /// The viewer takes several frames in one message, one per line.
    pub batch: bool,
    /// Becomes `true` (or closes) when the bridge shuts down.
    pub shutdown: watch::Receiver<bool>,
    /// The viewer's place under `--max-viewers`, released when it leaves.
    pub permit: OwnedSemaphorePermit,
}

type Sink = SplitSink<WebSocket, Message>;

/// What to do after one turn of the loop.
enum Step {
    Send(Vec<Utf8Bytes>),
    Ping(Utf8Bytes),
    Nothing,
    Close(Closed, u16, String),
    Leave,
}

/// Serves one viewer until it leaves or the bridge shuts down.
pub async fn serve(socket: WebSocket, session: Session) {
    let Session {
        app,
        since,
        batch,
        foreign_cursor,
        mut shutdown,
        permit: _permit,
    } = session;
    let metrics = app.hub.metrics().clone();
    let _counted = metrics.viewer_connected();
    let (sink, mut incoming) = socket.split();
    let mut out = Outbox::new(sink, metrics.clone(), batch);
    let attached = app.hub.attach(since, Bodies::Light);
    let mut cursor = attached.cursor;
    let mut live = attached.live;
    let mut filter = Filter::default();
    let mut limiter = RateLimiter::new(Instant::now());
    // For a viewer that takes batches: no stream write before this.
    let mut next_write = Instant::now();
    let per_write = if batch { PACED_BATCH } else { MAX_BATCH };

    let mut opening = vec![control(cursor, FrameBody::Hello(app.hello()))];
    match attached.join {
        Join::Resume(frames) => opening.extend(frames.into_iter().map(|p| p.text)),
        Join::Snapshot(snapshot) => {
            if since.is_some() {
                metrics.resynced(ResyncCause::Cursor);
                let why = if foreign_cursor {
                    "your cursor is of another stream (another run or replica of the bridge)"
                } else {
                    "your cursor is no longer in the bridge's window"
                };
                // Test-only: see crate::test_break.
                if !crate::test_break::is(crate::test_break::Break::SkipResync) {
                    opening.push(resync(cursor, why));
                }
            }
            opening.push(snapshot);
        }
    }
    if !out.send(opening).await {
        return;
    }

    let mut heartbeat = tokio::time::interval(HEARTBEAT);
    heartbeat.reset();
    let mut last_heard = Instant::now();
    loop {
        let step = tokio::select! {
            // Biased, in this order: shutdown and liveness first; the
            // viewer's messages before the stream, so a busy stream cannot
            // starve them (a flood is rate-limited and closed instead).
            biased;
            _ = shutdown.changed() => Step::Close(
                Closed::Shutdown,
                close_code::AWAY,
                "the bridge is shutting down".into(),
            ),
            _ = heartbeat.tick() => {
                if last_heard.elapsed() > DEAD_AFTER {
                    Step::Close(
                        Closed::Unresponsive,
                        close_code::AWAY,
                        format!("no answer from you for {} s", DEAD_AFTER.as_secs()),
                    )
                } else {
                    Step::Ping(control(cursor, FrameBody::Heartbeat(Heartbeat { at: app.now() })))
                }
            }
            message = incoming.next() => {
                last_heard = Instant::now();
                match message {
                    Some(Ok(Message::Text(text))) => match limiter.admit(last_heard) {
                        Admit::Yes => Step::Send(handle(&app, &metrics, &text, &mut filter, cursor).await),
                        Admit::No { tell } => rate_limited(&metrics, tell, cursor),
                        Admit::Flood => flood(),
                    },
                    Some(Ok(Message::Binary(_))) => match limiter.admit(last_heard) {
                        Admit::Yes => {
                            metrics.message_rejected(ErrorCode::Malformed);
                            Step::Send(vec![error(cursor, ErrorCode::Malformed, "binary messages are not accepted; send JSON text")])
                        }
                        Admit::No { tell } => rate_limited(&metrics, tell, cursor),
                        Admit::Flood => flood(),
                    },
                    // Pongs answer our pings; pings are answered by the
                    // WebSocket layer, and count against the rate.
                    Some(Ok(Message::Pong(_))) => Step::Nothing,
                    Some(Ok(Message::Ping(_))) => match limiter.admit(last_heard) {
                        Admit::Flood => flood(),
                        _ => Step::Nothing,
                    },
                    Some(Ok(Message::Close(_))) | None => Step::Leave,
                    Some(Err(e)) => read_failed(e),
                }
            }
            frame = live.recv() => match frame {
                Ok(first) => {
                    if batch {
                        tokio::time::sleep_until(next_write).await;
                    }
                    // Take what else is already waiting: one write for many frames.
                    let mut texts = Vec::new();
                    let mut next = Ok(first);
                    loop {
                        match next {
                            Ok(p) if p.seq <= cursor => {}
                            Ok(p) => {
                                cursor = p.seq;
                                if wanted(&filter, &p) {
                                    texts.push(p.text);
                                }
                            }
                            Err(missed) => {
                                texts.extend(catch_up(&app, &metrics, missed, &mut cursor));
                            }
                        }
                        if texts.len() >= per_write {
                            break;
                        }
                        next = match live.try_recv() {
                            Ok(p) => Ok(p),
                            Err(TryRecvError::Lagged(missed)) => Err(missed),
                            Err(TryRecvError::Empty | TryRecvError::Closed) => break,
                        };
                    }
                    Step::Send(texts)
                }
                Err(RecvError::Lagged(missed)) => Step::Send(catch_up(&app, &metrics, missed, &mut cursor)),
                Err(RecvError::Closed) => Step::Close(
                    Closed::Shutdown,
                    close_code::AWAY,
                    "the bridge is shutting down".into(),
                ),
            },
        };
        match step {
            Step::Send(texts) => {
                // The pause counts from the write's start: a write slowed by
                // a full socket is not paced twice.
                let started = Instant::now();
                let wrote = !texts.is_empty();
                if !out.send(texts).await {
                    return;
                }
                if wrote {
                    let viewers = metrics.viewers().max(0) as usize;
                    next_write = started + batch_interval(viewers);
                }
            }
            Step::Ping(heartbeat) => {
                if !out.send_with_ping(heartbeat).await {
                    return;
                }
            }
            Step::Nothing => {}
            Step::Close(why, code, reason) => {
                metrics.viewer_closed(why);
                out.close(code, &reason).await;
                linger(&mut incoming).await;
                return;
            }
            Step::Leave => return,
        }
    }
}

/// The closing handshake, after the bridge sent its close frame: what the
/// viewer still sends is read and dropped until its own close frame (or
/// [`CLOSE_LINGER`]). Dropping a socket with data unread makes the kernel
/// reset it, and a reset can overtake the close frame on its way: a viewer
/// flooding the bridge would see the connection cut with no reason.
async fn linger(incoming: &mut futures_util::stream::SplitStream<WebSocket>) {
    let closed = async {
        while let Some(Ok(message)) = incoming.next().await {
            if matches!(message, Message::Close(_)) {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(CLOSE_LINGER, closed).await;
}

/// `resync` and a snapshot for a viewer that fell `missed` frames behind;
/// moves its cursor to the snapshot's.
fn catch_up(app: &App, metrics: &Metrics, missed: u64, cursor: &mut u64) -> Vec<Utf8Bytes> {
    let (seq, snapshot) = app.hub.snapshot(Bodies::Light);
    *cursor = seq;
    metrics.resynced(ResyncCause::Lagged);
    // Test-only: see crate::test_break.
    if crate::test_break::is(crate::test_break::Break::SkipResync) {
        return vec![snapshot];
    }
    vec![
        resync(
            seq,
            &format!(
                "you fell {missed} frames behind (the limit is {})",
                crate::hub::VIEWER_LAG
            ),
        ),
        snapshot,
    ]
}

fn rate_limited(metrics: &Metrics, tell: bool, cursor: u64) -> Step {
    metrics.message_rejected(ErrorCode::RateLimited);
    if !tell {
        return Step::Nothing;
    }
    Step::Send(vec![error(
        cursor,
        ErrorCode::RateLimited,
        &format!(
            "too many messages: at most {MESSAGES_PER_SECOND} a second (bursts of {MESSAGE_BURST}); this one was dropped"
        ),
    )])
}

fn flood() -> Step {
    Step::Close(
        Closed::Flood,
        close_code::POLICY,
        format!("too many messages for too long (over {MESSAGES_PER_SECOND} a second)"),
    )
}

/// A read error: a message over [`MAX_FRAME_BYTES`] is closed with 1009 and
/// a reason; anything else (a broken connection, a protocol violation) ends
/// the connection, with a reason when the socket still takes one.
fn read_failed(e: axum::Error) -> Step {
    let text = e.to_string();
    // The WebSocket layer says "Space limit exceeded: Message too long".
    if text.contains("Space limit") || text.contains("too long") {
        Step::Close(
            Closed::TooLarge,
            close_code::SIZE,
            format!("message over {MAX_FRAME_BYTES} bytes"),
        )
    } else {
        tracing::debug!("a viewer's connection failed: {text}");
        Step::Leave
    }
}

/// The sending half, with the write deadline and the frame counts.
struct Outbox {
    sink: Sink,
    metrics: Metrics,
    /// Frames go out joined into messages (see [`batched`]).
    batch: bool,
}

impl Outbox {
    fn new(sink: Sink, metrics: Metrics, batch: bool) -> Self {
        Outbox {
            sink,
            metrics,
            batch,
        }
    }

    /// Writes `texts` with one flush. `false` when the viewer is gone: the
    /// write failed, or did not complete within [`DEAD_AFTER`].
    async fn send(&mut self, texts: Vec<Utf8Bytes>) -> bool {
        self.write(texts, false).await
    }

    /// Like [`Outbox::send`], followed by a ping the viewer must answer.
    async fn send_with_ping(&mut self, text: Utf8Bytes) -> bool {
        self.write(vec![text], true).await
    }

    async fn write(&mut self, texts: Vec<Utf8Bytes>, ping: bool) -> bool {
        if texts.is_empty() && !ping {
            return true;
        }
        let frames = texts.len() as u64;
        let bytes: usize = texts.iter().map(|t| t.len()).sum();
        let texts = if self.batch { batched(texts) } else { texts };
        let messages = texts.len() as u64;
        let sink = &mut self.sink;
        let write = async move {
            for text in texts {
                sink.feed(Message::Text(text)).await?;
            }
            if ping {
                sink.feed(Message::Ping(Default::default())).await?;
            }
            sink.flush().await
        };
        match tokio::time::timeout(DEAD_AFTER, write).await {
            Ok(Ok(())) => {
                self.metrics.frames_sent(frames, messages, bytes as u64);
                true
            }
            Ok(Err(_)) => false,
            Err(_) => {
                // The viewer stopped reading: no close frame could reach it.
                self.metrics.viewer_closed(Closed::SendStalled);
                false
            }
        }
    }

    /// Sends a close frame with a reason (best effort: a second at most).
    async fn close(&mut self, code: u16, reason: &str) {
        let frame = CloseFrame {
            code,
            reason: reason.into(),
        };
        let _ = tokio::time::timeout(
            Duration::from_secs(1),
            self.sink.send(Message::Close(Some(frame))),
        )
        .await;
    }
}

/// `texts` joined into as few messages as [`MAX_BATCH_BYTES`] allows, in
/// order, as the protocol's batches ([`watchlife_protocol::connection`]);
/// a lone frame (a snapshot, often) goes as it is, not copied.
fn batched(texts: Vec<Utf8Bytes>) -> Vec<Utf8Bytes> {
    use watchlife_protocol::connection::{BATCH_SEPARATOR, plan_batches};
    let lengths: Vec<usize> = texts.iter().map(|t| t.len()).collect();
    let plan = plan_batches(&lengths, MAX_BATCH_BYTES);
    let mut texts = texts.into_iter();
    plan.into_iter()
        .map(|batch| {
            let mut frames = texts.by_ref().take(batch.len());
            if batch.len() == 1 {
                return frames.next().expect("a batch has its frames");
            }
            let mut joined = String::with_capacity(lengths[batch].iter().sum::<usize>() + 64);
            for (i, frame) in frames.enumerate() {
                if i > 0 {
                    joined.push(BATCH_SEPARATOR);
                }
                joined.push_str(frame.as_str());
            }
            joined.into()
        })
        .collect()
}

/// The per-viewer token bucket, and the count of messages it turned away.
struct RateLimiter {
    tokens: f64,
    /// Messages turned away, forgiven at [`MESSAGES_PER_SECOND`].
    excess: f64,
    at: Instant,
    last_told: Option<Instant>,
}

enum Admit {
    Yes,
    /// Over the rate: drop it; `tell` when an error frame is due.
    No {
        tell: bool,
    },
    /// A sustained flood: close.
    Flood,
}

impl RateLimiter {
    fn new(now: Instant) -> Self {
        RateLimiter {
            tokens: MESSAGE_BURST,
            excess: 0.0,
            at: now,
            last_told: None,
        }
    }

    fn admit(&mut self, now: Instant) -> Admit {
        let refill = now.duration_since(self.at).as_secs_f64() * MESSAGES_PER_SECOND;
        self.at = now;
        self.tokens = (self.tokens + refill).min(MESSAGE_BURST);
        self.excess = (self.excess - refill).max(0.0);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Admit::Yes;
        }
        self.excess += 1.0;
        if self.excess > FLOOD_LIMIT {
            return Admit::Flood;
        }
        let tell = self
            .last_told
            .is_none_or(|t| now.duration_since(t) >= RATE_ERROR_EVERY);
        if tell {
            self.last_told = Some(now);
        }
        Admit::No { tell }
    }
}

/// Answers one message from the viewer.
async fn handle(
    app: &App,
    metrics: &Metrics,
    text: &str,
    filter: &mut Filter,
    cursor: u64,
) -> Vec<Utf8Bytes> {
    match parse_message(text) {
        Err(refused) => {
            metrics.message_rejected(refused.code);
            vec![error(cursor, refused.code, &refused.message)]
        }
        Ok(ClientMessage::Subscribe { filter: new }) => {
            *filter = new;
            vec![]
        }
        Ok(ClientMessage::Action { action }) => vec![match app.run_action(action).await {
            Ok(result) => control(cursor, FrameBody::ActionResult(result)),
            Err(e) => error(cursor, e.code, &e.message),
        }],
    }
}

/// Why a viewer's message was refused: what its `error` frame says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub code: ErrorCode,
    pub message: String,
}

/// Reads one text message from a viewer, as [`serve`] does: a message over
/// [`MAX_MESSAGE_BYTES`], one that is not a [`ClientMessage`] (bad JSON, an
/// unknown type, a missing field) and a filter that names no resource or
/// namespace Kubernetes could have are refused, each with the code and
/// words of its `error` frame. Never panics, whatever the text.
pub fn parse_message(text: &str) -> Result<ClientMessage, Refused> {
    let refuse = |code, message: String| Err(Refused { code, message });
    if text.len() > MAX_MESSAGE_BYTES {
        return refuse(
            ErrorCode::TooLarge,
            format!(
                "message of {} bytes is over the limit of {MAX_MESSAGE_BYTES}",
                text.len()
            ),
        );
    }
    match serde_json::from_str::<ClientMessage>(text) {
        Err(e) => refuse(ErrorCode::Malformed, format!("not a valid message: {e}")),
        Ok(ClientMessage::Subscribe { filter }) => match check_filter(&filter) {
            Err(why) => refuse(ErrorCode::Malformed, why),
            Ok(()) => Ok(ClientMessage::Subscribe { filter }),
        },
        Ok(action) => Ok(action),
    }
}

/// A filter names resources and a namespace as Kubernetes spells them.
fn check_filter(filter: &Filter) -> Result<(), String> {
    let dns = |s: &str, max: usize| {
        !s.is_empty()
            && s.len() <= max
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    };
    if filter.resources.len() > MAX_FILTER_RESOURCES {
        return Err(format!(
            "a filter names at most {MAX_FILTER_RESOURCES} resources"
        ));
    }
    if let Some(bad) = filter.resources.iter().find(|r| !dns(r, MAX_NAME)) {
        return Err(format!(
            "{bad:?} is not a resource name (like pods or deployments.apps)"
        ));
    }
    match &filter.namespace {
        Some(ns) if !dns(ns, MAX_NAMESPACE) || ns.contains('.') => {
            Err(format!("{ns:?} is not a namespace name"))
        }
        _ => Ok(()),
    }
}

fn wanted(filter: &Filter, frame: &Published) -> bool {
    let resource_ok = match &frame.resource {
        // Frames about the whole source go to everyone.
        None => true,
        Some(r) => filter.resources.is_empty() || filter.resources.iter().any(|f| **f == **r),
    };
    resource_ok
        && match (&filter.namespace, &frame.namespace) {
            (None, _) => true,
            (Some(want), Some(ns)) => **want == **ns,
            // Cluster-scoped objects and reflector updates are not in any namespace.
            (Some(_), None) => true,
        }
}

fn control(seq: u64, body: FrameBody) -> Utf8Bytes {
    encode(&ServerFrame { seq, body })
}

fn resync(seq: u64, reason: &str) -> Utf8Bytes {
    control(
        seq,
        FrameBody::Resync(Resync {
            reason: reason.into(),
        }),
    )
}

fn error(seq: u64, code: ErrorCode, message: &str) -> Utf8Bytes {
    control(
        seq,
        FrameBody::Error(ErrorFrame {
            code,
            message: message.into(),
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_allows_a_burst_then_the_rate_then_calls_a_flood() {
        let start = Instant::now();
        let mut limiter = RateLimiter::new(start);
        for _ in 0..MESSAGE_BURST as usize {
            assert!(matches!(limiter.admit(start), Admit::Yes));
        }
        assert!(matches!(limiter.admit(start), Admit::No { tell: true }));
        assert!(matches!(limiter.admit(start), Admit::No { tell: false }));
        // A tenth of a second later, one more message is allowed.
        let later = start + Duration::from_millis(100);
        assert!(matches!(limiter.admit(later), Admit::Yes));
        // Going on at once is a flood.
        let mut outcome = Admit::Yes;
        for _ in 0..FLOOD_LIMIT as usize + 1 {
            outcome = limiter.admit(later);
            if matches!(outcome, Admit::Flood) {
                break;
            }
        }
        assert!(matches!(outcome, Admit::Flood));
    }

    #[test]
    fn sending_at_the_rate_is_never_a_flood() {
        let start = Instant::now();
        let mut limiter = RateLimiter::new(start);
        let step = Duration::from_secs_f64(1.0 / MESSAGES_PER_SECOND);
        for i in 0..10_000u32 {
            assert!(matches!(limiter.admit(start + step * i), Admit::Yes));
        }
    }

    #[test]
    fn the_batch_interval_stretches_with_the_crowd_within_its_bounds() {
        assert_eq!(batch_interval(0), BATCH_INTERVAL);
        assert_eq!(batch_interval(100), BATCH_INTERVAL);
        assert_eq!(batch_interval(1_000), Duration::from_millis(20));
        assert_eq!(batch_interval(10_000), Duration::from_millis(200));
        assert_eq!(batch_interval(1_000_000), MAX_BATCH_INTERVAL);
        // Up to the crowd the longest pause can pace, within the budget.
        for viewers in [1, 10, 400, 401, 2_000, 9_999, 12_500] {
            let writes = viewers as f64 / batch_interval(viewers).as_secs_f64();
            assert!(
                writes <= WRITES_PER_SECOND as f64 + 1.0,
                "{viewers} viewers: {writes} writes/s"
            );
        }
    }

    #[test]
    fn batches_join_frames_in_order_within_the_size_limit() {
        let frame = |n: usize| Utf8Bytes::from(format!("{{\"seq\":{n}}}"));
        assert_eq!(batched(vec![frame(1)]), vec![frame(1)]);
        let joined = batched((1..=3).map(frame).collect());
        assert_eq!(
            joined,
            vec![Utf8Bytes::from("{\"seq\":1}\n{\"seq\":2}\n{\"seq\":3}")]
        );

        // A frame bigger than a batch goes alone; the others fill messages up
        // to the limit and never beyond.
        let big = Utf8Bytes::from("x".repeat(MAX_BATCH_BYTES + 1));
        let small = Utf8Bytes::from("y".repeat(MAX_BATCH_BYTES / 3));
        let texts = vec![
            small.clone(),
            big.clone(),
            small.clone(),
            small.clone(),
            small.clone(),
            small.clone(),
        ];
        let messages = batched(texts.clone());
        assert_eq!(messages.len(), 4);
        assert_eq!(messages[1], big);
        assert!(
            messages
                .iter()
                .filter(|m| **m != big)
                .all(|m| m.len() <= MAX_BATCH_BYTES)
        );
        let lines: Vec<&str> = messages
            .iter()
            .flat_map(|m| m.as_str().split('\n'))
            .collect();
        let originals: Vec<&str> = texts.iter().map(|t| t.as_str()).collect();
        assert_eq!(lines, originals);
    }

    #[test]
    fn filters_are_checked() {
        let ok = Filter {
            resources: vec!["pods".into(), "deployments.apps".into()],
            namespace: Some("kube-system".into()),
        };
        assert!(check_filter(&ok).is_ok());
        assert!(check_filter(&Filter::default()).is_ok());
        let bad_resource = Filter {
            resources: vec!["Pods<script>".into()],
            namespace: None,
        };
        assert!(check_filter(&bad_resource).is_err());
        let bad_ns = Filter {
            resources: vec![],
            namespace: Some("a.b".into()),
        };
        assert!(check_filter(&bad_ns).is_err());
        let many = Filter {
            resources: vec!["pods".into(); MAX_FILTER_RESOURCES + 1],
            namespace: None,
        };
        assert!(check_filter(&many).is_err());
    }

    #[test]
    fn frames_about_the_whole_source_pass_every_filter() {
        let frame = |resource: Option<&str>, namespace: Option<&str>| Published {
            seq: 1,
            text: "{}".into(),
            resource: resource.map(Into::into),
            namespace: namespace.map(Into::into),
        };
        let pods_in_default = Filter {
            resources: vec!["pods".into()],
            namespace: Some("default".into()),
        };
        assert!(wanted(&pods_in_default, &frame(None, None)));
        assert!(wanted(
            &pods_in_default,
            &frame(Some("pods"), Some("default"))
        ));
        assert!(!wanted(
            &pods_in_default,
            &frame(Some("pods"), Some("other"))
        ));
        assert!(!wanted(
            &pods_in_default,
            &frame(Some("configmaps"), Some("default"))
        ));
    }
}
