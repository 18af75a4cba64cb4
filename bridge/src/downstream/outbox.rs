//! The sending half of a viewer's connection: frames joined into batches,
//! the pace of a viewer that takes batches, and the write deadline.
//!
//! A viewer that asks for batches (`/ws?batch=true`, what the browser app
//! does) gets several frames to a message, one per line, and while frames
//! keep coming at most one write every [`batch_interval`]:
//! [`BATCH_INTERVAL`], longer when so many viewers are connected that their
//! writes together would pass [`WRITES_PER_SECOND`].

use crate::downstream::compressed::{Compressed, Out};
use crate::downstream::liveness::DEAD_AFTER;
use crate::downstream::metrics::{Closed, Metrics};
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes};
use futures_util::{Sink, SinkExt};
use std::time::Duration;

/// Most frames written to a socket with one flush. Under load a viewer's
/// frames are written in batches, one system call for many frames; the batch
/// is small enough that its memory does not matter.
pub const MAX_BATCH: usize = 64;

/// Shortest time between two writes to a viewer that takes batches, while
/// frames keep coming: frames that arrive meanwhile wait and go together. A
/// frame after a quiet spell goes at once. One frame at 60 Hz: a page draws
/// at most once a frame, so more messages than frames show it nothing
/// sooner, and each message is a task of its own (the event, the
/// decompression's promises) whether it holds one frame or fifty. On a
/// phone a quarter of a desktop one cost about 3 ms; at 1,000 events/s,
/// 16 ms instead of 8 halved the messages and gave the page about 8 % more
/// frames (BENCHMARKS.md, the phone section).
pub const BATCH_INTERVAL: Duration = Duration::from_millis(16);

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
/// message's handling short. The WebSocket layer copies each message into a
/// buffer of the connection that keeps the largest size it held, so this
/// also bounds what a busy viewer keeps between writes. Smaller messages
/// kept less (16 KiB: 573 MiB against 913 MiB for 10,000 viewers at 100
/// writes/s) but tripled the writes, and the crowd's p99 went from 0.6 s to
/// 5 s on two cores.
pub const MAX_BATCH_BYTES: usize = 64 * 1024;

/// How long a close frame may take to go out: best effort, the viewer is
/// leaving anyway.
const CLOSE_WRITE: Duration = Duration::from_secs(1);

/// The sending half, with the write deadline and the frame counts.
pub struct Outbox<S> {
    sink: S,
    metrics: Metrics,
    /// Frames go out joined into messages (see [`batched`]).
    batch: bool,
    /// For a viewer that takes its frames compressed: its streams.
    compressed: Option<Compressed>,
    /// The viewer has a filter: its stream frames are not the hub's whole
    /// stream (see [`Compressed::messages`]).
    filtered: bool,
}

impl<S: Sink<Message> + Unpin> Outbox<S> {
    /// An outbox writing to `sink`; `compress`: as binary messages of
    /// compressed frames (`/ws?compress=deflate`).
    pub fn new(sink: S, metrics: Metrics, batch: bool, compress: bool) -> Self {
        Outbox {
            sink,
            metrics,
            batch,
            compressed: compress.then(Compressed::default),
            filtered: false,
        }
    }

    /// The viewer set a filter, or cleared it.
    pub fn set_filtered(&mut self, filtered: bool) {
        self.filtered = filtered;
    }

    /// Writes `frames` with one flush. `false` when the viewer is gone: the
    /// write failed, or did not complete within [`DEAD_AFTER`].
    pub async fn send(&mut self, frames: Vec<Out>) -> bool {
        self.write(frames, false).await
    }

    /// Like [`Outbox::send`], followed by a ping the viewer must answer.
    pub async fn send_with_ping(&mut self, text: Utf8Bytes) -> bool {
        self.write(vec![text.into()], true).await
    }

    /// `frames` as the messages that carry them, each made as it is
    /// written: a plain write holds one joined message at a time, not the
    /// whole write's.
    fn messages(&mut self, frames: Vec<Out>) -> Box<dyn Iterator<Item = Message> + Send> {
        if let Some(compressed) = &mut self.compressed {
            let messages = compressed.messages(frames, self.filtered, self.batch, MAX_BATCH_BYTES);
            return Box::new(messages.into_iter().map(Message::Binary));
        }
        let texts = frames.into_iter().map(|f| f.text);
        if self.batch {
            Box::new(batched(texts.collect()).map(Message::Text))
        } else {
            Box::new(texts.map(Message::Text))
        }
    }

    async fn write(&mut self, frames: Vec<Out>, ping: bool) -> bool {
        if frames.is_empty() && !ping {
            return true;
        }
        let count = frames.len() as u64;
        let messages = self.messages(frames);
        let (mut bytes, mut message_count) = (0u64, 0u64);
        let sink = &mut self.sink;
        let write = async {
            for message in messages {
                bytes += match &message {
                    Message::Text(t) => t.len(),
                    Message::Binary(b) => b.len(),
                    _ => 0,
                } as u64;
                message_count += 1;
                sink.feed(message).await?;
            }
            if ping {
                sink.feed(Message::Ping(Default::default())).await?;
            }
            sink.flush().await
        };
        match tokio::time::timeout(DEAD_AFTER, write).await {
            Ok(Ok(())) => {
                self.metrics.frames_sent(count, message_count, bytes);
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

    /// Sends a close frame with a reason (best effort: `CLOSE_WRITE` at most).
    pub async fn close(&mut self, code: u16, reason: &str) {
        let frame = CloseFrame {
            code,
            reason: reason.into(),
        };
        let _ =
            tokio::time::timeout(CLOSE_WRITE, self.sink.send(Message::Close(Some(frame)))).await;
    }
}

/// `texts` joined into as few messages as [`MAX_BATCH_BYTES`] allows, in
/// order, as the protocol's batches ([`watchlife_protocol::connection`]),
/// each joined when it is asked for; a lone frame (a snapshot, often) goes
/// as it is, not copied.
fn batched(texts: Vec<Utf8Bytes>) -> impl Iterator<Item = Utf8Bytes> + Send {
    use watchlife_protocol::connection::{BATCH_SEPARATOR, plan_batches};
    let lengths: Vec<usize> = texts.iter().map(|t| t.len()).collect();
    let plan = plan_batches(&lengths, MAX_BATCH_BYTES);
    let mut texts = texts.into_iter();
    plan.into_iter().map(move |batch| {
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(batched(vec![frame(1)]).collect::<Vec<_>>(), vec![frame(1)]);
        let joined: Vec<_> = batched((1..=3).map(frame).collect()).collect();
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
        let messages: Vec<_> = batched(texts.clone()).collect();
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
}
