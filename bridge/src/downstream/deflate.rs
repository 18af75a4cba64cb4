//! The hub's stream compressed once for every viewer that takes it whole
//! (`/ws?compress=deflate`), in segments a joining viewer can start from.
//!
//! Each frame is compressed as it is published, in the context of the
//! frames before it in its segment, and sync-flushed: its bytes are the
//! same for every viewer, so compression costs one deflate per frame
//! whatever the number of viewers. A segment ends after
//! [`SEGMENT_FRAMES`] frames or [`SEGMENT_AGE`]; a viewer that joined in
//! the middle of one gets its frames uncompressed until the next begins
//! (see [`crate::downstream::compressed`]).

use axum::body::Bytes;
use flate2::{Compress, Compression, FlushCompress};
use std::time::{Duration, Instant};

/// Frames in a segment. A new segment forgets what came before, which
/// costs its first few frames some ratio (a deflate window holds some 20
/// frames of 1.7 KB); a viewer joining waits for the next one with its
/// frames uncompressed. 256 frames is a second at the busiest the page
/// follows and costs under 2 % of the ratio.
pub const SEGMENT_FRAMES: usize = 256;

/// Longest a segment lasts, so that a quiet stream still lets joining
/// viewers in: the demo's story makes some 20 frames a second.
pub const SEGMENT_AGE: Duration = Duration::from_secs(5);

/// The compression level: JSON frames gain little past 6, and each frame is
/// compressed once however many viewers share it.
pub const LEVEL: u32 = 6;

/// One frame's share of the hub's compressed stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deflated {
    /// The segment it belongs to: the `seq` of the segment's first frame.
    pub segment: u64,
    /// The `seq` of the frame before it in the segment; 0 for the first.
    pub after: u64,
    /// The frame's own `seq`.
    pub seq: u64,
    /// The frame's text and a newline, compressed and sync-flushed.
    pub bytes: Bytes,
    /// The frame's text and newline, in bytes, before compression.
    pub len: u32,
}

/// The hub's compressor (held under the hub's lock).
pub struct SharedDeflate {
    compress: Compress,
    /// The segment being written, when one is.
    segment: Option<Segment>,
}

struct Segment {
    first: u64,
    last: u64,
    frames: usize,
    started: Instant,
}

impl Default for SharedDeflate {
    fn default() -> Self {
        SharedDeflate {
            compress: raw_deflate(),
            segment: None,
        }
    }
}

impl SharedDeflate {
    /// Frame `seq`'s bytes in the shared stream (a new segment starts when
    /// the last is full, old, or was stopped). `None` only if the
    /// compressor failed, which it does not on memory it owns.
    pub fn push(&mut self, seq: u64, text: &str, now: Instant) -> Option<Deflated> {
        let ongoing = self
            .segment
            .as_ref()
            .filter(|s| s.frames < SEGMENT_FRAMES && now.duration_since(s.started) < SEGMENT_AGE);
        let after = match ongoing {
            Some(segment) => segment.last,
            None => {
                self.compress.reset();
                self.segment = Some(Segment {
                    first: seq,
                    last: 0,
                    frames: 0,
                    started: now,
                });
                0
            }
        };
        let mut bytes = Vec::with_capacity(text.len() / 4 + 64);
        if deflate_into(&mut self.compress, &[text.as_bytes(), b"\n"], &mut bytes).is_err() {
            self.segment = None;
            return None;
        }
        let segment = self.segment.as_mut()?;
        segment.last = seq;
        segment.frames += 1;
        Some(Deflated {
            segment: segment.first,
            after,
            seq,
            bytes: bytes.into(),
            len: u32::try_from(text.len() + 1).ok()?,
        })
    }

    /// No viewer takes the shared stream: the next frame starts a segment.
    pub fn stop(&mut self) {
        self.segment = None;
    }
}

/// A raw deflate compressor (no zlib header), as `deflate-raw` reads.
pub fn raw_deflate() -> Compress {
    Compress::new(Compression::new(LEVEL), false)
}

/// Compresses `parts`, one after the other, onto `out`, ending on a sync
/// flush: everything written so far can be decompressed, and the stream
/// goes on in the same context.
pub fn deflate_into(
    compress: &mut Compress,
    parts: &[&[u8]],
    out: &mut Vec<u8>,
) -> Result<(), flate2::CompressError> {
    for (i, part) in parts.iter().enumerate() {
        let flush = if i + 1 == parts.len() {
            FlushCompress::Sync
        } else {
            FlushCompress::None
        };
        let start = compress.total_in();
        loop {
            let taken = (compress.total_in() - start) as usize;
            if out.capacity() - out.len() < 64 {
                out.reserve((part.len() - taken) / 2 + 64);
            }
            compress.compress_vec(&part[taken..], out, flush)?;
            let taken = (compress.total_in() - start) as usize;
            // Done when all of it went in and the output did not fill up
            // (a full output may hold back the flush's last bytes).
            if taken == part.len() && out.len() < out.capacity() {
                break;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::{Decompress, FlushDecompress};

    /// What `bytes`, fed to `inflate` after what it was fed before, decompress to.
    pub fn inflate(inflate: &mut Decompress, bytes: &[u8]) -> String {
        let mut out = Vec::with_capacity(bytes.len() * 20 + 64);
        let start = inflate.total_in();
        while ((inflate.total_in() - start) as usize) < bytes.len() {
            let taken = (inflate.total_in() - start) as usize;
            out.reserve(bytes.len() * 4 + 64);
            inflate
                .decompress_vec(&bytes[taken..], &mut out, FlushDecompress::Sync)
                .unwrap();
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn each_frame_decompresses_on_arrival_in_the_context_of_its_segment() {
        let mut shared = SharedDeflate::default();
        let now = Instant::now();
        let mut viewer = Decompress::new(false);
        let frame = |n: u64| format!("{{\"seq\":{n},\"data\":\"{}\"}}", "x".repeat(500));
        let mut total = 0;
        for seq in 1..=20 {
            let d = shared.push(seq, &frame(seq), now).unwrap();
            assert_eq!((d.segment, d.after), (1, seq - 1));
            assert_eq!(inflate(&mut viewer, &d.bytes), frame(seq) + "\n");
            assert_eq!(d.len as usize, frame(seq).len() + 1);
            total += d.bytes.len();
        }
        // The context is kept: twenty alike frames take far less than one each.
        assert!(total < frame(1).len() * 2, "{total} bytes");
    }

    #[test]
    fn a_segment_ends_when_full_old_or_stopped_and_the_next_starts_afresh() {
        let mut shared = SharedDeflate::default();
        let start = Instant::now();
        for seq in 1..=SEGMENT_FRAMES as u64 {
            assert_eq!(shared.push(seq, "{}", start).unwrap().segment, 1);
        }
        let next = SEGMENT_FRAMES as u64 + 1;
        let d = shared.push(next, "{\"a\":1}", start).unwrap();
        assert_eq!((d.segment, d.after), (next, 0));
        // A viewer starting there needs nothing from before.
        let mut fresh = Decompress::new(false);
        assert_eq!(inflate(&mut fresh, &d.bytes), "{\"a\":1}\n");

        let later = start + SEGMENT_AGE;
        assert_eq!(
            shared.push(next + 1, "{}", later).unwrap().segment,
            next + 1
        );
        shared.stop();
        assert_eq!(
            shared.push(next + 2, "{}", later).unwrap().segment,
            next + 2
        );
    }

    #[test]
    fn parts_larger_than_the_output_room_are_compressed_whole() {
        let mut compress = raw_deflate();
        let text: String = (0..200_000u32)
            .map(|i| char::from(b'a' + (i * 7 % 26) as u8))
            .collect();
        let mut out = Vec::new();
        deflate_into(&mut compress, &[text.as_bytes(), b"\n"], &mut out).unwrap();
        assert_eq!(inflate(&mut Decompress::new(false), &out), text + "\n");
    }
}
