//! Recordings: a bridge's frame stream saved as JSON Lines, to replay with no
//! bridge (a docs page, a talk without Wi-Fi).
//!
//! Line 1 is a [`RecordingHeader`]. Every later line is a [`RecordedFrame`]: a
//! [`ServerFrame`] exactly as the bridge sends it, with one more field,
//! `t_ms`, the time the recorder received it, in milliseconds since the
//! recording started. Snapshots in a recording carry every object's body:
//! a replay has no bridge to fetch them from.
//!
//! Format 1 held protocol-1 frames; they are read through [`crate::v1`]. A recording starts with the bridge's `hello` and a
//! `snapshot` (empty when recording began before the first LIST), then the
//! stream frames in order.
//!
//! [`parse_recording`] reads a file leniently: a malformed line is skipped
//! and named, a truncated last line is named, and everything readable plays.

use crate::frame::{ServerFrame, Source};
use crate::{Micros, PROTOCOL_VERSION};
use serde::{Deserialize, Serialize};

/// Version of the recording format written by this build. A reader meeting a
/// newer one says so and plays what it can read.
pub const RECORDING_FORMAT: u32 = 2;

/// The last protocol whose frames [`crate::v1`] reads.
const PROTOCOL_V1: u32 = 1;

/// Most problems [`parse_recording`] lists one by one; beyond it, a count.
pub const MAX_PROBLEMS: usize = 20;

/// The first line of a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordingHeader {
    /// Format version ([`RECORDING_FORMAT`]); its presence is also how a
    /// reader recognises a recording.
    pub watchlife_recording: u32,
    /// [`PROTOCOL_VERSION`] of the frames.
    pub protocol: u32,
    /// Where the frames came from.
    pub source: Source,
    /// Resources that were list-watched.
    pub resources: Vec<String>,
    /// When the recording started.
    pub started_at: Micros,
    /// What was recorded, for people: a scenario's name, or empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub title: String,
}

/// One frame of a recording. Read by [`parse_recording`], which parses the
/// line as a [`ServerFrame`] and its `t_ms` apart: deriving `Deserialize`
/// through `flatten` would buffer every frame, objects included.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordedFrame {
    /// Milliseconds since the recording started, never decreasing.
    pub t_ms: u64,
    #[serde(flatten)]
    pub frame: ServerFrame,
}

/// The time of a recorded frame, read on its own.
#[derive(Deserialize)]
struct FrameTime {
    t_ms: u64,
}

/// A problem with one line of a recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineProblem {
    /// 1-based line number.
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for LineProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// A recording as read: what plays, and what could not be read.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    pub header: RecordingHeader,
    /// The readable frames, in file order, with `t_ms` made non-decreasing.
    pub frames: Vec<RecordedFrame>,
    /// At most [`MAX_PROBLEMS`] problems, in line order.
    pub problems: Vec<LineProblem>,
    /// Problems beyond those listed.
    pub more_problems: usize,
}

impl Recording {
    /// Length in ms: the time of the last frame.
    pub fn duration_ms(&self) -> u64 {
        self.frames.last().map_or(0, |f| f.t_ms)
    }

    fn problem(&mut self, line: usize, message: String) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(LineProblem { line, message });
        } else {
            self.more_problems += 1;
        }
    }
}

/// The header line for a recording.
pub fn header_line(header: &RecordingHeader) -> String {
    serde_json::to_string(header).expect("a header is plain data")
}

/// The line of a recorded frame: the frame's JSON object as sent, with
/// `t_ms` spliced in first, so a frame already encoded is not encoded again.
pub fn frame_line(t_ms: u64, frame_json: &str) -> String {
    let fields = frame_json.strip_prefix('{').unwrap_or(frame_json);
    format!("{{\"t_ms\":{t_ms},{fields}")
}

/// Reads a recording. Fails only when there is nothing to play: an empty
/// text, or a first line that is not a recording header. Everything else
/// (a malformed frame, a truncated last line, a newer format or protocol) is
/// listed in [`Recording::problems`] and the readable frames are kept.
pub fn parse_recording(text: &str) -> Result<Recording, LineProblem> {
    let mut lines = text.split('\n').enumerate().map(|(i, l)| (i + 1, l));
    let (first, header_text) = lines
        .by_ref()
        .find(|(_, l)| !l.trim().is_empty())
        .ok_or_else(|| LineProblem {
            line: 1,
            message: "the file is empty: a recording starts with a header line".into(),
        })?;
    let header = read_header(header_text).map_err(|message| LineProblem {
        line: first,
        message,
    })?;
    let mut recording = Recording {
        header,
        frames: Vec::new(),
        problems: Vec::new(),
        more_problems: 0,
    };
    if recording.header.watchlife_recording > RECORDING_FORMAT {
        let newer = recording.header.watchlife_recording;
        recording.problem(
            first,
            format!("the recording format is {newer}, newer than this page reads ({RECORDING_FORMAT}): playing what it can read"),
        );
    }
    if recording.header.protocol > PROTOCOL_VERSION {
        let newer = recording.header.protocol;
        recording.problem(
            first,
            format!("the frames are protocol {newer}, newer than this page speaks ({PROTOCOL_VERSION}): playing what it can read"),
        );
    }
    let ends_cleanly = text.ends_with('\n');
    let lines: Vec<(usize, &str)> = lines.filter(|(_, l)| !l.trim().is_empty()).collect();
    let last = lines.last().map(|(n, _)| *n);
    let mut t_ms = 0;
    let v1 = recording.header.protocol <= PROTOCOL_V1;
    for (n, line) in lines {
        let read = serde_json::from_str::<FrameTime>(line).and_then(|t| {
            let frame = if v1 {
                crate::v1::frame_from_v1(line).map_err(serde::de::Error::custom)?
            } else {
                serde_json::from_str::<ServerFrame>(line)?
            };
            Ok((t.t_ms, frame))
        });
        match read {
            Ok((t, frame)) => {
                t_ms = t.max(t_ms);
                recording.frames.push(RecordedFrame { t_ms, frame });
            }
            Err(e) if Some(n) == last && !ends_cleanly && e.is_eof() => recording.problem(
                n,
                "cut short: the recording was truncated here; it plays up to the line before"
                    .into(),
            ),
            Err(e) => recording.problem(n, format!("not a frame ({e}); skipped")),
        }
    }
    Ok(recording)
}

/// Reads the header line, or says why it is not one.
fn read_header(text: &str) -> Result<RecordingHeader, String> {
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| format!("not a watchlife recording: the first line is not JSON ({e})"))?;
    if value.get("watchlife_recording").is_none() {
        return Err(
            "not a watchlife recording: the first line has no \"watchlife_recording\" field".into(),
        );
    }
    serde_json::from_value(value).map_err(|e| format!("the header line cannot be read ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{FrameBody, Heartbeat};

    fn header(format: u32) -> String {
        header_line(&RecordingHeader {
            watchlife_recording: format,
            protocol: PROTOCOL_VERSION,
            source: Source::Demo {
                api: "http://127.0.0.1:8081".into(),
            },
            resources: vec!["pods".into()],
            started_at: 1,
            title: "test".into(),
        })
    }

    fn frame(t_ms: u64, seq: u64) -> String {
        serde_json::to_string(&RecordedFrame {
            t_ms,
            frame: ServerFrame {
                seq,
                body: FrameBody::Heartbeat(Heartbeat {
                    at: seq,
                    watches_open: None,
                }),
            },
        })
        .unwrap()
    }

    #[test]
    fn a_frame_line_is_a_server_frame_with_its_time() {
        let line = frame(12, 3);
        assert_eq!(
            line,
            r#"{"t_ms":12,"seq":3,"type":"heartbeat","data":{"at":3}}"#
        );
        let back: ServerFrame = serde_json::from_str(&line).unwrap();
        assert_eq!(back.seq, 3);
    }

    #[test]
    fn a_clean_recording_reads_whole() {
        let text = format!("{}\n{}\n{}\n", header(1), frame(0, 1), frame(5, 2));
        let r = parse_recording(&text).unwrap();
        assert_eq!(r.frames.len(), 2);
        assert!(r.problems.is_empty());
        assert_eq!(r.duration_ms(), 5);
    }

    #[test]
    fn a_malformed_line_is_named_and_skipped() {
        let text = format!(
            "{}\n{}\n{{\"t_ms\":1}}\n{}\n",
            header(1),
            frame(0, 1),
            frame(5, 2)
        );
        let r = parse_recording(&text).unwrap();
        assert_eq!(r.frames.len(), 2);
        assert_eq!(r.problems.len(), 1);
        assert_eq!(r.problems[0].line, 3);
        assert!(
            r.problems[0].message.contains("skipped"),
            "{}",
            r.problems[0]
        );
    }

    #[test]
    fn a_truncated_last_line_is_told_and_the_rest_plays() {
        let full = format!("{}\n{}\n{}", header(1), frame(0, 1), frame(5, 2));
        let text = &full[..full.len() - 6];
        let r = parse_recording(text).unwrap();
        assert_eq!(r.frames.len(), 1);
        assert_eq!(r.problems[0].line, 3);
        assert!(r.problems[0].message.contains("truncated"));
    }

    #[test]
    fn a_newer_format_is_told_and_played() {
        let text = format!("{}\n{}\n", header(RECORDING_FORMAT + 1), frame(0, 1));
        let r = parse_recording(&text).unwrap();
        assert_eq!(r.frames.len(), 1);
        assert!(r.problems[0].message.contains("newer"));
    }

    #[test]
    fn a_format_1_recording_plays_through_the_converter() {
        let text = concat!(
            r#"{"watchlife_recording":1,"protocol":1,"source":{"kind":"in_page"},"resources":["pods"],"started_at":1}"#,
            "\n",
            r#"{"t_ms":0,"seq":0,"type":"snapshot","objects":[{"resource":"pods","kind":"Pod","namespace":"d","name":"p","resource_version":"4","object":{"kind":"Pod"}}],"reflectors":[]}"#,
            "\n",
            r#"{"t_ms":5,"seq":1,"type":"event","event":"DELETED","resource":"pods","kind":"Pod","namespace":"d","name":"p","resource_version":"6","object":{"kind":"Pod"},"stages":{}}"#,
            "\n"
        );
        let r = parse_recording(text).unwrap();
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        assert_eq!(r.frames.len(), 2);
        let FrameBody::Event(e) = &r.frames[1].frame.body else {
            panic!("not an event")
        };
        assert_eq!(e.target.key(), "d/p");
        assert_eq!(r.duration_ms(), 5);
    }

    #[test]
    fn time_never_goes_backwards() {
        let text = format!("{}\n{}\n{}\n", header(1), frame(9, 1), frame(4, 2));
        let r = parse_recording(&text).unwrap();
        assert_eq!(r.frames[1].t_ms, 9);
    }

    #[test]
    fn what_is_not_a_recording_fails_at_line_one() {
        assert_eq!(parse_recording("").unwrap_err().line, 1);
        let e = parse_recording("hello\n").unwrap_err();
        assert!(e.message.contains("not a watchlife recording"), "{e}");
        let e = parse_recording("{\"a\":1}\n").unwrap_err();
        assert!(e.message.contains("watchlife_recording"), "{e}");
    }

    #[test]
    fn problems_beyond_the_limit_are_counted() {
        let mut text = header(1) + "\n";
        for _ in 0..MAX_PROBLEMS + 3 {
            text.push_str("nonsense\n");
        }
        let r = parse_recording(&text).unwrap();
        assert_eq!(r.problems.len(), MAX_PROBLEMS);
        assert_eq!(r.more_problems, 3);
    }
}
