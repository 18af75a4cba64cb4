//! One compressed connection (`/ws?compress=deflate`): which deflate stream
//! each frame goes in, and the binary messages that carry them (framed as
//! [`watchlife_protocol::deflated`] says).
//!
//! - A stream frame goes in the hub's shared stream when the viewer's
//!   current stream is that segment and holds every frame before it, or
//!   when the frame begins a segment: its bytes are copied, not compressed
//!   again.
//! - Otherwise a viewer with a filter, whose frames are never the whole
//!   stream, has its own compressor; a viewer without one (joined in the
//!   middle of a segment, resuming, resynced) gets the frame uncompressed
//!   until the next segment begins, a few seconds at most. A compressor
//!   holds some 300 KB, which ten thousand viewers joining at once must not
//!   each take.
//! - Frames of this connection alone (`hello`, snapshots, answers,
//!   heartbeats) never enter a stream: plain, or compressed on their own
//!   when large.

use crate::downstream::deflate::{Deflated, deflate_into, raw_deflate};
use crate::downstream::hub::Published;
use axum::body::Bytes;
use axum::extract::ws::Utf8Bytes;
use flate2::Compress;
use watchlife_protocol::deflated::{HEADER_BYTES, Part, header};

/// A frame of this connection alone goes compressed on its own from this
/// size: a snapshot, say. Below it the header and a fresh dictionary cost
/// more than they save.
pub const ALONE_FROM_BYTES: usize = 2048;

/// One frame to write.
#[derive(Debug, Clone)]
pub struct Out {
    pub text: Utf8Bytes,
    /// Its bytes in the hub's shared stream, for a stream frame compressed there.
    pub shared: Option<Deflated>,
    /// A frame of the hub's stream (not one of this connection alone).
    pub stream: bool,
}

impl From<Utf8Bytes> for Out {
    /// A frame of this connection alone.
    fn from(text: Utf8Bytes) -> Self {
        Out {
            text,
            shared: None,
            stream: false,
        }
    }
}

impl Out {
    /// A stream frame for a viewer; `patched`: one that takes updates'
    /// bodies as merge patches. The hub's compressed stream is of the
    /// patched frames, so a frame whose lean form differs has no shared
    /// bytes for a viewer that takes it whole: that viewer takes it, and
    /// the rest of the segment, uncompressed (the hub makes lean frames
    /// only while a viewer takes them, so this is a page of another
    /// version beside this one's).
    pub fn published(p: Published, patched: bool) -> Self {
        let (text, shared) = match p.lean {
            Some(lean) if patched => (lean, p.deflated),
            Some(_) => (p.text, None),
            None => (p.text, p.deflated),
        };
        Out {
            text,
            shared,
            stream: true,
        }
    }
}

/// The deflate stream a viewer's page reads now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Current {
    None,
    /// The hub's segment that began at `segment`, through frame `last`.
    Shared {
        segment: u64,
        last: u64,
    },
    /// This connection's own.
    Own,
}

/// Where one frame goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Shared,
    Own,
    /// Plain, or on its own when large.
    Loose,
}

/// A compressed connection's state.
pub struct Compressed {
    /// The page's current stream, as it will be once what was routed is read.
    current: Current,
    /// Made when a frame first needs it (a viewer with a filter).
    own: Option<Compress>,
}

impl Default for Compressed {
    fn default() -> Self {
        Compressed {
            current: Current::None,
            own: None,
        }
    }
}

impl Compressed {
    /// The messages that carry `frames` in order, each holding at most
    /// `max_bytes` of frames (one frame larger goes alone); `batch: false`
    /// makes a message of every frame. `filtered`: the viewer has a filter.
    pub fn messages(
        &mut self,
        frames: Vec<Out>,
        filtered: bool,
        batch: bool,
        max_bytes: usize,
    ) -> Vec<Bytes> {
        let mut messages = Vec::new();
        let mut run: Vec<Out> = Vec::new();
        let (mut run_route, mut run_begins, mut run_bytes) = (Route::Loose, false, 0);
        for frame in frames {
            let (route, begins) = self.route(&frame, filtered);
            let len = frame.text.len() + 1;
            let joins = batch && route == run_route && !begins && run_bytes + len <= max_bytes;
            if !run.is_empty() && !joins {
                let done = std::mem::take(&mut run);
                messages.push(self.message(run_route, run_begins, done));
            }
            if run.is_empty() {
                (run_route, run_begins, run_bytes) = (route, begins, 0);
            }
            run_bytes += len;
            run.push(frame);
        }
        if !run.is_empty() {
            messages.push(self.message(run_route, run_begins, run));
        }
        messages
    }

    /// Where `frame` goes, and whether it begins a stream there; moves the
    /// page's current stream on.
    fn route(&mut self, frame: &Out, filtered: bool) -> (Route, bool) {
        if !frame.stream {
            return (Route::Loose, false);
        }
        if let Some(d) = &frame.shared {
            let goes_on = self.current
                == Current::Shared {
                    segment: d.segment,
                    last: d.after,
                };
            if goes_on || d.after == 0 {
                self.current = Current::Shared {
                    segment: d.segment,
                    last: d.seq,
                };
                return (Route::Shared, !goes_on);
            }
        }
        if filtered {
            let begins = self.current != Current::Own;
            self.current = Current::Own;
            return (Route::Own, begins);
        }
        (Route::Loose, false)
    }

    /// One message of a run of frames that share a route.
    fn message(&mut self, route: Route, begins: bool, run: Vec<Out>) -> Bytes {
        let len: usize = run.iter().map(|f| f.text.len() + 1).sum();
        let part = if begins {
            Part::Begins
        } else {
            Part::Continues
        };
        match route {
            Route::Shared => {
                let mut message = with_header(part, len, len / 4);
                for frame in &run {
                    if let Some(d) = &frame.shared {
                        message.extend_from_slice(&d.bytes);
                    }
                }
                message.into()
            }
            Route::Own => {
                let own = self.own.get_or_insert_with(raw_deflate);
                if begins {
                    own.reset();
                }
                compressed(own, part, &run, len).unwrap_or_else(|| {
                    // The page's stream cannot go on after a failed write.
                    self.current = Current::None;
                    plain(&run, len)
                })
            }
            Route::Loose if len >= ALONE_FROM_BYTES => {
                compressed(&mut raw_deflate(), Part::Alone, &run, len)
                    .unwrap_or_else(|| plain(&run, len))
            }
            Route::Loose => plain(&run, len),
        }
    }
}

fn with_header(part: Part, len: usize, payload: usize) -> Vec<u8> {
    let mut message = Vec::with_capacity(HEADER_BYTES + payload + 16);
    message.extend_from_slice(&header(part, u32::try_from(len).unwrap_or(u32::MAX)));
    message
}

/// `run` compressed with `compress` (sync-flushed), as a message of `part`.
fn compressed(compress: &mut Compress, part: Part, run: &[Out], len: usize) -> Option<Bytes> {
    let mut message = with_header(part, len, len / 4);
    let mut parts: Vec<&[u8]> = Vec::with_capacity(run.len() * 2);
    for frame in run {
        parts.push(frame.text.as_bytes());
        parts.push(b"\n");
    }
    deflate_into(compress, &parts, &mut message).ok()?;
    Some(message.into())
}

/// `run` as text, each frame followed by a newline.
fn plain(run: &[Out], len: usize) -> Bytes {
    let mut message = with_header(Part::Plain, len, len);
    for frame in run {
        message.extend_from_slice(frame.text.as_bytes());
        message.push(b'\n');
    }
    message.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::downstream::deflate::SharedDeflate;
    use std::time::Instant;
    use watchlife_protocol::deflated::{Reader, read};

    /// Stream frame `seq`, compressed by `shared` as the hub does.
    fn stream_frame(shared: &mut SharedDeflate, seq: u64) -> Out {
        let text = format!(
            "{{\"seq\":{seq},\"type\":\"event\",\"data\":\"{}\"}}",
            "pod ".repeat(60)
        );
        Out {
            shared: shared.push(seq, &text, Instant::now()),
            text: text.into(),
            stream: true,
        }
    }

    fn own_frame(text: &str) -> Out {
        Utf8Bytes::from(text.to_string()).into()
    }

    /// What a page reads of `messages`, and the parts they came in.
    fn page_reads(reader: &mut Reader, messages: &[Bytes]) -> (String, Vec<Part>) {
        let text = messages.iter().map(|m| reader.read(m).unwrap()).collect();
        let parts = messages.iter().map(|m| read(m).unwrap().part).collect();
        (text, parts)
    }

    fn expected(frames: &[Out]) -> String {
        frames.iter().map(|f| format!("{}\n", f.text)).collect()
    }

    const MAX: usize = 64 * 1024;

    #[test]
    fn viewers_of_the_whole_stream_share_its_bytes_and_read_every_frame() {
        let mut shared = SharedDeflate::default();
        let frames: Vec<Out> = (1..=10).map(|seq| stream_frame(&mut shared, seq)).collect();
        let (mut a, mut b) = (Compressed::default(), Compressed::default());
        let to_a = a.messages(frames.clone(), false, true, MAX);
        let to_b = b.messages(frames.clone(), false, true, MAX);
        assert_eq!(to_a, to_b, "the same bytes for both");
        let (text, parts) = page_reads(&mut Reader::default(), &to_a);
        assert_eq!(text, expected(&frames));
        assert_eq!(parts, [Part::Begins]);
        let raw: usize = frames.iter().map(|f| f.text.len()).sum();
        assert!(to_a[0].len() * 5 < raw, "{} of {raw} bytes", to_a[0].len());

        // The next write goes on in the same stream.
        let more: Vec<Out> = (11..=12)
            .map(|seq| stream_frame(&mut shared, seq))
            .collect();
        let mut reader = Reader::default();
        page_reads(&mut reader, &to_a);
        let (text, parts) = page_reads(&mut reader, &a.messages(more.clone(), false, true, MAX));
        assert_eq!((text, parts), (expected(&more), vec![Part::Continues]));
    }

    #[test]
    fn frames_of_the_connection_alone_leave_the_shared_stream_as_it_was() {
        let mut shared = SharedDeflate::default();
        let snapshot = own_frame(&format!(
            "{{\"type\":\"snapshot\",\"data\":\"{}\"}}",
            "x".repeat(5000)
        ));
        let beat = own_frame("{\"type\":\"heartbeat\"}");
        let frames = vec![
            stream_frame(&mut shared, 1),
            beat.clone(),
            stream_frame(&mut shared, 2),
            snapshot.clone(),
            stream_frame(&mut shared, 3),
        ];
        let messages = Compressed::default().messages(frames.clone(), false, true, MAX);
        let (text, parts) = page_reads(&mut Reader::default(), &messages);
        assert_eq!(text, expected(&frames));
        assert_eq!(
            parts,
            [
                Part::Begins,
                Part::Plain,
                Part::Continues,
                Part::Alone,
                Part::Continues
            ]
        );
    }

    #[test]
    fn a_viewer_joining_mid_segment_reads_plain_frames_until_the_next_begins() {
        let mut shared = SharedDeflate::default();
        let before: Vec<Out> = (1..=3).map(|seq| stream_frame(&mut shared, seq)).collect();
        let mut late = Compressed::default();
        let mut frames: Vec<Out> = (4..=6).map(|seq| stream_frame(&mut shared, seq)).collect();
        shared.stop();
        frames.extend((7..=8).map(|seq| stream_frame(&mut shared, seq)));
        let messages = late.messages(frames.clone(), false, true, MAX);
        let (text, parts) = page_reads(&mut Reader::default(), &messages);
        assert_eq!(text, expected(&frames));
        assert_eq!(parts, [Part::Plain, Part::Begins]);
        // The frames of the new segment are the bytes everyone got.
        let from_start = Compressed::default().messages(before, false, true, MAX);
        assert_eq!(read(&from_start[0]).unwrap().part, Part::Begins);
    }

    #[test]
    fn a_gap_in_the_stream_is_never_read_across() {
        let mut shared = SharedDeflate::default();
        let mut viewer = Compressed::default();
        let mut reader = Reader::default();
        let first: Vec<Out> = (1..=2).map(|seq| stream_frame(&mut shared, seq)).collect();
        page_reads(&mut reader, &viewer.messages(first, false, true, MAX));
        // Frame 3 never reached this viewer (it fell behind and was resynced).
        stream_frame(&mut shared, 3);
        let after: Vec<Out> = (4..=5).map(|seq| stream_frame(&mut shared, seq)).collect();
        let (text, parts) = page_reads(
            &mut reader,
            &viewer.messages(after.clone(), false, true, MAX),
        );
        assert_eq!((text, parts), (expected(&after), vec![Part::Plain]));
    }

    #[test]
    fn a_viewer_with_a_filter_reads_its_own_stream() {
        let mut shared = SharedDeflate::default();
        let all: Vec<Out> = (1..=9).map(|seq| stream_frame(&mut shared, seq)).collect();
        let wanted: Vec<Out> = all.iter().skip(1).step_by(2).cloned().collect();
        let mut viewer = Compressed::default();
        let mut reader = Reader::default();
        let (text, parts) = page_reads(
            &mut reader,
            &viewer.messages(wanted[..2].to_vec(), true, true, MAX),
        );
        assert_eq!((text, parts), (expected(&wanted[..2]), vec![Part::Begins]));
        let (text, parts) = page_reads(
            &mut reader,
            &viewer.messages(wanted[2..].to_vec(), true, true, MAX),
        );
        assert_eq!(
            (text, parts),
            (expected(&wanted[2..]), vec![Part::Continues])
        );
    }

    #[test]
    fn messages_keep_to_their_size_and_one_per_frame_without_batches() {
        let mut shared = SharedDeflate::default();
        let frames: Vec<Out> = (1..=10).map(|seq| stream_frame(&mut shared, seq)).collect();
        let one_frame = frames[0].text.len() + 1;
        let messages = Compressed::default().messages(frames.clone(), false, true, one_frame * 3);
        let (text, parts) = page_reads(&mut Reader::default(), &messages);
        assert_eq!(text, expected(&frames));
        assert_eq!(parts.len(), 4);
        assert!(
            messages
                .iter()
                .all(|m| read(m).unwrap().len <= one_frame * 3)
        );
        let unbatched = Compressed::default().messages(frames.clone(), false, false, MAX);
        assert_eq!(unbatched.len(), 10);
        assert_eq!(
            page_reads(&mut Reader::default(), &unbatched).0,
            expected(&frames)
        );
    }
}
