//! How the viewer has set up the page — paused, speed, filters, captions,
//! presenter mode, theme — as signals the page reads and sets, kept in the
//! URL's query (see [`crate::view_query`]) so that a link reproduces the
//! view.

use crate::filters::Filters;
use crate::view_query::{Controls, DEFAULT_SPEED, ReplayOptions, SPEEDS, Theme, ViewQuery};
use leptos::prelude::*;

/// The view as signals. `Copy`: every field is a signal handle.
#[derive(Clone, Copy)]
pub struct ViewState {
    pub paused: RwSignal<bool>,
    pub speed: RwSignal<usize>,
    pub resource: RwSignal<String>,
    pub namespace: RwSignal<String>,
    /// `ADDED`, `MODIFIED`, … or empty for all.
    pub event_type: RwSignal<String>,
    /// Part of `namespace/name` to look for.
    pub search: RwSignal<String>,
    /// BOOKMARKs hidden from the events table.
    pub hide_bookmarks: RwSignal<bool>,
    pub captions: RwSignal<Option<bool>>,
    pub presenter: RwSignal<bool>,
    pub theme: RwSignal<Theme>,
    /// Whether the `?` panel of shortcuts is open (not kept in the URL).
    pub help: RwSignal<bool>,
    /// The access token from the URL (fixed for the life of the page).
    pub token: StoredValue<String>,
    /// What the URL asked to replay, and how (fixed for the life of the page).
    pub replay: StoredValue<String>,
    pub scenario: StoredValue<String>,
    pub controls: StoredValue<Controls>,
    /// A replay starts over when it ends.
    pub looping: RwSignal<bool>,
    /// The release the in-page demo follows, as the URL gave it.
    pub kubernetes: StoredValue<String>,
    /// The profile a compare view plays beside the scenario's own
    /// recording (`compare=1.20`); empty for one player.
    pub compare: StoredValue<String>,
    /// How the replay plays: markers, a pause at each, start, speed.
    pub replay_options: StoredValue<ReplayOptions>,
}

impl ViewState {
    pub fn new(q: ViewQuery) -> Self {
        ViewState {
            paused: RwSignal::new(q.paused),
            speed: RwSignal::new(q.speed.unwrap_or(DEFAULT_SPEED)),
            resource: RwSignal::new(q.resource),
            namespace: RwSignal::new(q.namespace),
            event_type: RwSignal::new(q.event_type),
            search: RwSignal::new(q.search),
            hide_bookmarks: RwSignal::new(q.hide_bookmarks),
            captions: RwSignal::new(q.captions),
            presenter: RwSignal::new(q.presenter),
            theme: RwSignal::new(q.theme),
            help: RwSignal::new(false),
            token: StoredValue::new(q.token),
            replay: StoredValue::new(q.replay),
            scenario: StoredValue::new(q.scenario),
            controls: StoredValue::new(q.controls),
            looping: RwSignal::new(q.looping),
            kubernetes: StoredValue::new(q.kubernetes),
            compare: StoredValue::new(q.compare),
            replay_options: StoredValue::new(q.replay_options),
        }
    }

    /// The recording the URL asks to play, if any (see [`ViewQuery::recording_url`]).
    pub fn recording_url(&self) -> Option<String> {
        ViewQuery {
            replay: self.replay.get_value(),
            scenario: self.scenario.get_value(),
            ..ViewQuery::default()
        }
        .recording_url()
    }

    /// The current view as plain data (tracked: call it inside an effect).
    pub fn query(&self) -> ViewQuery {
        let speed = self.speed.get();
        ViewQuery {
            paused: self.paused.get(),
            speed: Some(speed),
            resource: self.resource.get(),
            namespace: self.namespace.get(),
            event_type: self.event_type.get(),
            search: self.search.get(),
            hide_bookmarks: self.hide_bookmarks.get(),
            captions: self.captions.get(),
            presenter: self.presenter.get(),
            theme: self.theme.get(),
            token: self.token.get_value(),
            replay: self.replay.get_value(),
            scenario: self.scenario.get_value(),
            controls: self.controls.get_value(),
            looping: self.looping.get(),
            kubernetes: self.kubernetes.get_value(),
            compare: self.compare.get_value(),
            replay_options: self.replay_options.get_value(),
        }
    }

    /// The filters as they are now (tracked).
    pub fn filters(&self) -> Filters {
        Filters {
            resource: self.resource.get(),
            namespace: self.namespace.get(),
            event_type: self.event_type.get(),
            search: self.search.get(),
            hide_bookmarks: self.hide_bookmarks.get(),
        }
    }

    /// The filters as they are now (not tracked).
    pub fn filters_untracked(&self) -> Filters {
        untrack(|| self.filters())
    }

    /// Journey length of the current speed (ms), or `None` for live (not tracked).
    pub fn journey_ms_untracked(&self) -> Option<f64> {
        untrack(|| self.journey_ms())
    }

    /// Journey length of the current speed (ms), or `None` for live (tracked).
    pub fn journey_ms(&self) -> Option<f64> {
        SPEEDS[self.speed.get().min(SPEEDS.len() - 1)].1
    }
}

/// Reads the view from the page's URL, and keeps the URL in step with it.
pub fn from_url() -> ViewState {
    let window = web_sys::window().expect("a page has a window");
    let search = window.location().search().unwrap_or_default();
    let state = ViewState::new(ViewQuery::parse(&search));
    Effect::new(move |_| {
        let query = state.query().to_query();
        let window = web_sys::window().expect("a page has a window");
        let path = window.location().pathname().unwrap_or_else(|_| "/".into());
        if let Ok(history) = window.history() {
            let _ = history.replace_state_with_url(
                &wasm_bindgen::JsValue::NULL,
                "",
                Some(&format!("{path}{query}")),
            );
        }
    });
    state
}
