//! Bytes on the wire per frame: the demo's story as a page receives it
//! uncompressed (`/ws?batch=true`) and as the page takes it, compressed
//! with updates as merge patches (`&compress=deflate&bodies=patch`),
//! the two viewers side by side on one bridge, over the same seconds.

use crate::process::{Watchlife, connect_whole};
use crate::report::{Report, Section, Table};
use crate::scenario::Scenario;
use crate::stats::{Spread, bytes, count};
use futures_util::StreamExt;
use std::path::PathBuf;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;
use watchlife_protocol::connection::split_batch;
use watchlife_protocol::deflated::Reader;

/// The section's sizes.
pub struct Config {
    pub runs: usize,
    pub watchlife: PathBuf,
    /// How long each run's viewers are counted.
    pub seconds: u64,
}

/// One viewer's count in one run: frames, and the bytes they came in.
#[derive(Default, Clone, Copy)]
pub struct Counted {
    frames: usize,
    bytes: usize,
}

impl Counted {
    pub fn per_frame(self) -> f64 {
        self.bytes as f64 / self.frames.max(1) as f64
    }
}

/// Every run's figures.
#[derive(Default)]
pub struct Gathered {
    frames_per_second: Spread,
    plain_per_frame: Spread,
    compressed_per_frame: Spread,
    compressed_share: Spread,
    failure: Option<String>,
}

impl Scenario for Config {
    type Figures = Gathered;

    fn measure(&self) -> Gathered {
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        let mut gathered = Gathered::default();
        for run in 0..self.runs {
            progress!("wire: run {} of {}", run + 1, self.runs);
            match runtime.block_on(self.count()) {
                Ok((plain, compressed)) => {
                    gathered
                        .frames_per_second
                        .push(plain.frames as f64 / self.seconds as f64);
                    gathered.plain_per_frame.push(plain.per_frame());
                    gathered.compressed_per_frame.push(compressed.per_frame());
                    gathered
                        .compressed_share
                        .push(compressed.per_frame() / plain.per_frame());
                }
                Err(e) => {
                    gathered.failure = Some(e);
                    break;
                }
            }
        }
        gathered
    }

    fn report(&self, g: Gathered, report: &mut Report, seconds: f64) {
        report.headline(
            "wire: bytes per frame of the demo's story, compressed ÷ uncompressed",
            g.compressed_share.show(tenths),
        );
        let mut table = Table::new("", &["viewer", "bytes per frame", "share"]);
        table.row(vec![
            "`/ws?batch=true` (uncompressed)".into(),
            g.plain_per_frame.show(bytes),
            tenths(1.0),
        ]);
        table.row(vec![
            "`/ws?batch=true&compress=deflate&bodies=patch` (the page's)".into(),
            g.compressed_per_frame.show(bytes),
            g.compressed_share.show(tenths),
        ]);
        let mut notes = vec![format!(
            "Frames a second in the story: {}. A viewer that joins in the middle of one \
             of the hub's compressed segments (at most 256 frames or 5 s) takes that \
             segment's frames uncompressed; both viewers here joined at the start of a \
             run, so the first segment counts against the compressed one.",
            g.frames_per_second.show(count_rate)
        )];
        notes.extend(crate::scenario::stopped_early(g.failure.as_deref()));
        report.sections.push(Section {
            title: "Bytes on the wire".into(),
            method: format!(
                "The embedded demo's story (`--demo --demo-rate 1`), with two viewers \
                 connected at once, each counting the bytes of the messages it receives \
                 for {} s after its snapshot: one as the page was before compression, one \
                 as the page is (compressed, and updates' bodies as merge patches against \
                 the version before). Every frame of both is read (the compressed one \
                 decompressed as a page does); both receive the same events, the page's with \
                 patches where they are shorter. {} runs.",
                self.seconds, self.runs
            ),
            tables: vec![table],
            notes,
            summary: vec![format!(
                "wire: {} per frame uncompressed, {} compressed",
                g.plain_per_frame.show(bytes),
                g.compressed_per_frame.show(bytes)
            )],
            seconds,
        });
    }
}

impl Config {
    /// One run: a demo bridge, the two viewers, their counts (uncompressed,
    /// compressed).
    async fn count(&self) -> Result<(Counted, Counted), String> {
        let bridge = Watchlife::start_demo(&self.watchlife, "1", &[])?;
        let plain = format!("{}?batch=true", bridge.ws_url());
        let compressed = bridge.page_ws_url();
        let window = Duration::from_secs(self.seconds);
        let (plain, compressed) = tokio::join!(
            count_frames(&plain, window),
            count_frames(&compressed, window)
        );
        Ok((plain?, compressed?))
    }
}

/// Frames and bytes a viewer of `url` receives in `window` after its
/// snapshot.
async fn count_frames(url: &str, window: Duration) -> Result<Counted, String> {
    WireViewer::join(url).await?.count(window).await
}

/// A viewer that counts the bytes it is sent: plain text messages, or
/// compressed binary ones (decompressed as a page does, to count frames).
pub struct WireViewer {
    ws: crate::process::Socket,
    reader: Reader,
}

impl WireViewer {
    /// Connects to `url` and reads until its snapshot: the snapshot is each
    /// viewer's own, so counting starts after it.
    pub async fn join(url: &str) -> Result<WireViewer, String> {
        let ws = connect_whole(url)
            .await
            .map_err(|e| format!("connect to {url}: {e}"))?;
        let mut viewer = WireViewer {
            ws,
            reader: Reader::default(),
        };
        loop {
            if let Some((text, _)) = viewer.next().await?
                && text.contains("\"type\":\"snapshot\"")
            {
                return Ok(viewer);
            }
        }
    }

    /// The frames and bytes received during `window`.
    pub async fn count(mut self, window: Duration) -> Result<Counted, String> {
        let mut counted = Counted::default();
        let deadline = tokio::time::sleep(window);
        tokio::pin!(deadline);
        loop {
            let next = tokio::select! {
                _ = &mut deadline => return Ok(counted),
                next = self.next() => next?,
            };
            if let Some((text, size)) = next {
                counted.frames += split_batch(&text).count();
                counted.bytes += size;
            }
        }
    }

    /// The next message's text and its size on the wire (`None` for a
    /// ping or another message without frames).
    async fn next(&mut self) -> Result<Option<(String, usize)>, String> {
        let message = self
            .ws
            .next()
            .await
            .ok_or("the bridge closed the stream")?
            .map_err(|e| e.to_string())?;
        Ok(match message {
            Message::Text(t) => Some((t.to_string(), t.len())),
            Message::Binary(b) => Some((self.reader.read(&b)?, b.len())),
            _ => None,
        })
    }
}

fn count_rate(v: f64) -> String {
    format!("{}/s", count(v.round() as usize))
}

/// A share as a percentage with one decimal: `7.3%`.
fn tenths(v: f64) -> String {
    format!("{:.1}%", v * 100.0)
}
