//! Where the control plane reads the time.

use std::sync::Arc;
use watchlife_protocol::Micros;

/// A source of wall-clock time in microseconds since the Unix epoch.
///
/// Injected so that the core needs no OS clock: the server passes
/// [`Clock::system`], a browser page passes one reading `Date.now()`, and tests
/// pass a counter.
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> Micros + Send + Sync>);

impl Clock {
    /// A clock from any function.
    pub fn new(now: impl Fn() -> Micros + Send + Sync + 'static) -> Self {
        Clock(Arc::new(now))
    }

    /// The operating system's clock.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn system() -> Self {
        Clock::new(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_micros() as Micros)
                .unwrap_or(0)
        })
    }

    /// The current time.
    pub fn now(&self) -> Micros {
        (self.0)()
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Clock")
    }
}
