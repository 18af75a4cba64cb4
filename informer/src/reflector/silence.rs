//! When a watch that says nothing is taken for dead.
//!
//! A connection a NAT or a load balancer forgot stays open and says nothing:
//! no event, no bookmark, no close. client-go notices it through its HTTP/2
//! transport, which pings a connection idle for 30 s and closes it when the
//! ping is not answered within 15 s (`ReadIdleTimeout`, `PingTimeout` in
//! `k8s.io/apimachinery/pkg/util/net`), so within 45 s of the last frame;
//! the watch then fails, and the Reflector lists again. Over HTTP/1.1, which
//! watchlife's client speaks, there is no ping: what a client can go by is
//! what the apiserver promises to send.
//!
//! - **1.36**: the watch cache sends a watch that allows bookmarks one about
//!   every minute (`bookmarkFrequency`), so a watch silent for
//!   [`BOOKMARK_EVERY`] + [`BOOKMARK_LATE`] is dead: noticed at most 30 s
//!   after client-go would.
//! - **1.20**: its watch cache sends a bookmark only 2 s before the watch's
//!   own timeout, so a quiet watch says nothing until then. A watch silent
//!   past its timeout plus [`TIMEOUT_MARGIN`] is dead, as kube-runtime's
//!   watcher decides.
//!
//! A dead watch fails (the Reflector lists again, as client-go's does when
//! its connection is lost) and says why.

use super::Release;
use std::time::Duration;

/// How often a 1.36 apiserver sends a bookmark to a watch that allows them.
pub const BOOKMARK_EVERY: Duration = Duration::from_secs(60);

/// How late a bookmark may be before its watch is taken for dead: the watch
/// cache dispatches bookmarks on a one-second timer, behind the events of a
/// busy resource; a quarter of the period covers both.
pub const BOOKMARK_LATE: Duration = Duration::from_secs(15);

/// What kube-runtime's watcher adds to a watch's timeout before it calls the
/// watch dead (`WATCH_IDLE_TIMEOUT_MARGIN`).
pub const TIMEOUT_MARGIN: Duration = Duration::from_secs(5);

/// Whether, and when, a silent watch is taken for dead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SilentWatch {
    /// Never: the stream cannot lose its connection (an in-process one).
    #[default]
    Trusted,
    /// By the release's rules (see the module).
    ByRelease,
    /// After this long without an event or a bookmark.
    After(Duration),
}

impl SilentWatch {
    /// How long a watch that asked for `timeout_seconds` may say nothing,
    /// under `release`; `None` when it is never taken for dead.
    pub fn bound(self, release: Release, timeout_seconds: u64) -> Option<Duration> {
        match self {
            SilentWatch::Trusted => None,
            SilentWatch::After(bound) => Some(bound),
            SilentWatch::ByRelease => Some(match release {
                Release::V1_36 => BOOKMARK_EVERY + BOOKMARK_LATE,
                Release::V1_20 => Duration::from_secs(timeout_seconds) + TIMEOUT_MARGIN,
            }),
        }
    }
}

/// Why the watch failed, in words.
pub fn silent_for(bound: Duration) -> String {
    format!(
        "nothing arrived on the watch for {} s, not even a bookmark: its connection is taken for dead",
        bound.as_secs()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_follows_what_the_release_promises_to_send() {
        let rules = SilentWatch::ByRelease;
        assert_eq!(
            rules.bound(Release::V1_36, 417),
            Some(Duration::from_secs(75))
        );
        assert_eq!(
            rules.bound(Release::V1_20, 417),
            Some(Duration::from_secs(422))
        );
        assert_eq!(SilentWatch::Trusted.bound(Release::V1_36, 417), None);
        let chosen = SilentWatch::After(Duration::from_secs(10));
        assert_eq!(
            chosen.bound(Release::V1_20, 417),
            Some(Duration::from_secs(10))
        );
    }
}
