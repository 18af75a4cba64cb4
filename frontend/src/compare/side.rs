//! One side of the compare view: a recording with its own model, its own
//! animation and its own replay, drawn as the single-player page draws its
//! pipeline, and labelled with the profile its recording names.

use crate::components::pipeline::Pipeline;
use crate::model::Model;
use crate::player::Player;
use crate::replay::{Replay, Status};
use crate::view_state::ViewState;
use leptos::prelude::*;
use watchlife_protocol::{FrameBody, Hello};

/// A player of one recording. `Copy`: handles only. Its replay is moved by
/// the compare view's one clock, never by a clock of its own.
#[derive(Clone, Copy)]
pub struct Side {
    pub model: Model,
    pub player: Player,
    pub replay: Replay,
    /// The profile the URL expects the recording to be made with (empty
    /// for the scenario's own), to name it when it cannot be played.
    pub expected_profile: StoredValue<String>,
}

impl Side {
    /// Starts loading `url`; its animation runs for the life of the page.
    pub fn load(view: ViewState, url: String, expected_profile: String) -> Side {
        let model = Model::new();
        let player = Player::start(model, view);
        let replay = Replay::new(model, view);
        replay.load_url(url);
        Side {
            model,
            player,
            replay,
            expected_profile: StoredValue::new(expected_profile),
        }
    }

    /// The recording's `hello`, once it is loaded (tracks the status).
    pub fn hello(&self) -> Option<Hello> {
        if self.replay.status.get() != Status::Ready {
            return None;
        }
        let recording = self.replay.recording()?;
        recording.frames.iter().find_map(|f| match &f.frame.body {
            FrameBody::Hello(h) => Some(h.clone()),
            _ => None,
        })
    }

    /// The profile named by the recording's `hello` (`1.36`, `1.20`), empty
    /// when it names none or is not loaded (tracks the status).
    pub fn profile(&self) -> String {
        self.hello().map(|h| h.kubernetes).unwrap_or_default()
    }

    /// `Kubernetes 1.36`, from the recording, else what the URL expected.
    pub fn title(&self) -> String {
        let profile = self.profile();
        let profile = if profile.is_empty() {
            self.expected_profile.get_value()
        } else {
            profile
        };
        if profile.is_empty() {
            "this scenario".into()
        } else {
            format!("Kubernetes {profile}")
        }
    }
}

/// One side, drawn: its label, its pipeline, or why it cannot be played.
#[component]
pub fn CompareSide(side: Side, index: usize, scenario: String) -> impl IntoView {
    provide_context(side.model);
    provide_context(side.player);
    provide_context(side.replay);
    let replay = side.replay;
    let status_word = move || match replay.status.get() {
        Status::Off | Status::Loading { .. } => "loading",
        Status::Ready => "ready",
        Status::Failed { .. } => "failed",
    };
    let failure = move || match replay.status.get() {
        Status::Failed { message } => Some(message),
        _ => None,
    };
    let cluster = move || {
        side.hello()
            .and_then(|h| h.cluster_version)
            .map(|v| format!("apiserver {v}"))
            .unwrap_or_default()
    };
    view! {
        <section
            class="compare-side"
            data-side=index
            data-profile=move || side.profile()
            data-status=status_word
            data-position-ms=move || format!("{:.0}", replay.head.position_ms.get())
            aria-label=move || format!("{} replay", side.title())
        >
            <h2 class="compare-profile">
                <span class="compare-profile-name">{move || side.title()}</span>
                " "
                <small>{cluster}</small>
            </h2>
            <div class="compare-missing" role="status" hidden=move || failure().is_none()>
                <p class="compare-missing-title">
                    {move || format!("No {} recording of {scenario}", side.title())}
                </p>
                <p class="compare-missing-detail">
                    {move || format!(
                        "The other side plays alone. ({})",
                        failure().unwrap_or_default()
                    )}
                </p>
            </div>
            <div class="compare-pipeline" hidden=move || failure().is_some()>
                <Pipeline/>
            </div>
        </section>
    }
}
