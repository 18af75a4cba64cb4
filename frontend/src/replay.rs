//! Replaying a recording with no bridge: `?replay=URL`, `?scenario=NAME`, or
//! a file dropped on the page.
//!
//! The frames go through [`Model::receive`] exactly as live ones do, so the
//! pipeline, the tables and the plots are the live page's, on the page's one
//! clock: the recording is fed at its pace, and the timeline shows the
//! recording's time of what the animation has reached ([`Model::now`]). The
//! replay ends when its last event has been drawn, not when its last frame
//! was fed. Arrivals are stamped with the recording's clock, and seeking
//! re-applies every frame up to the point from a reset model, so the state
//! at any time is the same however it was reached, and a replay always ends
//! in the same state.

use crate::chapters::{self, Marker};
use crate::js_error::message;
use crate::model::{Link, Model};
use crate::playhead::{Playhead, every_tick};
use crate::view_query::ReplayOptions;
use crate::view_state::ViewState;
use js_sys::Uint8Array;
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::sync::Arc;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use watchlife_protocol::{FrameBody, Recording, ServerFrame, parse_recording};

/// Largest recording the page reads: far beyond any scenario (tens of KB),
/// small enough that a wrong file cannot exhaust the tab.
const MAX_BYTES: f64 = 64.0 * 1024.0 * 1024.0;

/// Where the replay is.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    /// No recording yet.
    Off,
    Loading {
        from: String,
    },
    Ready,
    /// Nothing could be played; the message says why.
    Failed {
        message: String,
    },
}

/// The replay. `Copy`: every field is a signal or stored-value handle.
#[derive(Clone, Copy)]
pub struct Replay {
    pub status: RwSignal<Status>,
    /// The recording's title, or the file it came from.
    pub title: RwSignal<String>,
    pub head: Playhead,
    pub duration_ms: RwSignal<f64>,
    /// What could not be read, line by line.
    pub problems: RwSignal<Vec<String>>,
    pub markers: RwSignal<Vec<Marker>>,
    /// The marker last played over (an index into `markers`), with a count
    /// that tells two reaches of the same marker apart (a loop, a seek back).
    pub reached: RwSignal<Option<(usize, u64)>>,
    /// What the page was asked for: markers of its own, a pause at each
    /// marker, a starting point, a speed.
    options: StoredValue<ReplayOptions>,
    recording: StoredValue<Option<Arc<Recording>>>,
    /// How far the recording has been fed to the model (ms): ahead of the
    /// position shown while the animation is behind.
    fed_ms: StoredValue<f64>,
    /// Index of the next frame to apply.
    next: StoredValue<usize>,
    model: Model,
    view: ViewState,
}

impl Replay {
    pub fn new(model: Model, view: ViewState) -> Self {
        Replay {
            status: RwSignal::new(Status::Off),
            title: RwSignal::new(String::new()),
            head: Playhead::new(),
            duration_ms: RwSignal::new(0.0),
            problems: RwSignal::new(Vec::new()),
            markers: RwSignal::new(Vec::new()),
            reached: RwSignal::new(None),
            options: view.replay_options,
            recording: StoredValue::new(None),
            fed_ms: StoredValue::new(0.0),
            next: StoredValue::new(0),
            model,
            view,
        }
    }

    /// No recording named in the URL: the page waits for one to be dropped
    /// or opened.
    pub fn wait_for_a_file(&self) {
        self.model.link.set(Link::Replay);
    }

    /// Fetches a recording (and the markers file the address names) and
    /// plays it. A markers file that cannot be read is told; the recording
    /// plays without it.
    pub fn load_url(self, url: String) {
        self.begin(&url);
        spawn_local(async move {
            let markers_src = self.options.with_value(|o| o.markers_src.clone());
            if !markers_src.is_empty() {
                match fetch_text(&markers_src, "the markers file").await {
                    Ok(text) => self.options.update_value(|o| {
                        o.markers = format!("{};{}", o.markers, text.replace('\n', ";"))
                    }),
                    Err(message) => self.model.tell(message, true),
                }
            }
            match fetch_text(&url, "the recording").await {
                Ok(text) => self.load_text(&text, &url),
                Err(message) => self.fail(message),
            }
        });
    }

    /// Reads a dropped file and plays it.
    pub fn load_file(self, file: web_sys::File) {
        let name = file.name();
        self.begin(&name);
        spawn_local(async move {
            match blob_text(file.into(), &name).await {
                Ok(text) => self.load_text(&text, &name),
                Err(message) => self.fail(message),
            }
        });
    }

    fn begin(&self, from: &str) {
        self.status.set(Status::Loading { from: from.into() });
        self.model.link.set(Link::Replay);
    }

    fn fail(&self, message: String) {
        self.model.tell(message.clone(), true);
        self.status.set(Status::Failed { message });
    }

    /// Plays `text`, a recording read from `from`.
    pub fn load_text(self, text: &str, from: &str) {
        let recording = match parse_recording(text) {
            Ok(r) => r,
            Err(problem) => {
                self.fail(format!("{from} cannot be played: {problem}"));
                return;
            }
        };
        let mut problems: Vec<String> = recording.problems.iter().map(|p| p.to_string()).collect();
        if recording.more_problems > 0 {
            problems.push(format!(
                "… and {} more lines with problems",
                recording.more_problems
            ));
        }
        if let Some(first) = problems.first() {
            self.model.tell(
                format!("{from}: {first} (all problems are listed under the timeline)"),
                true,
            );
        }
        self.title.set(if recording.header.title.is_empty() {
            from.rsplit('/').next().unwrap_or(from).to_string()
        } else {
            recording.header.title.clone()
        });
        let authored = self.options.with_value(|o| chapters::authored(&o.markers));
        self.markers.set(chapters::all(&recording.frames, authored));
        self.duration_ms.set(recording.duration_ms() as f64);
        self.problems.set(problems);
        self.recording.set_value(Some(Arc::new(recording)));
        self.status.set(Status::Ready);
        let (start_s, rate) = self.options.with_value(|o| (o.start_s, o.rate));
        if let Some(rate) = rate {
            self.head.choose_speed(rate);
        }
        self.seek(start_s * 1000.0);
    }

    /// Starts the clock; it runs for the life of the page. It feeds the
    /// recording at its pace, shows on the timeline where the animation is,
    /// and ends (or loops) once everything fed has been drawn.
    pub fn start_clock(self) {
        every_tick(move |elapsed| {
            let ready = self.status.get_untracked() == Status::Ready;
            if ready && !self.head.ended.get_untracked() {
                // Also while paused: a step, or catching up, moves what is shown.
                self.follow_animation();
            }
            let running =
                ready && !self.view.paused.get_untracked() && !self.head.ended.get_untracked();
            if !running {
                return;
            }
            let duration = self.duration_ms.get_untracked();
            let fed = self.fed_ms.get_value();
            if fed < duration {
                let stop = self.next_stop().unwrap_or(duration);
                self.advance_to((fed + elapsed * self.head.speed()).min(stop));
            }
            self.follow_animation();
            if self.fed_ms.get_value() >= duration && self.model.caught_up() {
                if self.view.looping.get_untracked() {
                    self.seek(0.0);
                } else {
                    self.head.position_ms.set(duration);
                    self.head.ended.set(true);
                    self.model.settle();
                }
            }
        });
    }

    /// Where feeding stops until the page has shown everything before it:
    /// with `pause_at_markers`, the next marker not yet reached, so that
    /// the replay pauses on the state at the marker's very moment.
    fn next_stop(&self) -> Option<f64> {
        if !self.options.with_value(|o| o.pause_at_markers) {
            return None;
        }
        let shown = self.head.position_ms.get_untracked();
        self.markers
            .with_untracked(|markers| markers.iter().map(|m| m.t_ms as f64).find(|&t| t > shown))
    }

    /// Moves the timeline to the recording's time of what the page shows,
    /// and tells a marker played over ([`Replay::reached`]); with
    /// `pause_at_markers`, the replay pauses there.
    fn follow_animation(&self) {
        let shown = self.model.now().min(self.fed_ms.get_value());
        let before = self.head.position_ms.get_untracked();
        if before == shown {
            return;
        }
        self.head.position_ms.set(shown);
        let crossed = self
            .markers
            .with_untracked(|m| chapters::crossed(m, before, shown));
        if let Some(index) = crossed {
            let count = self.reached.get_untracked().map_or(0, |(_, n)| n + 1);
            self.reached.set(Some((index, count)));
            if self.options.with_value(|o| o.pause_at_markers) {
                self.view.paused.set(true);
                // The page stands still at the chapter: panels off screen
                // show it too (a script may read them), not a second later.
                self.model.settle();
            }
        }
    }

    /// Shows the recording as it was at `t_ms`: every frame up to it applied
    /// to a fresh model, with no tokens launched for the ones passed over.
    pub fn seek(&self, t_ms: f64) {
        let t_ms = t_ms.clamp(0.0, self.duration_ms.get_untracked());
        self.model.reset();
        self.model.link.set(Link::Replay);
        self.next.set_value(0);
        self.fed_ms.set_value(0.0);
        self.head
            .ended
            .set(t_ms >= self.duration_ms.get_untracked() && t_ms > 0.0);
        self.advance_to(t_ms);
        // Tokens are for what happens while watching, not for a jump.
        self.model.show_all();
        self.model.set_shown(t_ms);
        self.head.position_ms.set(t_ms);
        self.model.settle();
    }

    /// Plays from the start again.
    pub fn restart(&self) {
        self.seek(0.0);
        self.view.paused.set(false);
    }

    /// Jumps to the event numbered `seq` and pauses there. False when the
    /// recording has no such event.
    pub fn jump_to_seq(&self, seq: u64) -> bool {
        let at = self.recording.with_value(|r| {
            r.as_ref()?
                .frames
                .iter()
                .find(|f| f.frame.seq == seq && matches!(f.frame.body, FrameBody::Event(_)))
                .map(|f| f.t_ms)
        });
        match at {
            Some(t) => {
                self.view.paused.set(true);
                self.seek(t as f64);
                true
            }
            None => false,
        }
    }

    /// The recording being played, once one is loaded.
    pub fn recording(&self) -> Option<Arc<Recording>> {
        self.recording.get_value()
    }

    /// Feeds the model the frames due by `t_ms`, each stamped with its own
    /// recorded time (stream frames are then held for the animation). `t_ms`
    /// only moves forward from the last call or [`Replay::seek`]; a clock
    /// other than [`Replay::start_clock`] (a compare view's, driving two
    /// replays) calls this with a time no later than
    /// [`Replay::duration_ms`].
    pub fn advance_to(&self, t_ms: f64) {
        let Some(recording) = self.recording.get_value() else {
            return;
        };
        let mut next = self.next.get_value();
        self.model.batch(|| {
            while let Some(f) = recording.frames.get(next) {
                if f.t_ms as f64 > t_ms {
                    break;
                }
                self.model.set_clock(f.t_ms as f64);
                self.model.receive(for_replay(&f.frame));
                next += 1;
            }
        });
        self.next.set_value(next);
        self.model.set_clock(t_ms);
        self.fed_ms.set_value(t_ms);
    }
}

/// A recorded frame as the page applies it: with no bridge, nothing can act
/// on the demo, so a recorded `hello` no longer offers demo actions.
fn for_replay(frame: &ServerFrame) -> ServerFrame {
    let mut frame = frame.clone();
    if let FrameBody::Hello(hello) = &mut frame.body {
        hello.demo_actions = false;
    }
    frame
}

/// Fetches `url` as text (gunzipped when it is a `.gz` file served as is).
async fn fetch_text(url: &str, what: &str) -> Result<String, String> {
    let window = web_sys::window().ok_or("no window")?;
    let response = JsFuture::from(window.fetch_with_str(url))
        .await
        .map_err(|e| format!("cannot fetch {what} {url}: {}", message(&e)))?;
    let response: web_sys::Response = response.dyn_into().map_err(|e| message(&e))?;
    if !response.ok() {
        let status = response.status();
        let why = if status == 404 {
            " (no such file: check the address, or the scenario's name)".to_string()
        } else {
            format!(" {}", response.status_text())
        };
        return Err(format!("cannot fetch {what} {url}: HTTP {status}{why}"));
    }
    let blob = JsFuture::from(response.blob().map_err(|e| message(&e))?)
        .await
        .map_err(|e| message(&e))?;
    blob_text(blob.unchecked_into(), url).await
}

/// The text of a file or download, gunzipped when it starts with gzip's magic bytes.
async fn blob_text(blob: web_sys::Blob, name: &str) -> Result<String, String> {
    if blob.size() > MAX_BYTES {
        return Err(format!(
            "{name} is {:.0} MB: larger than the {:.0} MB a page replays",
            blob.size() / 1e6,
            MAX_BYTES / 1e6
        ));
    }
    let head = blob.slice_with_i32_and_i32(0, 2).map_err(|e| message(&e))?;
    let head = JsFuture::from(head.array_buffer())
        .await
        .map_err(|e| message(&e))?;
    let blob = if Uint8Array::new(&head).to_vec() == [0x1f, 0x8b] {
        gunzip(&blob)
            .await
            .map_err(|e| format!("{name} looks gzipped but does not unzip: {}", message(&e)))?
    } else {
        blob
    };
    let text = JsFuture::from(blob.text())
        .await
        .map_err(|e| format!("{name} cannot be read: {}", message(&e)))?;
    text.as_string()
        .ok_or_else(|| format!("{name} cannot be read as text"))
}

/// Gunzips with the browser's own `DecompressionStream` (looked up by name:
/// web-sys only binds it behind an unstable flag).
async fn gunzip(blob: &web_sys::Blob) -> Result<web_sys::Blob, JsValue> {
    let class = js_sys::Reflect::get(&js_sys::global(), &"DecompressionStream".into())?;
    if class.is_undefined() {
        return Err("this browser cannot gunzip (no DecompressionStream)".into());
    }
    let inflate = js_sys::Reflect::construct(
        class.unchecked_ref::<js_sys::Function>(),
        &js_sys::Array::of1(&"gzip".into()),
    )?;
    let readable = js_sys::Reflect::get(&inflate, &"readable".into())?;
    let writable = js_sys::Reflect::get(&inflate, &"writable".into())?;
    let pair =
        web_sys::ReadableWritablePair::new(readable.unchecked_ref(), writable.unchecked_ref());
    let stream = blob.stream().pipe_through(&pair);
    let response = web_sys::Response::new_with_opt_readable_stream(Some(&stream))?;
    Ok(JsFuture::from(response.blob()?).await?.unchecked_into())
}
