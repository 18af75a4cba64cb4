//! `watchlife record`: the frame stream a viewer would receive, written to a
//! file (see [`watchlife_protocol::recording`]) instead of served.
//!
//! The recorder joins the hub before the first LIST, so a recording holds
//! the whole life of the list-watch: the LIST's ADDED events, every later
//! event, the Reflector's states and, on the demo, the watch caches. It reads
//! the hub as a viewer does: what leaves the bridge for a viewer (Secrets
//! redacted, managed fields dropped) is exactly what is recorded. A scenario
//! is recorded with the client settings it needs over the user's flags
//! ([`crate::cli::Args::apply`]).

use crate::app::App;
use crate::cli::{Args, RecordArgs};
use crate::downstream::frame_text::encode;
use crate::downstream::hub::{Attached, Bodies, Hub};
use crate::record_marks::{self, Marks};
use crate::{RunError, shutdown_signal};
use flate2::write::GzEncoder;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};
use tokio::sync::broadcast::error::RecvError;
use watchlife_controlplane::Clock;
use watchlife_protocol::recording::{frame_line, header_line};
use watchlife_protocol::{
    FrameBody, Micros, PROTOCOL_VERSION, RECORDING_FORMAT, RecordingHeader, Resync, ServerFrame,
};

/// Why a recording failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("cannot write the recording {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the scenario failed: {0}")]
    Scenario(String),
}

/// The recording's header, then `hello` and the (empty) snapshot, at 0 ms.
fn write_opening(
    file: &mut Recorder,
    record: &RecordArgs,
    app: &App,
    attached: &Attached,
    started_at: Micros,
) -> Result<(), RecordError> {
    let title = record
        .title
        .clone()
        .or_else(|| record.scenario.map(|s| s.name().to_string()))
        .unwrap_or_default();
    file.line(&header_line(&RecordingHeader {
        watchlife_recording: RECORDING_FORMAT,
        protocol: PROTOCOL_VERSION,
        source: app.source.clone(),
        resources: app.resources.clone(),
        started_at,
        title,
    }))?;
    file.frame(
        0,
        &encode(&ServerFrame {
            seq: attached.cursor,
            body: FrameBody::Hello(app.hello()),
        }),
    )?;
    if let crate::downstream::hub::Join::Snapshot(text) = &attached.join {
        file.frame(0, text)?;
    }
    Ok(())
}

/// As for a viewer that fell `missed` frames behind: `resync`, then the
/// objects, at `t` ms.
fn write_resync(file: &mut Recorder, hub: &Hub, missed: u64, t: u64) -> Result<(), RecordError> {
    let (seq, snapshot) = hub.snapshot(Bodies::Full);
    let resync = encode(&ServerFrame {
        seq,
        body: FrameBody::Resync(Resync {
            reason: format!("the recorder fell {missed} frames behind"),
        }),
    });
    file.frame(t, &resync)?;
    file.frame(t, &snapshot)?;
    Ok(())
}

/// Records until Ctrl-C, `--duration`, or the end of `--scenario`.
pub async fn run(args: &Args, record: &RecordArgs) -> Result<(), RunError> {
    let args = recording_args(args, record)?;
    let clock = Clock::system();
    let hub = Hub::new(crate::downstream::hub::stream_id(clock.now()));
    // Joined before anything is published: the snapshot is empty and every
    // frame after it is received.
    let mut attached = hub.attach(None, Bodies::Full);
    let mut file = Recorder::create(&record.out, record.gzipped())?;
    let app = crate::start_on(&args, hub.clone(), clock.clone()).await?;
    let started = Instant::now();
    write_opening(&mut file, record, &app, &attached, clock.now())?;

    let scenario = async {
        match (record.scenario, &app.demo) {
            (Some(s), Some(cp)) => s.play(cp).await.map_err(|e| e.to_string()),
            _ => std::future::pending().await,
        }
    };
    let duration = async {
        match record.stop_after() {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(scenario, duration);
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    let mut frames = 0u64;
    let mut marks = Marks::default();
    let mut typed = record
        .marker
        .then(|| BufReader::new(tokio::io::stdin()).lines());
    if typed.is_some() {
        eprintln!("recording: type a label and press Enter to mark a moment");
    }
    let outcome = loop {
        tokio::select! {
            received = attached.live.recv() => match received {
                Ok(p) => {
                    file.frame(elapsed_ms(started), &p.text)?;
                    frames += 1;
                }
                Err(RecvError::Lagged(missed)) => {
                    write_resync(&mut file, &hub, missed, elapsed_ms(started))?;
                    attached.live = attached.live.resubscribe();
                }
                Err(RecvError::Closed) => break Ok(()),
            },
            line = next_line(&mut typed) => match line {
                Some(label) => marks.mark(elapsed_ms(started), &label),
                // Standard input closed: the recording goes on, unmarked.
                None => typed = None,
            },
            done = &mut scenario => break done.map_err(RecordError::Scenario),
            _ = &mut duration => break Ok(()),
            _ = &mut shutdown => break Ok(()),
        }
    };
    // Frames already published when the recording ended are kept.
    while let Ok(p) = attached.live.try_recv() {
        file.frame(elapsed_ms(started), &p.text)?;
        frames += 1;
    }
    file.finish()?;
    if record.marker {
        write_marks(record, &marks)?;
    }
    outcome?;
    eprintln!(
        "recorded {frames} frames in {:.1} s to {}",
        started.elapsed().as_secs_f64(),
        record.out.display()
    );
    Ok(())
}

/// The bridge's flags for a recording: with a scenario, a demo of its own
/// that plays nothing but the story, and the Reflector settings the story
/// needs over the user's (the Hello then names the profile with them).
fn recording_args(args: &Args, record: &RecordArgs) -> Result<Args, RunError> {
    let mut args = args.clone();
    if let Some(scenario) = record.scenario {
        args.demo = true;
        args.demo_idle = true;
        args.demo_api = ([127, 0, 0, 1], 0).into();
        args.apply(scenario.client_settings())?;
    }
    Ok(args)
}

/// Writes the markers typed while recording beside the recording.
fn write_marks(record: &RecordArgs, marks: &Marks) -> Result<(), RecordError> {
    let path = record_marks::beside(&record.out);
    std::fs::write(&path, marks.text()).map_err(|source| RecordError::Write {
        path: path.clone(),
        source,
    })?;
    eprintln!("{} markers to {}", marks.len(), path.display());
    Ok(())
}

/// The next line typed, or `None` once standard input is closed (or was
/// never asked for: then this never resolves).
async fn next_line(typed: &mut Option<Lines<BufReader<Stdin>>>) -> Option<String> {
    match typed {
        Some(lines) => lines.next_line().await.ok().flatten(),
        None => std::future::pending().await,
    }
}

fn elapsed_ms(started: Instant) -> u64 {
    started.elapsed().as_millis() as u64
}

/// The file being written, plain or gzipped.
struct Recorder {
    path: PathBuf,
    out: Sink,
}

enum Sink {
    Plain(BufWriter<File>),
    Gzip(GzEncoder<BufWriter<File>>),
}

impl Recorder {
    fn create(path: &Path, gzip: bool) -> Result<Recorder, RecordError> {
        let file = File::create(path).map_err(|source| RecordError::Write {
            path: path.to_path_buf(),
            source,
        })?;
        let file = BufWriter::new(file);
        Ok(Recorder {
            path: path.to_path_buf(),
            out: if gzip {
                Sink::Gzip(GzEncoder::new(file, flate2::Compression::best()))
            } else {
                Sink::Plain(file)
            },
        })
    }

    fn writer(&mut self) -> &mut dyn Write {
        match &mut self.out {
            Sink::Plain(w) => w,
            Sink::Gzip(w) => w,
        }
    }

    fn line(&mut self, text: &str) -> Result<(), RecordError> {
        let w = self.writer();
        let written = w
            .write_all(text.as_bytes())
            .and_then(|()| w.write_all(b"\n"));
        written.map_err(|e| self.error(e))
    }

    /// Writes an encoded frame as a recorded one: the frame's own JSON
    /// object with `t_ms` first (spliced, so the frame is not encoded twice).
    fn frame(&mut self, t_ms: u64, encoded: &str) -> Result<(), RecordError> {
        self.line(&frame_line(t_ms, encoded))
    }

    fn finish(self) -> Result<(), RecordError> {
        let path = self.path;
        let flushed = match self.out {
            Sink::Plain(mut w) => w.flush(),
            Sink::Gzip(w) => w.finish().and_then(|mut w| w.flush()),
        };
        flushed.map_err(|source| RecordError::Write { path, source })
    }

    fn error(&self, source: std::io::Error) -> RecordError {
        RecordError::Write {
            path: self.path.clone(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use watchlife_protocol::{Heartbeat, parse_recording};

    #[test]
    fn a_spliced_frame_reads_back_as_a_recorded_frame() {
        let dir = std::env::temp_dir().join(format!("watchlife-record-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.jsonl");
        let mut r = Recorder::create(&path, false).unwrap();
        r.line(&header_line(&RecordingHeader {
            watchlife_recording: RECORDING_FORMAT,
            protocol: PROTOCOL_VERSION,
            source: watchlife_protocol::Source::Demo { api: "x".into() },
            resources: vec![],
            started_at: 0,
            title: String::new(),
        }))
        .unwrap();
        let frame = ServerFrame {
            seq: 4,
            body: FrameBody::Heartbeat(Heartbeat {
                at: 9,
                watches_open: None,
            }),
        };
        r.frame(17, &encode(&frame)).unwrap();
        r.finish().unwrap();
        let recording = parse_recording(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert!(recording.problems.is_empty(), "{:?}", recording.problems);
        assert_eq!(recording.frames[0].t_ms, 17);
        assert_eq!(recording.frames[0].frame, frame);
        let _ = std::fs::remove_dir_all(dir);
    }
}
