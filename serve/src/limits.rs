//! The bounds every connection is held to, whatever the client does.

use std::time::Duration;

/// How long a client has to send a whole request head (request line and
/// headers). A head is a few hundred bytes, which a phone on a poor link
/// sends in well under a second; ten seconds leave a loaded network room
/// while a silent or trickling connection is gone quickly (nginx waits 60 s,
/// a figure from the days of dial-up).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a connection of the bridge may go on speaking plain HTTP before
/// it is asked to close: a page, its script and its wasm load in seconds even
/// on a slow link, and a WebSocket handshake is one request.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// Connections not yet upgraded at once. Each costs a file descriptor and at
/// most [`MAX_BUFFER_BYTES`] of buffers, so 2,048 cost at most 128 MiB while
/// leaving room for an audience that arrives all at once (a thousand phones
/// scanning the same QR code).
pub const MAX_PENDING: usize = 2048;

/// Largest request head: nginx's default (four buffers of 8 KiB). A browser
/// sends about 1 KiB; the bridge and the demo API use no cookies, though a
/// browser may send those of other servers on the same host.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

/// Largest buffer hyper keeps per connection for reading and writing.
pub const MAX_BUFFER_BYTES: usize = 64 * 1024;

/// How long a write may make no progress before the connection is dropped: a
/// client that stops reading (a stalled LIST or watch) cannot hold its
/// connection, and its place under the cap, for ever. A minute: a client that
/// is merely slow drains a socket buffer in far less.
pub const WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(60);

/// How long connections get to finish after shutdown is asked for.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// The bounds of one server's connections.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Time to receive a whole request head, counted from the first attempt
    /// to read it: from the accept on a new connection, from the end of the
    /// previous response on a kept-alive one. It is therefore also the idle
    /// time allowed before the first request and between two requests
    /// (hyper's `header_read_timeout`).
    pub header_read: Duration,
    /// A connection still speaking plain HTTP (not upgraded) this long after
    /// it was accepted is asked to close (the response in flight may finish,
    /// no other request is read); as long again and it is dropped. `None` for
    /// a server whose plain requests may last (the demo API's watches).
    pub handshake: Option<Duration>,
    /// Most connections not yet upgraded at once. Beyond it a new connection
    /// is answered with the server's refusal and closed.
    pub max_pending: usize,
    /// Largest request head; a larger one is answered 431.
    pub max_header_bytes: usize,
    /// Largest read or write buffer of one connection.
    pub max_buffer_bytes: usize,
    /// A write that makes no progress for this long fails, and with it the
    /// connection.
    pub write_stall: Duration,
    /// After shutdown is asked for, how long connections not yet upgraded get
    /// to finish before they are dropped.
    pub shutdown_grace: Duration,
}

impl Default for Limits {
    /// The bounds above, with no handshake limit.
    fn default() -> Self {
        Limits {
            header_read: HEADER_READ_TIMEOUT,
            handshake: None,
            max_pending: MAX_PENDING,
            max_header_bytes: MAX_HEADER_BYTES,
            max_buffer_bytes: MAX_BUFFER_BYTES,
            write_stall: WRITE_STALL_TIMEOUT,
            shutdown_grace: SHUTDOWN_GRACE,
        }
    }
}

impl Limits {
    /// [`Limits::max_pending`] lowered, when needed, to a quarter of the
    /// open-files limit `open_files`: connections refused with an answer
    /// leave descriptors for everything else (viewers, the upstream, files)
    /// rather than make the process fail to accept at all.
    pub fn within_open_files(mut self, open_files: Option<u64>) -> Self {
        if let Some(limit) = open_files {
            let share = usize::try_from(limit / 4).unwrap_or(usize::MAX).max(1);
            self.max_pending = self.max_pending.min(share);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pending_cap_leaves_most_descriptors_to_the_rest() {
        let limits = Limits::default();
        assert_eq!(limits.clone().within_open_files(Some(512)).max_pending, 128);
        assert_eq!(
            limits.clone().within_open_files(Some(1 << 20)).max_pending,
            MAX_PENDING
        );
        assert_eq!(limits.within_open_files(None).max_pending, MAX_PENDING);
    }
}
