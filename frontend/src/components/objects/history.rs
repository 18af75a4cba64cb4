//! The chosen object's history: its versions, oldest first, each with what
//! changed from the one before. Its body is fetched when it is chosen, if a
//! light snapshot left it out.

use crate::history::{Change, ObjectHistory, ObjectKey, Version, diff, patch_changes};
use crate::model::Model;
use crate::view_state::ViewState;
use leptos::prelude::*;
use watchlife_protocol::EventType;

/// A version delivered as a resync, in the history.
const RESYNC: &str = "resync: handed to the handlers again at the same resourceVersion";
/// A deletion found by a relist, in the history.
const DFSU: &str =
    "DeletedFinalStateUnknown (found by relist): removed from the Indexer, its final state unknown";
/// A change whose earlier body the page never had: it came in a light
/// snapshot and changed before anyone opened the object.
const NOT_FETCHED: &str =
    "changed: the earlier body came without its fields (light snapshot), so no diff";

/// One version as the history lists it.
struct Entry {
    event_type: &'static str,
    resource_version: String,
    /// How it was delivered, for `data-mark`: `dfsu`, `resync` or empty.
    mark: &'static str,
    /// Whether the page holds its body, for `data-body`: `kept` or `absent`
    /// (a light snapshot's is fetched when the object is opened).
    body: &'static str,
    changes: Vec<String>,
}

/// What the first version kept says when older ones were dropped: its
/// previous version is gone, so what it changed is not known (it was not
/// the object's creation unless it is an ADDED).
const FIRST_KEPT: &str = "the oldest version kept: what it changed is not known";

/// What `v` changed, given the `previous` version's body (`None` for the
/// first version kept, `Some(None)` when its body was never fetched) and
/// its own; `dropped` says older versions were dropped before the first.
fn changes(
    v: &Version,
    previous: &Option<Option<serde_json::Value>>,
    current: &Option<serde_json::Value>,
    dropped: bool,
) -> Vec<String> {
    match previous {
        _ if v.final_state_unknown => vec![DFSU.into()],
        _ if v.event_type == EventType::Deleted => {
            vec!["deleted: removed from the Indexer".into()]
        }
        _ if v.resync => vec![RESYNC.into()],
        Some(Some(p)) if let Some(now) = current => described(diff(p, now)),
        // A patch with no earlier body to diff against: it is the change.
        _ if let Some(patch) = &v.patch => described(patch_changes(&patch.merge.parse())),
        None if v.initial => vec!["as listed".into()],
        None if v.event_type == EventType::Added && !dropped => vec!["created".into()],
        None => vec![FIRST_KEPT.into()],
        Some(_) => vec![NOT_FETCHED.into()],
    }
}

/// Changes in words; saying so when there is none to see.
fn described(changes: Vec<Change>) -> Vec<String> {
    if changes.is_empty() {
        vec!["no visible change".into()]
    } else {
        changes.iter().map(Change::describe).collect()
    }
}

/// Every version of `h`, oldest first, with what it changed.
fn entries(h: &ObjectHistory) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut previous: Option<Option<serde_json::Value>> = None;
    for (v, current) in h.versions.iter().zip(h.bodies()) {
        let mark = if v.final_state_unknown {
            "dfsu"
        } else if v.resync {
            "resync"
        } else {
            ""
        };
        out.push(Entry {
            event_type: v.event_type.as_str(),
            resource_version: v.resource_version.clone(),
            mark,
            body: if current.is_some() { "kept" } else { "absent" },
            changes: changes(v, &previous, &current, h.dropped > 0),
        });
        previous = Some(current);
    }
    out
}

/// The chosen object's versions, oldest first, each with what changed;
/// redrawn with the table (`redraw`).
#[component]
pub fn History(chosen: RwSignal<Option<ObjectKey>>, redraw: ReadSignal<u64>) -> impl IntoView {
    let model = expect_context::<Model>();
    let token = expect_context::<ViewState>().token;
    // An object from a light snapshot has no body yet: fetch it when chosen.
    Effect::new(move |_| {
        if let Some(key) = chosen.get() {
            crate::bodies::fetch_if_missing(model, key, token.get_value());
        }
    });
    // What the history depends on: recomputed on every redraw of the table,
    // but the diffs are worked out again only when the object changed.
    let latest = Memo::new(move |_| {
        redraw.track();
        let key = chosen.get()?;
        model.objects.with_untracked(|o| {
            let h = o.get(&key)?;
            Some((
                key.clone(),
                h.resource_version().to_string(),
                h.versions.len(),
                h.dropped,
                h.deleted,
                // A body fetched later changes the diffs too.
                h.versions.iter().filter(|v| v.object.is_some()).count(),
            ))
        })
    });
    let shown = move || {
        let key = latest.get()?.0;
        model.objects.with_untracked(|o| {
            let h = o.get(&key)?;
            Some((key.1.clone(), h.dropped, h.deleted, entries(h)))
        })
    };
    view! {
        <div class="history" id="history" aria-live="polite">
            {move || match shown() {
                None => view! { <p class="hint">"Choose an object to see its history."</p> }.into_any(),
                Some((name, dropped, deleted, versions)) => view! {
                    <h3>
                        "History of " <span class="name">{name}</span>
                        {deleted.then(|| view! { " " <small>"(deleted)"</small> })}
                    </h3>
                    {(dropped > 0).then(|| view! { <p class="hint">{format!("{dropped} older versions dropped")}</p> })}
                    <ol>{versions.into_iter().map(version_item).collect_view()}</ol>
                }
                .into_any(),
            }}
        </div>
    }
}

/// One version in the list: its type, its resourceVersion, what changed.
fn version_item(entry: Entry) -> impl IntoView {
    let Entry {
        event_type: t,
        resource_version: rv,
        mark,
        body,
        changes,
    } = entry;
    let rv_attr = rv.clone();
    view! {
        <li class="version" data-type=t data-rv=rv_attr data-mark=mark data-body=body>
            <span class=format!("badge {}", t.to_lowercase())>{t}</span>
            " "<span class="rv">{rv}</span>
            <ul>
                {changes.into_iter().map(|c| view! { <li class="change">{c}</li> }).collect_view()}
            </ul>
        </li>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(event_type: EventType) -> Version {
        Version {
            event_type,
            resource_version: "170".into(),
            initial: false,
            resync: false,
            final_state_unknown: false,
            object: None,
            patch: None,
        }
    }

    #[test]
    fn the_first_kept_version_after_drops_is_not_called_created() {
        let modified = version(EventType::Modified);
        assert_eq!(changes(&modified, &None, &None, true), vec![FIRST_KEPT]);
        assert_eq!(changes(&modified, &None, &None, false), vec![FIRST_KEPT]);
        let added = version(EventType::Added);
        assert_eq!(changes(&added, &None, &None, true), vec![FIRST_KEPT]);
        assert_eq!(changes(&added, &None, &None, false), vec!["created"]);
    }
}
