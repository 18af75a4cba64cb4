//! One viewer of the fan-out: a WebSocket client that reads every frame and
//! records a sample of the delivery times into histograms every viewer
//! shares.

use crate::machine::now_micros;
use crate::stats::Histogram;
use futures_util::StreamExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use watchlife_protocol::connection::split_batch;
use watchlife_protocol::deflated::Reader;

/// What every viewer task shares.
pub struct Shared {
    /// 0 when not recording; else the step's index + 1.
    pub recording: AtomicUsize,
    pub reflector: Vec<Histogram>,
    pub hub: Vec<Histogram>,
    pub informer: Vec<Histogram>,
    pub events: AtomicU64,
    pub resyncs: AtomicU64,
    pub failures: AtomicU64,
    /// One viewer in this many reads its frames (see [`DECODE_EVERY`]); the
    /// others take every byte and leave it.
    decode_every: usize,
    /// Viewers connected so far, and those of them that read their frames.
    joined: AtomicUsize,
    readers: AtomicUsize,
}

/// One compressed viewer in this many decompresses and reads its frames.
/// Ten thousand viewers at 100 events a second are 1.7 GB/s of frames to
/// inflate, more than the bench's share of two cores: reading them all, the
/// bench measured itself. Every viewer still takes every byte the bridge
/// writes, so the bridge's work is the same; the counts and delivery times
/// come from the readers, a uniform sample by order of joining.
pub const DECODE_EVERY: usize = 16;

impl Shared {
    /// Counts for `steps` steps; `decode_every`: 1, or [`DECODE_EVERY`] for
    /// compressed viewers.
    pub fn new(steps: usize, decode_every: usize) -> Shared {
        Shared {
            decode_every: decode_every.max(1),
            joined: AtomicUsize::new(0),
            readers: AtomicUsize::new(0),
            recording: AtomicUsize::new(0),
            reflector: (0..steps).map(|_| Histogram::new()).collect(),
            hub: (0..steps).map(|_| Histogram::new()).collect(),
            informer: (0..steps).map(|_| Histogram::new()).collect(),
            events: AtomicU64::new(0),
            resyncs: AtomicU64::new(0),
            failures: AtomicU64::new(0),
        }
    }

    /// The viewers that read their frames: the counts are theirs.
    pub fn readers(&self) -> usize {
        self.readers.load(Ordering::Relaxed).max(1)
    }
}

/// One viewer: connects, then reads until aborted.
pub async fn view(url: String, shared: Arc<Shared>, permit: tokio::sync::OwnedSemaphorePermit) {
    let socket =
        tokio_tungstenite::connect_async_with_config(&url, Some(viewer_config()), true).await;
    drop(permit);
    let Ok((mut ws, _)) = socket else {
        shared.failures.fetch_add(1, Ordering::Relaxed);
        return;
    };
    if !shared
        .joined
        .fetch_add(1, Ordering::Relaxed)
        .is_multiple_of(shared.decode_every)
    {
        while let Some(message) = ws.next().await {
            if message.is_err() {
                shared.failures.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
        return;
    }
    shared.readers.fetch_add(1, Ordering::Relaxed);
    let mut tally = Tally::default();
    // A viewer that asked for compressed frames reads them as a page does.
    let mut inflate = Reader::default();
    while let Some(message) = ws.next().await {
        let inflated;
        let text = match &message {
            // Not copied: the viewers share the cores of the bridge they measure.
            Ok(Message::Text(text)) => text.as_str(),
            Ok(Message::Binary(bytes)) => match inflate.read(bytes) {
                Ok(text) => {
                    inflated = text;
                    inflated.as_str()
                }
                Err(_) => {
                    shared.failures.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            },
            Ok(_) => continue,
            Err(_) => {
                shared.failures.fetch_add(1, Ordering::Relaxed);
                return;
            }
        };
        let now = now_micros();
        let before = tally;
        for frame in split_batch(text) {
            tally.read(frame, now, &shared);
        }
        tally.publish(before, &shared);
    }
}

/// A viewer's WebSocket settings: reads in chunks of [`READ_CHUNK`].
pub fn viewer_config() -> WebSocketConfig {
    WebSocketConfig::default().read_buffer_size(READ_CHUNK)
}

/// Bytes a viewer's socket reads at a time. tungstenite zeroes its read
/// buffer's free room before each read, and its default (128 KiB) made that
/// a tenth of the viewers' CPU; a batch message is at most 64 KiB.
const READ_CHUNK: usize = 16 * 1024;

/// Every how many events a viewer records the delivery times of one. The
/// crowd reads a million frames a second on the cores the bridge runs on;
/// a histogram shared by every viewer is a cache line both cores fight
/// over, so each viewer records a uniform sample (its every eighth event),
/// which leaves the percentiles as they are.
pub const SAMPLE_EVERY: u64 = 8;

/// What one viewer has read: its counts go to [`Shared`] once per message,
/// not once per frame, for the same reason as [`SAMPLE_EVERY`].
#[derive(Default, Clone, Copy)]
struct Tally {
    events: u64,
    resyncs: u64,
}

impl Tally {
    /// Counts one frame read at `now`, recording the delivery times of a
    /// sample of the events.
    fn read(&mut self, text: &str, now: u64, shared: &Shared) {
        match frame_type(text) {
            Some("event") => {
                // Only events that passed the informer (not BOOKMARKs).
                let Some(reconciled) = stage_at(text, Stamp::Reconcile) else {
                    return;
                };
                self.events += 1;
                let step = shared.recording.load(Ordering::Relaxed);
                if step > 0 && self.events.is_multiple_of(SAMPLE_EVERY) {
                    shared.hub[step - 1].record(now.saturating_sub(reconciled));
                    if let Some(at) = stage_at(text, Stamp::Reflector) {
                        shared.reflector[step - 1].record(now.saturating_sub(at));
                        shared.informer[step - 1].record(reconciled.saturating_sub(at));
                    }
                }
            }
            Some("resync") => self.resyncs += 1,
            _ => {}
        }
    }

    /// Adds what was read since `before` to the shared counts.
    fn publish(&self, before: Tally, shared: &Shared) {
        if self.events > before.events {
            shared
                .events
                .fetch_add(self.events - before.events, Ordering::Relaxed);
        }
        if self.resyncs > before.resyncs {
            shared
                .resyncs
                .fetch_add(self.resyncs - before.resyncs, Ordering::Relaxed);
        }
    }
}

/// The `type` of a frame as the bridge writes it: `{"seq":N,"type":"…"`.
fn frame_type(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("{\"seq\":")?;
    let rest = &rest[rest.find(",\"type\":\"")? + 9..];
    Some(&rest[..rest.find('"')?])
}

/// The stages a viewer reads the times of.
#[derive(Clone, Copy)]
enum Stamp {
    Reflector,
    Reconcile,
}

/// The viewers run on the same cores as the bridge they measure, so they
/// find stage times with a searcher built once, from the frame's end (the
/// stages follow the object's body, whose text may hold anything): reading
/// a frame must cost far less than writing it, or the bench measures itself.
static STAGES: std::sync::LazyLock<memchr::memmem::FinderRev<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::FinderRev::new("\"stages\":{\"t0\":"));

/// The time of a stage in an event frame: its stages' `t0` plus the stage's
/// offset (`"reflector":208` or `"reflector":[208,1]`, see
/// `watchlife_protocol::lean_stages`).
fn stage_at(frame: &str, stamp: Stamp) -> Option<u64> {
    let bytes = frame.as_bytes();
    let start = STAGES.rfind(bytes)? + STAGES.needle().len();
    let (t0, rest) = leading_number(&bytes[start..])?;
    // The lean map's values hold no braces: it ends at the first one.
    let map = &rest[..rest.iter().position(|c| *c == b'}')?];
    let key: &[u8] = match stamp {
        Stamp::Reflector => b"\"reflector\":",
        Stamp::Reconcile => b"\"reconcile\":",
    };
    let value = &map[memchr::memmem::find(map, key)? + key.len()..];
    let value = value.strip_prefix(b"[").unwrap_or(value);
    let (negative, value) = match value.strip_prefix(b"-") {
        Some(v) => (true, v),
        None => (false, value),
    };
    let (offset, _) = leading_number(value)?;
    let offset = i64::try_from(offset).ok()?;
    t0.checked_add_signed(if negative { -offset } else { offset })
}

/// The digits `text` starts with, as a number, and what follows them.
fn leading_number(text: &[u8]) -> Option<(u64, &[u8])> {
    let digits = text
        .iter()
        .position(|c| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let number = std::str::from_utf8(&text[..digits]).ok()?.parse().ok()?;
    Some((number, &text[digits..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_type_and_stage_times_without_parsing() {
        let frame = r#"{"seq":42,"type":"event","data":{"event":"MODIFIED","object":{"a":1},"stages":{"t0":1795338904500000,"etcd":0,"reflector":210,"reconcile":[-20,1]}}}"#;
        let batch = format!("{frame}\n{{\"seq\":43,\"type\":\"resync\",\"data\":{{}}}}\n");
        let types: Vec<_> = split_batch(&batch).map(frame_type).collect();
        assert_eq!(types, vec![Some("event"), Some("resync")]);
        assert_eq!(stage_at(frame, Stamp::Reflector), Some(1795338904500210));
        assert_eq!(stage_at(frame, Stamp::Reconcile), Some(1795338904499980));
        let bookmark = r#"{"seq":3,"type":"event","data":{"event":"BOOKMARK","stages":{"t0":5,"reflector":0}}}"#;
        assert_eq!(stage_at(bookmark, Stamp::Reconcile), None);
        // A body that holds the same text does not fool it: the stages come last.
        let odd = r#"{"seq":4,"type":"event","data":{"object":{"stages":{"t0":1,"reconcile":1}},"stages":{"t0":9,"reconcile":0},"handled":{"reconcile":{"worker":0}}}}"#;
        assert_eq!(stage_at(odd, Stamp::Reconcile), Some(9));
    }
}
