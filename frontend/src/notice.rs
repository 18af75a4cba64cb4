//! The sentences the page shows in the caption bar that are not about one
//! token: a demo action's outcome, an error, a Reflector's trouble, a bridge
//! too new for the page. The model tells them as frames arrive; they sit
//! below it and know nothing of the page.

use watchlife_protocol::{PROTOCOL_VERSION, ReflectorState};

/// A sentence for the caption bar that is not about one token: the outcome
/// of a demo action, an error, a Reflector's trouble.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub text: String,
    pub alarming: bool,
    /// Counts notices, so that two equal sentences still read as new.
    pub serial: u64,
    /// The page's time when it was told (see `Model::now`).
    pub at: f64,
}

/// How long a notice that is not an alarm stays in the caption bar, in the
/// page's time (which stands still while paused): long enough to be read
/// twice, not so long that it reads as news minutes later.
pub const NOTICE_LINGER_MS: f64 = 15_000.0;

impl Notice {
    /// Whether it is still shown at page time `now`: an alarm stays until
    /// another notice takes its place.
    pub fn current(&self, now: f64) -> bool {
        self.alarming || now - self.at < NOTICE_LINGER_MS
    }
}

/// What the page says when the bridge speaks a newer protocol.
pub fn incompatible_message(bridge: u32) -> String {
    format!(
        "This page speaks watchlife protocol {PROTOCOL_VERSION}, but the bridge speaks protocol {bridge}: \
         the bridge was upgraded. Reload the page to get the app that matches it."
    )
}

/// Whether a Reflector state is trouble worth drawing in the error colour.
pub fn reflector_alarming(state: &ReflectorState) -> bool {
    matches!(
        state,
        ReflectorState::Gone { .. }
            | ReflectorState::Relist { .. }
            | ReflectorState::Backoff { .. }
            | ReflectorState::StreamingListFailed { .. }
    )
}

/// How much a Reflector's change matters to the story, for notices shown
/// at the same moment: the 410 that starts a relist outweighs the relist,
/// which outweighs the backoff that comes with it, which outweighs the rest.
/// Of the notices one moment tells, the weightiest is the one shown, so that
/// a 410 is read even when its backoff is told in the same breath.
pub fn reflector_weight(state: &ReflectorState) -> u8 {
    match state {
        ReflectorState::Gone { .. } => 3,
        ReflectorState::Relist { .. } | ReflectorState::StreamingListFailed { .. } => 2,
        ReflectorState::Backoff { .. } => 1,
        _ => 0,
    }
}

/// A caption for a Reflector change, when it is a story worth telling.
pub fn reflector_caption(resource: &str, state: &ReflectorState) -> Option<String> {
    Some(match state {
        ReflectorState::Gone { message, .. } => format!(
            "410 Gone for {resource}: {message}. The Reflector's resourceVersion was compacted away, so it must LIST again."
        ),
        ReflectorState::Relist { reason } => {
            format!("The {resource} Reflector lists everything again ({reason}).")
        }
        ReflectorState::Backoff { delay_ms, error } => format!(
            "The {resource} Reflector's request failed: {}. It waits {:.1} s before trying again.",
            crate::plain_words::plain_error(error, resource).words,
            *delay_ms as f64 / 1_000.0
        ),
        ReflectorState::WatchEnded {
            reason,
            resource_version,
        } => format!(
            "The {resource} watch ended ({reason}); the Reflector watches again from RV {resource_version}."
        ),
        ReflectorState::StreamingListStarted { .. } => format!(
            "The {resource} Reflector opens a streaming list: one WATCH whose first events are the current objects, sent as ADDED. No LIST is made."
        ),
        ReflectorState::InitialEventsEnd {
            count,
            resource_version,
        } => format!(
            "A BOOKMARK annotated k8s.io/initial-events-end closes the initial list of {resource}: {count} objects at RV {resource_version} replace the store at once, and the same stream goes on as a watch."
        ),
        ReflectorState::StreamingListFailed { reason } => format!(
            "The server would not stream the list of {resource} ({reason}): the Reflector falls back to LIST, then WATCH."
        ),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_goes_after_its_time_but_an_alarm_stays() {
        let told = |alarming| Notice {
            text: "scaled deployment default/web to 4".into(),
            alarming,
            serial: 1,
            at: 1_000.0,
        };
        assert!(told(false).current(1_000.0 + NOTICE_LINGER_MS - 1.0));
        assert!(!told(false).current(1_000.0 + NOTICE_LINGER_MS));
        assert!(told(true).current(1_000.0 + 10.0 * NOTICE_LINGER_MS));
    }

    #[test]
    fn a_410_outweighs_its_relist_and_backoff() {
        let gone = ReflectorState::Gone {
            resource_version: "5".into(),
            message: "too old".into(),
        };
        let backoff = ReflectorState::Backoff {
            delay_ms: 1_000,
            error: "410".into(),
        };
        let relist = ReflectorState::Relist {
            reason: "410".into(),
        };
        assert!(reflector_weight(&gone) > reflector_weight(&relist));
        assert!(reflector_weight(&relist) > reflector_weight(&backoff));
    }

    #[test]
    fn a_failed_request_is_told_in_plain_words_the_raw_text_left_to_the_status_line() {
        let backoff = ReflectorState::Backoff {
            delay_ms: 5_493,
            error: "LIST failed: LIST: ServiceError: client error (Connect): tcp connect error: Connection refused (os error 111)".into(),
        };
        let caption = reflector_caption("configmaps", &backoff).unwrap();
        assert!(caption.contains("refused the connection"), "{caption}");
        assert!(caption.contains("5.5 s"), "{caption}");
        assert!(!caption.contains("ServiceError"), "{caption}");
    }
}
