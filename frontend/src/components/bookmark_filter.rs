//! Beside the events table: how often BOOKMARKs come from this source, and
//! a box to hide them (kept in the URL as `bookmarks=0`).

use crate::model::Model;
use crate::view_state::ViewState;
use leptos::prelude::*;
use watchlife_protocol::Source;

/// How often the demo's watch caches send each watcher a BOOKMARK, in
/// seconds: `watchlife_controlplane::cacher::watcher::DEMO_BOOKMARK_FREQUENCY`
/// (the live page does not link the control plane; the in-page build checks
/// that the two agree).
pub const DEMO_BOOKMARK_EVERY_S: u64 = 5;

#[cfg(feature = "in-page")]
const _: () = assert!(
    watchlife_controlplane::cacher::watcher::DEMO_BOOKMARK_FREQUENCY
        == DEMO_BOOKMARK_EVERY_S * 1_000_000
);

/// When BOOKMARKs come from `source`, in words.
pub fn bookmark_interval(source: Option<&Source>) -> String {
    match source {
        Some(Source::Demo { .. } | Source::InPage) => format!(
            "BOOKMARKs: every {DEMO_BOOKMARK_EVERY_S} s per resource (the demo's; an apiserver's about once a minute)"
        ),
        Some(Source::Cluster { .. }) => {
            "BOOKMARKs: about once a minute per watch (the apiserver's)".into()
        }
        None => String::new(),
    }
}

/// The interval and the box.
#[component]
pub fn BookmarkFilter() -> impl IntoView {
    let model = expect_context::<Model>();
    let view = expect_context::<ViewState>();
    let interval = move || {
        model
            .hello
            .with(|h| bookmark_interval(h.as_ref().map(|h| &h.source)))
    };
    view! {
        <span class="bookmark-filter">
            <span class="bookmark-interval">{interval}</span>
            <label>
                <input
                    type="checkbox"
                    id="hide-bookmarks"
                    prop:checked=move || view.hide_bookmarks.get()
                    on:change=move |ev| view.hide_bookmarks.set(event_target_checked(&ev))
                />
                " hide bookmarks"
            </label>
        </span>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_says_its_interval() {
        let demo = Source::Demo { api: "x".into() };
        assert!(bookmark_interval(Some(&demo)).starts_with("BOOKMARKs: every 5 s per resource"));
        let cluster = Source::Cluster {
            context: "c".into(),
            server: "s".into(),
        };
        assert!(bookmark_interval(Some(&cluster)).contains("once a minute"));
    }
}
