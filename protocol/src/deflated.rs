//! Compressed streams (`/ws?compress=deflate`): how a message is framed.
//!
//! On a compressed connection every message from the bridge is binary: a
//! [`HEADER_BYTES`]-byte header (a [`Part`] byte, then the length of the
//! payload once decompressed, a little-endian `u32`), then the payload. A
//! payload decompressed is one or more frames, each followed by
//! [`crate::connection::BATCH_SEPARATOR`].
//!
//! The deflate streams are raw deflate (RFC 1951, no zlib or gzip wrapper),
//! as a browser's `DecompressionStream("deflate-raw")` reads them. Each
//! message ends on a sync flush, so everything it carries can be
//! decompressed on arrival, and the next message goes on in the same
//! context: what permessage-deflate does, with the context kept, framed by
//! watchlife because the WebSocket library in the bridge does not offer it.
//!
//! Viewers that take the stream whole share one compression of it, made once
//! by the bridge, in segments: a [`Part::Begins`] message starts a new
//! stream, and every [`Part::Continues`] goes on with the newest one. Frames
//! of a single connection (its `hello`, a snapshot, an answer, a heartbeat)
//! never enter that stream: they come [`Part::Plain`], or [`Part::Alone`]
//! as a deflate stream of their own.

/// Bytes before a message's payload: the part, and the decompressed length.
pub const HEADER_BYTES: usize = 5;

/// What a compressed connection's message carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// `P`: the frames as text, not compressed (small answers, heartbeats).
    Plain,
    /// `S`: a raw deflate stream of its own, sync-flushed, decompressed
    /// apart from the current stream, which it leaves as it was.
    Alone,
    /// `N`: the first message of a new deflate stream; the previous one is
    /// over.
    Begins,
    /// `C`: the next part of the current deflate stream.
    Continues,
}

impl Part {
    /// The header byte of this part.
    pub fn byte(self) -> u8 {
        match self {
            Part::Plain => b'P',
            Part::Alone => b'S',
            Part::Begins => b'N',
            Part::Continues => b'C',
        }
    }

    /// The part a header byte names.
    pub fn from_byte(byte: u8) -> Option<Part> {
        match byte {
            b'P' => Some(Part::Plain),
            b'S' => Some(Part::Alone),
            b'N' => Some(Part::Begins),
            b'C' => Some(Part::Continues),
            _ => None,
        }
    }
}

/// A message's header: `part`, and `len` bytes once decompressed.
pub fn header(part: Part, len: u32) -> [u8; HEADER_BYTES] {
    let [a, b, c, d] = len.to_le_bytes();
    [part.byte(), a, b, c, d]
}

/// A message read apart: its part, its decompressed length, its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message<'a> {
    pub part: Part,
    pub len: usize,
    pub payload: &'a [u8],
}

/// Reads a compressed connection's message; an error says what is wrong.
pub fn read(message: &[u8]) -> Result<Message<'_>, String> {
    let Some((head, payload)) = message.split_first_chunk::<HEADER_BYTES>() else {
        return Err(format!(
            "a compressed message of {} bytes is shorter than its {HEADER_BYTES}-byte header",
            message.len()
        ));
    };
    let part = Part::from_byte(head[0])
        .ok_or_else(|| format!("a compressed message of unknown part {:#04x}", head[0]))?;
    let len = u32::from_le_bytes([head[1], head[2], head[3], head[4]]) as usize;
    if part == Part::Plain && len != payload.len() {
        return Err(format!(
            "a plain message says {len} bytes and carries {}",
            payload.len()
        ));
    }
    Ok(Message { part, len, payload })
}

/// Reads a compressed connection's messages as a page does: the Rust
/// reference of what a client must do, for tests and tools (feature
/// `inflate`; the browser app uses the platform's `DecompressionStream`).
#[cfg(feature = "inflate")]
#[derive(Default)]
pub struct Reader {
    /// The current deflate stream, once one has begun.
    current: Option<flate2::Decompress>,
}

#[cfg(feature = "inflate")]
impl Reader {
    /// The text one message carries: its frames, each followed by a
    /// newline (split them with [`crate::connection::split_batch`]).
    pub fn read(&mut self, message: &[u8]) -> Result<String, String> {
        let message = read(message)?;
        let bytes = match message.part {
            Part::Plain => message.payload.to_vec(),
            Part::Alone => inflate(&mut flate2::Decompress::new(false), &message)?,
            Part::Begins => {
                let stream = self.current.insert(flate2::Decompress::new(false));
                inflate(stream, &message)?
            }
            Part::Continues => {
                let stream = self
                    .current
                    .as_mut()
                    .ok_or("a message continues a stream that never began")?;
                inflate(stream, &message)?
            }
        };
        String::from_utf8(bytes).map_err(|e| format!("a compressed message is not text: {e}"))
    }
}

/// `message`'s payload decompressed by `stream`: exactly its length.
#[cfg(feature = "inflate")]
fn inflate(stream: &mut flate2::Decompress, message: &Message<'_>) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(message.len);
    let start = stream.total_in();
    loop {
        let taken = (stream.total_in() - start) as usize;
        let before = out.len();
        stream
            .decompress_vec(
                &message.payload[taken..],
                &mut out,
                flate2::FlushDecompress::Sync,
            )
            .map_err(|e| format!("a compressed message does not decompress: {e}"))?;
        let taken = (stream.total_in() - start) as usize;
        if out.len() > message.len {
            return Err(format!(
                "a message says {} bytes and holds more",
                message.len
            ));
        }
        if taken == message.payload.len() && out.len() == message.len {
            return Ok(out);
        }
        if out.len() == before && taken == message.payload.len() {
            return Err(format!(
                "a message says {} bytes and holds {}",
                message.len,
                out.len()
            ));
        }
        if out.len() == out.capacity() {
            out.reserve(message.len - out.len() + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_reads_back_as_written() {
        for part in [Part::Plain, Part::Alone, Part::Begins, Part::Continues] {
            let mut message = header(part, 3).to_vec();
            message.extend_from_slice(b"abc");
            assert_eq!(
                read(&message),
                Ok(Message {
                    part,
                    len: 3,
                    payload: b"abc"
                })
            );
        }
    }

    #[test]
    fn a_bad_header_is_told_not_read() {
        assert!(read(b"N12").unwrap_err().contains("shorter than"));
        assert!(read(b"X\0\0\0\0").unwrap_err().contains("unknown part"));
        let mut plain = header(Part::Plain, 9).to_vec();
        plain.extend_from_slice(b"abc");
        assert!(read(&plain).unwrap_err().contains("says 9 bytes"));
    }
}
