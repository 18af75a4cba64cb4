//! Above the objects: which resources are still being listed, so that the
//! objects so far are never taken for the whole set (a page that joins a
//! bridge in the middle of its first list, or of a relist, sees the
//! objects listed up to then).

use crate::model::Model;
use leptos::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use watchlife_protocol::ReflectorState;

/// The resources among `watched` whose objects are not the whole set: none
/// reported yet, a list (paged or streaming) under way or due (a 410, a
/// relist), or a Reflector that has never finished a list (`listed` lacks
/// it) waiting out a failure.
pub fn listing(
    watched: &[String],
    states: &BTreeMap<String, ReflectorState>,
    listed: &BTreeSet<String>,
) -> Vec<String> {
    watched
        .iter()
        .filter(|r| match states.get(*r) {
            None => true,
            Some(
                ReflectorState::ListStarted { .. }
                | ReflectorState::ListProgress { .. }
                | ReflectorState::StreamingListStarted { .. }
                | ReflectorState::Gone { .. }
                | ReflectorState::Relist { .. },
            ) => true,
            // Only after a finished list.
            Some(
                ReflectorState::ListFinished { .. }
                | ReflectorState::InitialEventsEnd { .. }
                | ReflectorState::WatchStarted { .. },
            ) => false,
            Some(_) => !listed.contains(*r),
        })
        .cloned()
        .collect()
}

/// The note's words for `resources` being listed, or none.
pub fn listing_words(resources: &[String]) -> Option<String> {
    let (last, rest) = resources.split_last()?;
    let names = match rest {
        [] => last.clone(),
        _ => format!("{} and {last}", rest.join(", ")),
    };
    let verb = if rest.is_empty() { "is" } else { "are" };
    Some(format!(
        "Not the whole set yet: {names} {verb} being listed; below are the objects listed so far."
    ))
}

/// The note, shown while a list is under way.
#[component]
pub fn ListingNote() -> impl IntoView {
    let model = expect_context::<Model>();
    let words = Memo::new(move |_| {
        let watched = model
            .hello
            .with(|h| h.as_ref().map(|h| h.resources.clone()).unwrap_or_default());
        model.reflectors.with(|states| {
            model
                .listed
                .with(|listed| listing_words(&listing(&watched, states, listed)))
        })
    });
    view! {
        <p
            class="listing-note"
            id="listing-note"
            role="status"
            hidden=move || words.with(Option::is_none)
            data-listing=move || words.with(Option::is_some).to_string()
        >
            {move || words.get().unwrap_or_default()}
        </p>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watched() -> Vec<String> {
        vec![
            "pods".into(),
            "configmaps".into(),
            "deployments.apps".into(),
        ]
    }

    #[test]
    fn a_resource_is_listing_until_its_reflector_has_listed() {
        let mut states = BTreeMap::from([(
            "pods".to_string(),
            ReflectorState::ListStarted {
                resource_version: "0".into(),
                limit: 500,
            },
        )]);
        states.insert(
            "configmaps".into(),
            ReflectorState::Bookmark {
                resource_version: "9".into(),
            },
        );
        let listed = BTreeSet::from(["configmaps".to_string()]);
        assert_eq!(
            listing(&watched(), &states, &listed),
            vec!["pods".to_string(), "deployments.apps".to_string()]
        );
        assert_eq!(
            listing_words(&listing(&watched(), &states, &listed)).as_deref(),
            Some(
                "Not the whole set yet: pods and deployments.apps are being listed; below are the objects listed so far."
            )
        );
        assert_eq!(
            listing_words(&["pods".into()]).as_deref(),
            Some(
                "Not the whole set yet: pods is being listed; below are the objects listed so far."
            )
        );
        assert_eq!(listing_words(&[]), None);
    }

    #[test]
    fn a_first_list_that_failed_and_waits_is_still_not_the_whole_set() {
        let waiting = BTreeMap::from([(
            "pods".to_string(),
            ReflectorState::Backoff {
                delay_ms: 1_000,
                error: "the cluster cannot be reached".into(),
            },
        )]);
        let pods = ["pods".to_string()];
        assert_eq!(listing(&pods, &waiting, &BTreeSet::new()), pods);
        let listed_before = BTreeSet::from(["pods".to_string()]);
        assert!(listing(&pods, &waiting, &listed_before).is_empty());
        let watching = BTreeMap::from([(
            "pods".to_string(),
            ReflectorState::WatchStarted {
                resource_version: "9".into(),
                timeout_seconds: 300,
            },
        )]);
        assert!(listing(&pods, &watching, &BTreeSet::new()).is_empty());
    }
}
