//! How a viewer connects: the `/ws` query, and how frames share a message.

use serde::{Deserialize, Serialize};

/// Separates the frames of one message for a viewer that takes batches: a
/// frame's JSON never holds a raw newline.
pub const BATCH_SEPARATOR: char = '\n';

/// The query of `/ws`: where a returning viewer left off, its token, and
/// how it takes frames.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamQuery {
    /// Stream the viewer's cursor belongs to (from `hello`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
    /// Last stream `seq` the viewer saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<u64>,
    /// The bridge's `--token`, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// `true`: the viewer takes several frames to a message, separated by
    /// [`BATCH_SEPARATOR`] (see [`split_batch`]).
    #[serde(default)]
    pub batch: bool,
    /// `deflate`: the viewer takes its frames compressed, as binary
    /// messages framed as [`crate::deflated`] says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compress: Option<Compress>,
    /// `patch`: a MODIFIED event's body may come as a merge patch against
    /// the object's previous version (see [`crate::patch`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bodies: Option<BodiesAsked>,
}

/// How a viewer asks for the bodies of updates (`/ws?bodies=…`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BodiesAsked {
    /// As a merge patch against the previous version, when smaller.
    Patch,
}

/// How a viewer asks its frames compressed (`/ws?compress=…`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compress {
    /// Raw deflate streams, context kept across messages (see [`crate::deflated`]).
    Deflate,
}

impl StreamQuery {
    /// The query string, without its `?`:
    /// `batch=true&compress=deflate&bodies=patch&stream=…&since=…&token=…`.
    pub fn to_query(&self) -> String {
        let mut parts = Vec::new();
        if self.batch {
            parts.push("batch=true".to_string());
        }
        if let Some(Compress::Deflate) = self.compress {
            parts.push("compress=deflate".to_string());
        }
        if let Some(BodiesAsked::Patch) = self.bodies {
            parts.push("bodies=patch".to_string());
        }
        if let Some(stream) = &self.stream {
            parts.push(format!("stream={}", encode(stream)));
        }
        if let Some(since) = self.since {
            parts.push(format!("since={since}"));
        }
        if let Some(token) = self.token.as_deref().filter(|t| !t.is_empty()) {
            parts.push(format!("token={}", encode(token)));
        }
        parts.join("&")
    }
}

/// The frames of one message: one, or several separated by
/// [`BATCH_SEPARATOR`]. Blank parts are skipped.
pub fn split_batch(message: &str) -> impl Iterator<Item = &str> {
    message
        .split(BATCH_SEPARATOR)
        .filter(|frame| !frame.trim().is_empty())
}

/// How frames of `lengths` bytes go into messages of at most `max_bytes`
/// once joined: the ranges of frame indexes, in order. A frame longer than
/// `max_bytes` goes alone.
pub fn plan_batches(lengths: &[usize], max_bytes: usize) -> Vec<std::ops::Range<usize>> {
    let mut batches = Vec::new();
    let mut start = 0;
    let mut joined = 0;
    for (i, len) in lengths.iter().enumerate() {
        if i > start && joined + 1 + len > max_bytes {
            batches.push(start..i);
            start = i;
            joined = 0;
        }
        joined += usize::from(i > start) + len;
    }
    if start < lengths.len() {
        batches.push(start..lengths.len());
    }
    batches
}

/// Percent-encodes everything but unreserved characters and `/:`.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~/:".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_holds_what_is_set_encoded() {
        let q = StreamQuery {
            stream: Some("18a6".into()),
            since: Some(41),
            token: Some("a b+/=".into()),
            batch: true,
            compress: Some(Compress::Deflate),
            bodies: Some(BodiesAsked::Patch),
        };
        assert_eq!(
            q.to_query(),
            "batch=true&compress=deflate&bodies=patch&stream=18a6&since=41&token=a%20b%2B/%3D"
        );
        assert_eq!(StreamQuery::default().to_query(), "");
    }

    #[test]
    fn batches_keep_order_and_the_limit() {
        assert_eq!(plan_batches(&[], 10), vec![]);
        assert_eq!(plan_batches(&[3], 10), vec![0..1]);
        // 3 + 1 + 3 = 7 fits; + 1 + 3 = 11 does not.
        assert_eq!(plan_batches(&[3, 3, 3], 10), vec![0..2, 2..3]);
        // A frame longer than the limit goes alone.
        assert_eq!(plan_batches(&[2, 50, 2], 10), vec![0..1, 1..2, 2..3]);
    }

    #[test]
    fn a_message_splits_into_its_frames() {
        let frames: Vec<&str> = split_batch("{\"a\":1}\n{\"b\":2}\n").collect();
        assert_eq!(frames, vec!["{\"a\":1}", "{\"b\":2}"]);
    }
}
