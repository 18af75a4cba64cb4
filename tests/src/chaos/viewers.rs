//! The viewers of a chaos run, each a task applying its frames to a
//! [`Model`]: some read at full speed, some hang up now and then and resume
//! with their cursor (`stream` + `since`), one can be told to stop reading
//! for a while. Every one reconnects with its cursor when its connection
//! ends (the bridge restarted, or closed it).

use super::model::Model;
use crate::ws::Viewer;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// How a viewer behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Reads everything as it comes.
    FullSpeed,
    /// Hangs up every 1.5–4 s (from its seed) and resumes with its cursor.
    Resuming,
    /// Reads at full speed, except when told to stop reading.
    Stallable,
}

/// What the harness can tell a viewer.
#[derive(Default)]
struct Control {
    stop: AtomicBool,
    /// Not reading until then.
    paused_until: Mutex<Option<Instant>>,
    /// Connected, and past its opening frames.
    connected: AtomicBool,
}

/// A viewer task and its state.
pub struct Follower {
    pub name: String,
    pub style: Style,
    pub model: Arc<Mutex<Model>>,
    control: Arc<Control>,
    task: JoinHandle<()>,
}

impl Follower {
    /// Starts following the bridge at `ws_url` (`ws://addr/ws`).
    pub fn start(name: String, style: Style, ws_url: String, seed: u64) -> Follower {
        let model = Arc::new(Mutex::new(Model::default()));
        let control = Arc::new(Control::default());
        let task = tokio::spawn(follow(style, ws_url, seed, model.clone(), control.clone()));
        Follower {
            name,
            style,
            model,
            control,
            task,
        }
    }

    /// Reads `read` of the model.
    pub fn state<T>(&self, read: impl FnOnce(&Model) -> T) -> T {
        read(&self.model.lock().unwrap())
    }

    /// Stops reading for `duration` (the socket stays open).
    pub fn pause(&self, duration: Duration) {
        *self.control.paused_until.lock().unwrap() = Some(Instant::now() + duration);
    }

    /// Whether the viewer is connected now.
    pub fn connected(&self) -> bool {
        self.control.connected.load(Ordering::Relaxed)
    }

    /// Panics with the task's own panic if it failed.
    pub fn check_alive(&self) {
        assert!(!self.task.is_finished(), "{}: its task ended", self.name);
    }

    pub fn stop(&self) {
        self.control.stop.store(true, Ordering::Relaxed);
        self.task.abort();
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.stop();
    }
}

/// xorshift64.
fn roll(rng: &mut u64) -> u64 {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    *rng
}

async fn follow(
    style: Style,
    ws_url: String,
    seed: u64,
    model: Arc<Mutex<Model>>,
    control: Arc<Control>,
) {
    let mut rng = seed | 1;
    while !control.stop.load(Ordering::Relaxed) {
        let (stream, since, ever) = {
            let m = model.lock().unwrap();
            (m.stream.clone(), m.last_seq, m.connections > 0)
        };
        let url = match (&stream, ever) {
            (Some(stream), true) => format!("{ws_url}?stream={stream}&since={since}"),
            _ => ws_url.clone(),
        };
        let mut viewer = match Viewer::try_connect(&url).await {
            Ok(v) => v,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        model.lock().unwrap().connecting(stream.is_some() && ever);
        control.connected.store(true, Ordering::Relaxed);
        let hang_up_at = match style {
            Style::Resuming => {
                Some(Instant::now() + Duration::from_millis(1500 + roll(&mut rng) % 2500))
            }
            _ => None,
        };
        loop {
            if control.stop.load(Ordering::Relaxed) {
                return;
            }
            let paused = *control.paused_until.lock().unwrap();
            if let Some(until) = paused {
                if Instant::now() < until {
                    tokio::time::sleep_until(until).await;
                    continue;
                }
                *control.paused_until.lock().unwrap() = None;
            }
            if hang_up_at.is_some_and(|t| Instant::now() >= t) {
                break;
            }
            tokio::select! {
                frame = viewer.next_frame_or_end() => match frame {
                    Some(frame) => model.lock().unwrap().apply(frame),
                    None => break,
                },
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
        }
        control.connected.store(false, Ordering::Relaxed);
        drop(viewer);
    }
}
