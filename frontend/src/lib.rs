//! The watchlife browser app.
//!
//! # Layout
//! - [`event_row`], [`history`] and [`notice`]: what the model is made of —
//!   an event as kept, each object's versions under its key, a sentence for
//!   the caption bar.
//! - [`model`]: what the page knows — connection status, the bridge's hello,
//!   recent events, objects with their histories, per-stage numbers — as
//!   signals, updated by one function per frame.
//! - [`cluster_status`] and [`plain_words`]: whether the bridge reaches its
//!   cluster, and its errors in plain words.
//! - [`connection`]: the WebSocket to the bridge, reconnecting with backoff,
//!   resuming from the last `seq`, noticing a stalled link, and sending.
//! - [`view_state`]: how the viewer set up the page, as signals, kept in
//!   the URL as a [`view_query`]; [`filters`]: which events they show.
//! - [`animator`] and [`player`]: tokens travelling through the stages, and
//!   the frame loop that moves them; [`backlog`]: the page's one clock, the
//!   stream frames held until the animation reaches them.
//! - [`tape`]: the live stream recorded in the page for download.
//! - [`replay`] (the `replay` feature, built by `make embed`): a recording
//!   played with no bridge. The live page and the replay page are two builds
//!   of this crate, so that each carries only its own code. [`playhead`]:
//!   where a played recording stands, and the clock that moves it;
//!   [`chapters`]: its markers, found and authored; [`player_host`]: the
//!   replay page inside a docs page's `<watchlife-player>`, driven by it.
//! - [`compare`] (the replay page's `compare=`): one scenario under two
//!   Kubernetes profiles, side by side on one clock, and
//!   [`reflector_steps`]: where their informers differ, read from the frames.
//! - [`in_page`] (the `in-page` feature, `make embed`'s `demo.html`): the demo
//!   control plane and the informer running in the page, with no bridge.
//! - [`stats`], [`history`], [`narration`]: numbers, diffs and words;
//!   [`micros`] and [`quantiles`]: a duration as written, a percentile;
//!   [`interval`]: the signed time between two stage marks;
//!   [`listeners`]: the event handlers' listeners, one lane each;
//!   [`detail`]: one event's life in lines; [`waterfall_spans`]: its every
//!   hop, server and client, as spans of measured time;
//!   [`deletions`]: how long deleted objects stay in the table.
//! - [`taps`]: the user's kube-rs controllers, a lane per tap connection,
//!   matched with the bridge's events by resourceVersion; [`tap_words`]:
//!   their reconciles in words.
//! - [`throttle`]: costly panels redrawn a few times a second, not per frame,
//!   and not at all while [`on_screen`] says nobody can see them.
//! - [`media`]: signals that follow a media query (a phone's width, less motion).
//! - [`components`]: what is drawn.

pub mod animator;
pub mod backlog;
pub mod bodies;
pub mod carried;
#[cfg(any(feature = "replay", test))]
pub mod chapters;
pub mod cluster_status;
#[cfg(all(feature = "replay", not(feature = "in-page")))]
pub mod compare;
pub mod components;
pub mod connection;
pub mod deletions;
pub mod detail;
pub mod event_row;
pub mod filters;
pub mod history;
#[cfg(feature = "in-page")]
pub mod in_page;
pub mod inflate;
pub mod interval;
pub mod js_error;
pub mod listeners;
pub mod media;
pub mod micros;
pub mod model;
pub mod narration;
pub mod notice;
pub mod on_screen;
pub mod plain_words;
pub mod player;
#[cfg(any(feature = "replay", feature = "in-page"))]
pub mod player_host;
#[cfg(any(feature = "replay", test))]
pub mod playhead;
pub mod quantiles;
#[cfg(any(feature = "replay", test))]
pub mod reflector_steps;
#[cfg(feature = "replay")]
pub mod replay;
pub mod stats;
pub mod tap_words;
pub mod tape;
pub mod taps;
#[cfg(test)]
pub mod test_events;
pub mod throttle;
pub mod view_query;
pub mod view_state;
pub mod waterfall_spans;

use components::*;
use leptos::prelude::*;

/// The whole page.
#[component]
pub fn App() -> impl IntoView {
    let view = view_state::from_url();
    #[cfg(all(feature = "replay", not(feature = "in-page")))]
    if !view.compare.get_value().is_empty() {
        provide_context(view);
        // `Either`, not an erased `AnyView`: erasing the whole page's view
        // made the replay page's wasm about 50 KB larger.
        return leptos::either::Either::Left(view! { <compare::ComparePage view/> });
    }
    let model = model::Model::new();
    let player = player::Player::start(model, view);
    provide_context(model);
    provide_context(view);
    provide_context(player);
    start_source(model, view);
    keyboard::install(view, player);
    // Theme and presenter mode are attributes of the root element, for the stylesheet.
    Effect::new(move |_| {
        if let Some(root) = document().document_element() {
            let _ = root.set_attribute("data-theme", view.theme.get().as_str());
            let _ = root.set_attribute("data-presenter", &view.presenter.get().to_string());
            let _ = root.set_attribute("data-controls", view.controls.get_value().as_str());
            let _ = root.set_attribute("data-page", PAGE);
        }
    });
    let desk = move || !view.presenter.get();
    let page = view! {
        <header::Header/>
        <controls::Controls/>
        <main>
            // Beside the pipeline in presenter mode: the event followed, the
            // captions and the actions, so that nothing needs scrolling.
            <div class="stage-area">
                <pipeline::Pipeline/>
                <side_panel::SidePanel/>
            </div>
            {bar()}
            <Show when=desk>
                <captions::Captions/>
            </Show>
            <controllers::Controllers/>
            <div class="insights">
                <fanout::Fanout/>
                <plots::Plots/>
            </div>
            <div class="panels">
                <objects::Objects/>
                <event_log::EventLog/>
            </div>
            <Show when=desk>
                <actions::Actions/>
            </Show>
        </main>
        <help::Help/>
    };
    #[cfg(all(feature = "replay", not(feature = "in-page")))]
    let page = leptos::either::Either::Right(page);
    page
}

/// Which build this is, for the stylesheet (`data-page` on the root).
#[cfg(not(any(feature = "replay", feature = "in-page")))]
const PAGE: &str = "live";
#[cfg(all(feature = "replay", not(feature = "in-page")))]
const PAGE: &str = "replay";
#[cfg(feature = "in-page")]
const PAGE: &str = "in-page";

/// The live page: the stream from the bridge that served it, recordable.
#[cfg(not(any(feature = "replay", feature = "in-page")))]
fn start_source(model: model::Model, view: view_state::ViewState) {
    let tape = tape::Tape::new();
    provide_context(tape);
    connection::connect(model, view.token.get_value(), tape);
}

/// The in-page demo: the control plane runs here.
#[cfg(feature = "in-page")]
fn start_source(model: model::Model, _view: view_state::ViewState) {
    in_page::start(model);
    player_host::report_size();
}

/// The replay page: the recording the URL names, or one dropped on the page.
#[cfg(all(feature = "replay", not(feature = "in-page")))]
fn start_source(model: model::Model, view: view_state::ViewState) {
    let replay = replay::Replay::new(model, view);
    provide_context(replay);
    replay.start_clock();
    replay_bar::accept_dropped_files(replay);
    player_host::serve(replay, view);
    match view.recording_url() {
        Some(url) => replay.load_url(url),
        None => replay.wait_for_a_file(),
    }
}

#[cfg(not(any(feature = "replay", feature = "in-page")))]
fn bar() -> impl IntoView {
    view! { <record_bar::RecordBar/> }
}

#[cfg(all(feature = "replay", not(feature = "in-page")))]
fn bar() -> impl IntoView {
    view! { <replay_bar::ReplayBar/> }
}

/// The in-page demo has nothing to record or replay: its actions are its controls.
#[cfg(feature = "in-page")]
fn bar() -> impl IntoView {}
