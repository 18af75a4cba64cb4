//! Where the tap sends, as whom, and how much it may hold.

use std::time::Duration;

/// Frames the tap holds while watchlife is away or slow, before it drops new
/// ones: a few seconds of a busy controller (a reconcile is two frames, a
/// watcher event one) in well under a few MiB, so a controller's memory does
/// not grow with an absent bridge.
pub const BUFFER_FRAMES: usize = 4096;

/// How often the `stats` frame (recorded, dropped) is sent: often enough for
/// a page to show drops while they happen, rarely enough to cost nothing.
pub const STATS_EVERY: Duration = Duration::from_secs(2);

/// Where and how the tap connects.
#[derive(Debug, Clone)]
pub struct TapConfig {
    /// watchlife's address: `http://host:port` (its page's URL) or
    /// `ws://host:port`; the tap connects to its `/tap`.
    pub url: String,
    /// The viewers' token, sent as `Authorization: Bearer` (`None`: no token).
    pub token: Option<String>,
    /// The controller's name, the title of its lane.
    pub controller: String,
    /// Frames held at most ([`BUFFER_FRAMES`] by default).
    pub buffer: usize,
}

impl TapConfig {
    /// A tap to `url` named `controller`, with no token and the default buffer.
    pub fn new(url: impl Into<String>, controller: impl Into<String>) -> TapConfig {
        TapConfig {
            url: url.into(),
            token: None,
            controller: controller.into(),
            buffer: BUFFER_FRAMES,
        }
    }

    /// With the viewers' token.
    pub fn token(mut self, token: impl Into<String>) -> TapConfig {
        self.token = Some(token.into());
        self
    }

    /// With a buffer of `frames` (at least 1).
    pub fn buffer(mut self, frames: usize) -> TapConfig {
        self.buffer = frames.max(1);
        self
    }

    /// The WebSocket URL of watchlife's `/tap`.
    pub(crate) fn endpoint(&self) -> Result<url::Url, TapError> {
        let mut url = url::Url::parse(&self.url).map_err(|e| TapError::Url(e.to_string()))?;
        let scheme = match url.scheme() {
            "http" | "ws" => "ws",
            other => {
                return Err(TapError::Url(format!(
                    "scheme {other}: use http:// or ws://"
                )));
            }
        };
        url.set_scheme(scheme)
            .map_err(|()| TapError::Url("cannot set the scheme".into()))?;
        if url.path() == "/" || url.path().is_empty() {
            url.set_path(watchlife_protocol::tap::TAP_PATH);
        }
        Ok(url)
    }
}

/// Why a tap could not be made (it never fails once made).
#[derive(Debug, thiserror::Error)]
pub enum TapError {
    /// The URL is not one the tap can connect to.
    #[error("watchlife URL: {0}")]
    Url(String),
    /// [`crate::Tap::connect`] needs a Tokio runtime for its sending task.
    #[error("the tap must be made inside a Tokio runtime")]
    NoRuntime,
}
