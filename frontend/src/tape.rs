//! Recording the live stream in the page, downloaded as a file in the same
//! format as `watchlife record` writes (see `watchlife_protocol::recording`),
//! so that it replays anywhere.
//!
//! A recording made in the page starts from what the page knows at that
//! moment: the bridge's `hello`, then a `snapshot` of the current objects and
//! Reflectors, then every frame as received, as the bridge sent it.

use crate::model::{Model, now_ms};
use leptos::prelude::*;
use wasm_bindgen::JsCast;
use watchlife_protocol::frame::SnapshotObject;
use watchlife_protocol::recording::{frame_line as line, header_line};
use watchlife_protocol::{
    PROTOCOL_VERSION, RECORDING_FORMAT, RecordingHeader, ReflectorUpdate, Snapshot,
};

/// Frames one recording keeps at most: about ten minutes of a busy demo.
/// Beyond it the recording stops by itself, so a forgotten recording cannot
/// grow without bound.
pub const MAX_FRAMES: usize = 200_000;

/// The recorder. `Copy`: every field is a signal or stored-value handle.
#[derive(Clone, Copy)]
pub struct Tape {
    /// Whether frames are being kept.
    pub recording: RwSignal<bool>,
    /// Frames kept so far.
    pub frames: RwSignal<usize>,
    lines: StoredValue<Vec<String>>,
    /// Page time the recording started.
    started: StoredValue<f64>,
}

impl Default for Tape {
    fn default() -> Self {
        Tape::new()
    }
}

impl Tape {
    pub fn new() -> Self {
        Tape {
            recording: RwSignal::new(false),
            frames: RwSignal::new(0),
            lines: StoredValue::new(Vec::new()),
            started: StoredValue::new(0.0),
        }
    }

    /// Starts recording from the model's current state. False when the page
    /// has not been greeted by a bridge yet (nothing to record).
    pub fn start(&self, model: &Model) -> bool {
        let Some(hello) = model.hello.get_untracked() else {
            return false;
        };
        let seq = model.cursor.get_untracked().map_or(0, |(_, s)| s);
        let header = RecordingHeader {
            watchlife_recording: RECORDING_FORMAT,
            protocol: PROTOCOL_VERSION,
            source: hello.source.clone(),
            resources: hello.resources.clone(),
            started_at: (js_sys::Date::now() * 1000.0) as u64,
            title: "recorded in the browser".into(),
        };
        let snapshot = Snapshot {
            objects: model.objects.with_untracked(|objects| {
                objects
                    .values()
                    .filter(|h| !h.deleted)
                    .filter_map(|h| {
                        let v = h.versions.back()?;
                        Some(SnapshotObject {
                            target: h.target.clone(),
                            resource_version: v.resource_version.clone(),
                            summary: Default::default(),
                            // Rebuilt where the latest came as a patch.
                            object: h.body(h.versions.len() - 1),
                        })
                    })
                    .collect()
            }),
            reflectors: model.reflectors.with_untracked(|r| {
                r.iter()
                    .map(|(resource, state)| ReflectorUpdate {
                        resource: resource.clone(),
                        state: state.clone(),
                    })
                    .collect()
            }),
            listed: model.listed.with_untracked(|l| l.iter().cloned().collect()),
            // The lanes start with the first tap frame recorded: the page
            // keeps its lanes, not the frames that drew them.
            taps: Vec::new(),
        };
        // Each frame's payload spliced under its `seq` and `type`, rather
        // than a whole `ServerFrame` serialized: that would bring the
        // serializer of every kind of frame into the page for two of them.
        let frame = |kind: &str, body: serde_json::Result<String>| {
            let data = body.unwrap_or_else(|_| "{}".into());
            line(
                0,
                &format!("{{\"seq\":{seq},\"type\":\"{kind}\",\"data\":{data}}}"),
            )
        };
        self.lines.set_value(vec![
            header_line(&header),
            frame("hello", serde_json::to_string(&hello)),
            frame("snapshot", serde_json::to_string(&snapshot)),
        ]);
        self.started.set_value(now_ms());
        self.frames.set(0);
        self.recording.set(true);
        true
    }

    /// Keeps one frame as received (its JSON text), while recording.
    pub fn capture(&self, text: &str) {
        if !self.recording.get_untracked() {
            return;
        }
        let t_ms = (now_ms() - self.started.get_value()).max(0.0) as u64;
        self.lines.update_value(|l| l.push(line(t_ms, text)));
        let kept = self.frames.get_untracked() + 1;
        self.frames.set(kept);
        if kept >= MAX_FRAMES {
            self.recording.set(false);
        }
    }

    /// Stops recording and offers the file for download; says why when the
    /// browser refused.
    pub fn stop_and_download(&self) -> Result<(), String> {
        self.recording.set(false);
        let mut text = self.lines.with_value(|l| l.join("\n"));
        text.push('\n');
        self.lines.set_value(Vec::new());
        let name = format!(
            "watchlife-{}.jsonl",
            String::from(js_sys::Date::new_0().to_iso_string()).replace([':', '.'], "-")
        );
        download(&name, &text)
            .map_err(|e| format!("the browser would not save the recording: {e:?}"))
    }
}

/// Saves `text` as a file through a temporary link.
fn download(name: &str, text: &str) -> Result<(), wasm_bindgen::JsValue> {
    let parts = js_sys::Array::of1(&text.into());
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("application/jsonl");
    let blob = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options)?;
    let url = web_sys::Url::create_object_url_with_blob(&blob)?;
    let link: web_sys::HtmlAnchorElement = document().create_element("a")?.unchecked_into();
    link.set_href(&url);
    link.set_download(name);
    link.click();
    // The download reads the blob after `click` returns: keep it a while.
    leptos::task::spawn_local(async move {
        gloo_timers::future::TimeoutFuture::new(KEEP_DOWNLOAD_MS).await;
        let _ = web_sys::Url::revoke_object_url(&url);
    });
    Ok(())
}

/// How long a saved recording's blob stays readable after the click.
const KEEP_DOWNLOAD_MS: u32 = 60_000;
