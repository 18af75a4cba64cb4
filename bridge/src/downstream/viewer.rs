//! One viewer's WebSocket connection.
//!
//! Sends `hello`, then either the frames the viewer missed or a snapshot, then
//! the live stream, with a heartbeat every [`HEARTBEAT`]. A viewer that asks
//! for batches gets them at a pace ([`crate::downstream::outbox`]). Reads the viewer's
//! messages (filters, demo actions; [`crate::downstream::viewer_message`]) and answers a
//! bad one with an `error` frame; a bad message never closes the connection,
//! let alone the bridge. What does close it, always with a close frame and a
//! reason when the socket still takes one:
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
//! snapshot (see [`crate::downstream::hub`]).
//!
//! A connection is a [`Session`] over any sink and stream of WebSocket
//! messages, with one method per thing that can happen to it: the bridge
//! shuts down, the heartbeat ticks, the viewer sends a message, frames
//! arrive. [`serve`] runs one over a real socket; the tests run one over
//! channels, with tokio's clock paused.

use crate::app::App;
use crate::downstream::compressed::Out;
use crate::downstream::frame_text::encode;
use crate::downstream::hub::{Bodies, Join, Published};
use crate::downstream::metrics::{Closed, CountedWhileHeld, Metrics, ResyncCause, ViewerGauge};
use crate::downstream::outbox::{MAX_BATCH, Outbox, PACED_BATCH};
use crate::downstream::rate_limit::{Admit, MESSAGE_BURST, MESSAGES_PER_SECOND, RateLimiter};
use axum::extract::ws::{Message, Utf8Bytes, WebSocket, close_code};
use futures_util::{Sink, Stream, StreamExt};
use std::fmt::Display;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::OwnedSemaphorePermit;
use tokio::sync::broadcast::{self, error::RecvError, error::TryRecvError};
use tokio::sync::watch;
use tokio::time::Instant;
use watchlife_protocol::{
    ClientMessage, ErrorCode, ErrorFrame, Filter, FrameBody, Heartbeat, Resync, ServerFrame,
};

pub use crate::downstream::liveness::{DEAD_AFTER, HEARTBEAT};
pub use crate::downstream::outbox::{
    BATCH_INTERVAL, MAX_BATCH_BYTES, MAX_BATCH_INTERVAL, WRITES_PER_SECOND, batch_interval,
};
pub use crate::downstream::rate_limit::FLOOD_LIMIT;
pub use crate::downstream::viewer_message::{
    MAX_FRAME_BYTES, MAX_MESSAGE_BYTES, Refused, parse_message,
};

/// The WebSocket read buffer of a viewer's connection. A viewer's messages
/// are a few hundred bytes (a subscription, a demo action): 4 KiB reads any
/// of them at once, where the library's default, 128 KiB, was most of an
/// idle viewer's memory. A larger message (up to [`MAX_FRAME_BYTES`]) still
/// reads, over several reads.
pub const READ_BUFFER_BYTES: usize = 4 * 1024;

/// How many bytes of outgoing messages the WebSocket layer gathers before it
/// writes them to the socket (the bridge flushes after every write anyway).
/// A buffer never gives back what it grew to, and the library's default,
/// 128 KiB, let a busy viewer's grow to two or three batches: at 10,000
/// viewers that was most of the bridge's memory. At 16 KiB a busy viewer's
/// batch (one message a write, most often) goes to the socket as it is
/// given or at the flush right after, so the buffer holds at most 16 KiB
/// and one message; a viewer without batches still has its small frames
/// written several to a system call.
pub const WRITE_BUFFER_BYTES: usize = 16 * 1024;

/// How long the bridge waits for a viewer's own close frame once it has sent
/// its own: a second, as long as it gives its close frame to go out.
pub const CLOSE_LINGER: Duration = Duration::from_secs(1);

/// Everything one connection needs, handed over by the `/ws` handler.
pub struct Viewer {
    pub app: Arc<App>,
    /// The cursor the viewer resumes from, when it is one of this stream.
    pub since: Option<u64>,
    /// The viewer came with a cursor of another stream (another run, or
    /// another replica, of the bridge): it is resynced, and told why.
    pub foreign_cursor: bool,
    /// The viewer takes several frames in one message, one per line.
    pub batch: bool,
    /// The viewer takes its frames compressed (`/ws?compress=deflate`).
    pub compress: bool,
    /// The viewer takes updates' bodies as merge patches (`/ws?bodies=patch`).
    pub patched: bool,
    /// Becomes `true` (or closes) when the bridge shuts down.
    pub shutdown: watch::Receiver<bool>,
    /// The viewer's place under `--max-viewers`, released when it leaves.
    pub permit: OwnedSemaphorePermit,
}

/// Serves one viewer until it leaves or the bridge shuts down.
pub async fn serve(socket: WebSocket, viewer: Viewer) {
    let (sink, incoming) = socket.split();
    Session::open(viewer, sink, incoming).run().await;
}

/// What to do after one event.
enum Step {
    Send(Vec<Out>),
    Ping(Utf8Bytes),
    Nothing,
    Close(Closed, u16, String),
    Leave,
}

impl Step {
    /// The bridge is going away.
    fn shutdown() -> Step {
        Step::Close(
            Closed::Shutdown,
            close_code::AWAY,
            "the bridge is shutting down".into(),
        )
    }

    /// A sustained flood of messages or pings.
    fn flood() -> Step {
        Step::Close(
            Closed::Flood,
            close_code::POLICY,
            format!("too many messages for too long (over {MESSAGES_PER_SECOND} a second)"),
        )
    }
}

/// One viewer's connection: writes to `S`, reads from `R`.
///
/// Contract: frames go out in `seq` order, none twice, each one the
/// viewer's filter wants; a viewer that fell out of the live stream gets
/// `resync` and a snapshot, never a silent gap. Events are taken one at a
/// time, in this order of precedence: shutdown, the heartbeat, the viewer's
/// messages, the stream (so a busy stream cannot starve the viewer's
/// messages; a flood is rate-limited and closed instead).
pub struct Session<S, R> {
    app: Arc<App>,
    metrics: Metrics,
    out: Outbox<S>,
    incoming: R,
    live: broadcast::Receiver<Published>,
    shutdown: watch::Receiver<bool>,
    /// The last `seq` this viewer has been given (or skipped).
    cursor: u64,
    /// The frames to write first: `hello`, then what the viewer missed.
    opening: Vec<Out>,
    filter: Filter,
    limiter: RateLimiter,
    last_heard: Instant,
    batch: bool,
    /// For a viewer that takes batches: no stream write before this.
    next_write: Instant,
    _counted: ViewerGauge,
    /// The viewer takes updates' bodies as merge patches.
    patched: bool,
    /// Keeps the hub compressing its stream while this viewer takes it so.
    _compressed: Option<CountedWhileHeld>,
    /// Keeps the hub making lean frames while this viewer takes them.
    _patched: Option<CountedWhileHeld>,
    _permit: OwnedSemaphorePermit,
}

impl<S, R, E> Session<S, R>
where
    S: Sink<Message> + Unpin,
    R: Stream<Item = Result<Message, E>> + Unpin,
    E: Display,
{
    /// Attaches `viewer` to the hub: from here on it misses nothing.
    pub fn open(viewer: Viewer, sink: S, incoming: R) -> Self {
        let app = viewer.app;
        let metrics = app.hub.metrics().clone();
        let counted = metrics.viewer_connected();
        // Counted before attaching: every frame after the cursor is compressed.
        let compressed = viewer.compress.then(|| metrics.viewer_compressed());
        let patched = viewer.patched.then(|| metrics.viewer_patched());
        let attached = app.hub.attach(viewer.since, Bodies::Light);
        let mut opening = vec![control(attached.cursor, FrameBody::Hello(app.hello())).into()];
        match attached.join {
            Join::Resume(frames) => opening.extend(
                frames
                    .into_iter()
                    .map(|p| Out::published(p, viewer.patched)),
            ),
            Join::Snapshot(snapshot) => {
                if viewer.since.is_some() {
                    metrics.resynced(ResyncCause::Cursor);
                    let why = if viewer.foreign_cursor {
                        "your cursor is of another stream (another run or replica of the bridge)"
                    } else {
                        "your cursor is no longer in the bridge's window"
                    };
                    // Test-only: see crate::test_break.
                    if !crate::test_break::is(crate::test_break::Break::SkipResync) {
                        opening.push(resync(attached.cursor, why).into());
                    }
                }
                opening.push(snapshot.into());
            }
        }
        let now = Instant::now();
        Session {
            out: Outbox::new(sink, metrics.clone(), viewer.batch, viewer.compress),
            incoming,
            live: attached.live,
            shutdown: viewer.shutdown,
            cursor: attached.cursor,
            opening,
            filter: Filter::default(),
            limiter: RateLimiter::new(now),
            last_heard: now,
            batch: viewer.batch,
            next_write: now,
            app,
            metrics,
            _counted: counted,
            patched: viewer.patched,
            _compressed: compressed,
            _patched: patched,
            _permit: viewer.permit,
        }
    }

    /// Serves the viewer until it leaves or the bridge shuts down.
    pub async fn run(mut self) {
        let opening = std::mem::take(&mut self.opening);
        if !self.out.send(opening).await {
            return;
        }
        let mut heartbeat = tokio::time::interval(HEARTBEAT);
        heartbeat.reset();
        self.last_heard = Instant::now();
        loop {
            let step = tokio::select! {
                // Biased: see the order of precedence on [`Session`].
                biased;
                _ = self.shutdown.changed() => Step::shutdown(),
                _ = heartbeat.tick() => self.on_tick(),
                message = self.incoming.next() => self.on_message(message).await,
                frame = self.live.recv() => self.on_frames(frame).await,
            };
            if !self.carry_out(step).await {
                return;
            }
        }
    }

    /// The heartbeat: a ping the viewer must answer, or the close of a
    /// viewer that answered nothing for [`DEAD_AFTER`].
    fn on_tick(&mut self) -> Step {
        if self.last_heard.elapsed() > DEAD_AFTER {
            return Step::Close(
                Closed::Unresponsive,
                close_code::AWAY,
                format!("no answer from you for {} s", DEAD_AFTER.as_secs()),
            );
        }
        let beat = FrameBody::Heartbeat(Heartbeat {
            at: self.app.now(),
            watches_open: Some(self.app.hub.metrics().upstream_watches_open()),
        });
        Step::Ping(control(self.cursor, beat))
    }

    /// What the viewer sent (`None`: its stream ended). Any of it is a sign
    /// of life; text and binary messages and pings count against the rate.
    async fn on_message(&mut self, message: Option<Result<Message, E>>) -> Step {
        self.last_heard = Instant::now();
        let message = match message {
            Some(Ok(message)) => message,
            Some(Err(e)) => return read_failed(e),
            None => return Step::Leave,
        };
        match message {
            // Pongs answer our pings.
            Message::Pong(_) => Step::Nothing,
            Message::Close(_) => Step::Leave,
            // Pings are answered by the WebSocket layer.
            Message::Ping(_) => match self.limiter.admit(self.last_heard) {
                Admit::Flood => Step::flood(),
                _ => Step::Nothing,
            },
            Message::Text(_) | Message::Binary(_) => match self.limiter.admit(self.last_heard) {
                Admit::Yes => Step::Send(self.answer(message).await),
                Admit::No { tell } => self.rate_limited(tell),
                Admit::Flood => Step::flood(),
            },
        }
    }

    /// The answer to one admitted message: nothing for a new filter, the
    /// outcome of a demo action, or an `error` frame.
    async fn answer(&mut self, message: Message) -> Vec<Out> {
        let parsed = match &message {
            Message::Text(text) => parse_message(text),
            _ => Err(Refused {
                code: ErrorCode::Malformed,
                message: "binary messages are not accepted; send JSON text".into(),
            }),
        };
        match parsed {
            Err(refused) => {
                self.metrics.message_rejected(refused.code);
                vec![error(self.cursor, refused.code, &refused.message).into()]
            }
            Ok(ClientMessage::Subscribe { filter }) => {
                self.out.set_filtered(filter != Filter::default());
                self.filter = filter;
                vec![]
            }
            Ok(ClientMessage::Action { action }) => vec![
                match self.app.run_action(action).await {
                    Ok(result) => control(self.cursor, FrameBody::ActionResult(result)),
                    Err(e) => error(self.cursor, e.code, &e.message),
                }
                .into(),
            ],
        }
    }

    fn rate_limited(&self, tell: bool) -> Step {
        self.metrics.message_rejected(ErrorCode::RateLimited);
        if !tell {
            return Step::Nothing;
        }
        Step::Send(vec![
            error(
                self.cursor,
                ErrorCode::RateLimited,
                &format!(
                    "too many messages: at most {MESSAGES_PER_SECOND} a second (bursts of {MESSAGE_BURST}); this one was dropped"
                ),
            )
            .into(),
        ])
    }

    /// Frames from the hub: `first`, and what else is already waiting, for
    /// one write; for a viewer that takes batches, not before its pace
    /// allows.
    async fn on_frames(&mut self, first: Result<Published, RecvError>) -> Step {
        match first {
            Ok(first) => {
                if self.batch {
                    tokio::time::sleep_until(self.next_write).await;
                }
                Step::Send(self.gather(first))
            }
            Err(RecvError::Lagged(missed)) => Step::Send(self.catch_up(missed)),
            Err(RecvError::Closed) => Step::shutdown(),
        }
    }

    /// `first` and the frames already waiting, up to a write's worth, those
    /// the filter wants; a lag met on the way is caught up.
    fn gather(&mut self, first: Published) -> Vec<Out> {
        let per_write = if self.batch { PACED_BATCH } else { MAX_BATCH };
        let mut texts = Vec::new();
        let mut next = Ok(first);
        loop {
            match next {
                Ok(p) if p.seq <= self.cursor => {}
                Ok(p) => {
                    self.cursor = p.seq;
                    if wanted(&self.filter, &p) {
                        texts.push(Out::published(p, self.patched));
                    }
                }
                Err(missed) => texts.extend(self.catch_up(missed)),
            }
            if texts.len() >= per_write {
                return texts;
            }
            next = match self.live.try_recv() {
                Ok(p) => Ok(p),
                Err(TryRecvError::Lagged(missed)) => Err(missed),
                Err(TryRecvError::Empty | TryRecvError::Closed) => return texts,
            };
        }
    }

    /// `resync` and a snapshot for a viewer that fell `missed` frames behind;
    /// moves its cursor to the snapshot's.
    fn catch_up(&mut self, missed: u64) -> Vec<Out> {
        let (seq, snapshot) = self.app.hub.snapshot(Bodies::Light);
        self.cursor = seq;
        self.metrics.resynced(ResyncCause::Lagged);
        // Test-only: see crate::test_break.
        if crate::test_break::is(crate::test_break::Break::SkipResync) {
            return vec![snapshot.into()];
        }
        let why = format!(
            "you fell {missed} frames behind (the limit is {})",
            crate::downstream::hub::VIEWER_LAG
        );
        vec![resync(seq, &why).into(), snapshot.into()]
    }

    /// Does what one event called for; `false` once the connection is over.
    async fn carry_out(&mut self, step: Step) -> bool {
        match step {
            Step::Send(texts) => self.write(texts).await,
            Step::Ping(heartbeat) => self.out.send_with_ping(heartbeat).await,
            Step::Nothing => true,
            Step::Close(why, code, reason) => {
                self.metrics.viewer_closed(why);
                self.out.close(code, &reason).await;
                self.linger().await;
                false
            }
            Step::Leave => false,
        }
    }

    /// Writes stream or answer frames, and sets the pace of the next write.
    async fn write(&mut self, texts: Vec<Out>) -> bool {
        // The pause counts from the write's start: a write slowed by a full
        // socket is not paced twice.
        let started = Instant::now();
        let wrote = !texts.is_empty();
        if !self.out.send(texts).await {
            return false;
        }
        if wrote {
            let viewers = self.metrics.viewers().max(0) as usize;
            self.next_write = started + batch_interval(viewers);
        }
        true
    }

    /// The closing handshake, after the bridge sent its close frame: what
    /// the viewer still sends is read and dropped until its own close frame
    /// (or [`CLOSE_LINGER`]). Dropping a socket with data unread makes the
    /// kernel reset it, and a reset can overtake the close frame on its way:
    /// a viewer flooding the bridge would see the connection cut with no
    /// reason.
    async fn linger(&mut self) {
        let incoming = &mut self.incoming;
        let closed = async {
            while let Some(Ok(message)) = incoming.next().await {
                if matches!(message, Message::Close(_)) {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(CLOSE_LINGER, closed).await;
    }
}

/// A read error: a message over [`MAX_FRAME_BYTES`] is closed with 1009 and
/// a reason; anything else (a broken connection, a protocol violation) ends
/// the connection, with a reason when the socket still takes one.
fn read_failed(e: impl Display) -> Step {
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

/// Whether a viewer with `filter` wants `frame`.
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
    use crate::downstream::hub::{Hub, VIEWER_LAG};
    use std::pin::Pin;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::task::{Context, Poll};
    use tokio::sync::{Semaphore, mpsc};
    use tokio::task::JoinHandle;
    use watchlife_controlplane::Clock;
    use watchlife_protocol::{Source, WatchCacheReport};

    /// A sink that hands what the session writes to the test, stamped with
    /// the (paused) time it was written; while `stuck`, it takes nothing, as
    /// a viewer that stopped reading.
    struct ChannelSink {
        written: mpsc::UnboundedSender<(Instant, Message)>,
        stuck: Arc<AtomicBool>,
    }

    impl Sink<Message> for ChannelSink {
        type Error = std::convert::Infallible;

        fn poll_ready(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            if self.stuck.load(Ordering::SeqCst) {
                // Never woken: only the session's deadline ends the wait.
                Poll::Pending
            } else {
                Poll::Ready(Ok(()))
            }
        }

        fn start_send(self: Pin<&mut Self>, message: Message) -> Result<(), Self::Error> {
            let _ = self.written.send((Instant::now(), message));
            Ok(())
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }
    }

    /// The viewer's end of an in-memory connection, and the bridge's switch.
    struct Wire {
        written: mpsc::UnboundedReceiver<(Instant, Message)>,
        says: mpsc::UnboundedSender<Result<Message, axum::Error>>,
        stuck: Arc<AtomicBool>,
        shutdown: watch::Sender<bool>,
        session: JoinHandle<()>,
    }

    impl Wire {
        /// The next message the session wrote, and when.
        async fn next(&mut self) -> (Instant, Message) {
            self.written.recv().await.expect("the session wrote on")
        }

        /// The `type` of each frame of the next message, and when it came.
        async fn next_types(&mut self) -> (Instant, Vec<String>) {
            let (at, message) = self.next().await;
            (at, types(&message))
        }

        fn say(&self, text: &str) {
            let _ = self.says.send(Ok(Message::Text(text.into())));
        }
    }

    fn types(message: &Message) -> Vec<String> {
        let Message::Text(text) = message else {
            panic!("a text message, not {message:?}");
        };
        text.as_str()
            .split('\n')
            .map(|line| {
                let frame: serde_json::Value = serde_json::from_str(line).expect("a frame");
                frame["type"].as_str().expect("a type").to_string()
            })
            .collect()
    }

    fn close_code_of(message: &Message) -> u16 {
        match message {
            Message::Close(Some(frame)) => frame.code,
            other => panic!("a close frame, not {other:?}"),
        }
    }

    fn app() -> Arc<App> {
        Arc::new(App {
            hub: Hub::new("test-stream"),
            source: Source::InPage,
            resources: vec!["pods".into()],
            observed_stages: vec![],
            demo: None,
            clock: Clock::new(|| 0),
            kubeconfig: None,
            kubernetes: "1.36".into(),
            cluster_version: None,
        })
    }

    /// A frame about the whole source, which every filter passes.
    fn publish(app: &App) -> u64 {
        app.hub
            .publish(FrameBody::WatchCache(WatchCacheReport::default()))
    }

    /// A session over channels, attached to `app`'s hub at once.
    fn connect(app: &Arc<App>, batch: bool) -> Wire {
        let (written, written_rx) = mpsc::unbounded_channel();
        let (says, mut heard) = mpsc::unbounded_channel();
        let (shutdown, shutdown_rx) = watch::channel(false);
        let stuck = Arc::new(AtomicBool::new(false));
        let viewer = Viewer {
            app: app.clone(),
            since: None,
            foreign_cursor: false,
            batch,
            compress: false,
            patched: false,
            shutdown: shutdown_rx,
            permit: Arc::new(Semaphore::new(1)).try_acquire_owned().unwrap(),
        };
        let sink = ChannelSink {
            written,
            stuck: stuck.clone(),
        };
        let incoming = futures_util::stream::poll_fn(move |cx| heard.poll_recv(cx));
        let session = Session::open(viewer, sink, incoming);
        Wire {
            written: written_rx,
            says,
            stuck,
            shutdown,
            session: tokio::spawn(session.run()),
        }
    }

    /// Connects, and reads the opening (`hello` and the snapshot).
    async fn connected(app: &Arc<App>, batch: bool) -> (Wire, Instant) {
        let mut wire = connect(app, batch);
        let (at, mut opening) = wire.next_types().await;
        if opening.len() < 2 {
            opening.extend(wire.next_types().await.1);
        }
        assert_eq!(opening, ["hello", "snapshot"]);
        (wire, at)
    }

    #[test]
    fn frames_about_the_whole_source_pass_every_filter() {
        let frame = |resource: Option<&str>, namespace: Option<&str>| Published {
            lean: None,
            deflated: None,
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

    #[tokio::test(start_paused = true)]
    async fn a_heartbeat_and_a_ping_go_out_every_period() {
        let app = app();
        let (mut wire, start) = connected(&app, false).await;
        for beat in 1..=3 {
            let (at, frames) = wire.next_types().await;
            assert_eq!(frames, ["heartbeat"]);
            assert_eq!(at - start, HEARTBEAT * beat);
            let (_, ping) = wire.next().await;
            assert!(matches!(ping, Message::Ping(_)), "{ping:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_viewer_that_answers_nothing_is_closed_after_the_first_beat_past_dead_after() {
        let app = app();
        let (mut wire, start) = connected(&app, false).await;
        loop {
            let (at, message) = wire.next().await;
            if let Message::Close(_) = message {
                assert_eq!(close_code_of(&message), close_code::AWAY);
                // Silent for exactly DEAD_AFTER at the third beat is not yet
                // gone; at the fourth it is.
                assert_eq!(at - start, DEAD_AFTER + HEARTBEAT);
                break;
            }
        }
        // The viewer is given its close linger, then the session ends.
        let ended = Instant::now();
        (&mut wire.session).await.unwrap();
        assert_eq!(Instant::now() - ended, CLOSE_LINGER);
    }

    #[tokio::test(start_paused = true)]
    async fn a_viewer_that_answers_pongs_stays() {
        let app = app();
        let (mut wire, start) = connected(&app, false).await;
        while Instant::now() - start < DEAD_AFTER * 3 {
            let (_, message) = wire.next().await;
            assert!(
                !matches!(message, Message::Close(_)),
                "closed at {:?}",
                Instant::now() - start
            );
            if matches!(message, Message::Ping(_)) {
                let _ = wire.says.send(Ok(Message::Pong(Default::default())));
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_viewer_that_takes_batches_gets_one_write_per_interval() {
        let app = app();
        let (mut wire, _) = connected(&app, true).await;
        // After a quiet spell, a frame goes at once.
        let published = Instant::now();
        publish(&app);
        let (first, frames) = wire.next_types().await;
        assert_eq!((first, frames.len()), (published, 1));
        // Frames that come meanwhile wait for the interval, and go together.
        publish(&app);
        publish(&app);
        publish(&app);
        let (second, frames) = wire.next_types().await;
        assert_eq!(second - first, BATCH_INTERVAL);
        assert_eq!(frames, ["watch_cache"; 3]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_viewer_that_takes_no_batches_gets_a_message_per_frame_at_once() {
        let app = app();
        let (mut wire, start) = connected(&app, false).await;
        publish(&app);
        publish(&app);
        for _ in 0..2 {
            let (at, frames) = wire.next_types().await;
            assert_eq!((at, frames.len()), (start, 1));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn messages_are_answered_in_order() {
        let app = app();
        let (mut wire, _) = connected(&app, false).await;
        // A filter is taken silently; a bad message and a demo action (with
        // no demo to run it) are answered with errors.
        wire.say(r#"{"type":"subscribe","filter":{"resources":["pods"]}}"#);
        wire.say("not json");
        wire.say(r#"{"type":"action","action":{"kind":"scale","namespace":"default","name":"web","replicas":2}}"#);
        let _ = wire.says.send(Ok(Message::Binary(Default::default())));
        for code in ["malformed", "forbidden", "malformed"] {
            let (_, message) = wire.next().await;
            let Message::Text(text) = &message else {
                panic!("{message:?}")
            };
            let frame: serde_json::Value = serde_json::from_str(text).unwrap();
            assert_eq!(frame["type"], "error", "{frame}");
            assert_eq!(frame["data"]["code"], code, "{frame}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_flood_is_told_once_then_closed_for_policy() {
        let app = app();
        let (mut wire, _) = connected(&app, false).await;
        let subscribe = r#"{"type":"subscribe","filter":{}}"#;
        for _ in 0..(MESSAGE_BURST + FLOOD_LIMIT) as usize + 2 {
            wire.say(subscribe);
        }
        let (_, told) = wire.next().await;
        let Message::Text(text) = &told else {
            panic!("{told:?}")
        };
        assert!(text.contains("rate_limited"), "{text}");
        let (_, closed) = wire.next().await;
        assert_eq!(close_code_of(&closed), close_code::POLICY);
    }

    #[tokio::test(start_paused = true)]
    async fn a_viewer_that_falls_behind_gets_resync_and_a_snapshot_and_goes_on() {
        let app = app();
        let (mut wire, _) = connected(&app, false).await;
        // More than the live stream holds for a viewer, before it reads any.
        for _ in 0..VIEWER_LAG + 10 {
            publish(&app);
        }
        let (_, message) = wire.next().await;
        assert_eq!(types(&message), ["resync"]);
        let Message::Text(text) = &message else {
            unreachable!()
        };
        assert!(text.contains("you fell 10 frames behind"), "{text}");
        assert_eq!(wire.next_types().await.1, ["snapshot"]);
        // The frames the snapshot covers are not sent again.
        let seq = publish(&app);
        let (_, message) = wire.next().await;
        let Message::Text(text) = &message else {
            panic!("{message:?}")
        };
        let frame: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(frame["seq"], seq);
    }

    #[tokio::test(start_paused = true)]
    async fn a_viewer_that_stops_reading_is_dropped_after_dead_after() {
        let app = app();
        let (mut wire, _) = connected(&app, false).await;
        wire.stuck.store(true, Ordering::SeqCst);
        let published = Instant::now();
        publish(&app);
        (&mut wire.session).await.unwrap();
        assert_eq!(Instant::now() - published, DEAD_AFTER);
        assert!(wire.written.try_recv().is_err(), "nothing got through");
        assert!(app.hub.metrics().render().contains("send_stalled"));
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_closes_with_going_away() {
        let app = app();
        let (mut wire, _) = connected(&app, false).await;
        wire.shutdown.send(true).unwrap();
        let (_, closed) = wire.next().await;
        assert_eq!(close_code_of(&closed), close_code::AWAY);
        (&mut wire.session).await.unwrap();
    }
}
