//! The current objects (the Indexer's view: state as the accumulation of
//! events) and, for the chosen one, its history with a diff per version.
//! A deleted object stays a while, greyed, its history ending in DELETED.

use crate::history::diff;
use crate::model::{Model, ObjectKey};
use crate::throttle::throttled;
use crate::view_state::ViewState;
use leptos::prelude::*;
use std::collections::HashMap;

/// Shortest time between two redraws of the table and of the chosen
/// object's history as objects change: five a second is quicker than a
/// changing resourceVersion can be read, and a busy cluster then costs the
/// animation nothing like a redraw of every row on every frame.
const REDRAW_MS: f64 = 200.0;

/// What changes in place in a row: the resourceVersion and the count of events.
type Cells = (String, usize);

/// What one row of the table shows.
#[derive(Debug, Clone, PartialEq)]
struct ObjectRow {
    key: ObjectKey,
    kind: String,
    resource_version: String,
    /// Versions seen, kept or dropped.
    events: usize,
    deleted: bool,
}

#[component]
pub fn Objects() -> impl IntoView {
    let model = expect_context::<Model>();
    let view = expect_context::<ViewState>();
    let chosen: RwSignal<Option<ObjectKey>> = RwSignal::new(None);
    let redraw = throttled(REDRAW_MS, move || model.objects.track());
    // Sorted by key, as the model keeps them.
    let rows = Memo::new(move |_| {
        redraw.track();
        let resource = view.resource.get();
        let namespace = view.namespace.get();
        let search = view.search.get();
        model.objects.with_untracked(|o| {
            o.iter()
                .filter(|((r, key), h)| {
                    (resource.is_empty() || *r == resource)
                        && (namespace.is_empty()
                            || h.target.namespace.as_deref() == Some(namespace.as_str()))
                        && (search.is_empty() || key.contains(search.as_str()))
                })
                .map(|(k, h)| ObjectRow {
                    key: k.clone(),
                    kind: h.target.kind.clone(),
                    resource_version: h.resource_version().to_string(),
                    events: h.versions.len() + h.dropped,
                    deleted: h.deleted,
                })
                .collect::<Vec<_>>()
        })
    });
    // A row lives as long as its object (a deletion draws it anew, greyed);
    // its resourceVersion and count change in place, through a signal of
    // its own that is set only when they changed: a redraw wakes the rows
    // that changed, not every row.
    let cells: StoredValue<HashMap<ObjectKey, RwSignal<Cells>>> = StoredValue::new(HashMap::new());
    Effect::new(move |_| {
        rows.with(|rows| {
            cells.with_value(|cells| {
                for row in rows {
                    let Some(cell) = cells.get(&row.key) else {
                        continue;
                    };
                    let changed = cell.with_untracked(|(rv, events)| {
                        *rv != row.resource_version || *events != row.events
                    });
                    if changed {
                        cell.set((row.resource_version.clone(), row.events));
                    }
                }
            })
        })
    });
    let keys = move || {
        rows.with(|rows| {
            rows.iter()
                .map(|r| {
                    (
                        r.key.clone(),
                        r.kind.clone(),
                        r.deleted,
                        (r.resource_version.clone(), r.events),
                    )
                })
                .collect::<Vec<_>>()
        })
    };
    view! {
        <section class="objects panel" aria-label="Current objects">
            <h2>"Objects " <small>"the informer's cache: click one for its history"</small></h2>
            <div class="scroll">
                <table>
                    <thead><tr><th>"kind"</th><th>"namespace/name"</th><th>"RV"</th><th>"events"</th></tr></thead>
                    <tbody id="objects">
                        <For each=keys key=|r| (r.0.clone(), r.2) let:row>
                            {
                                let (key, kind, deleted, now) = row;
                                let cell = RwSignal::new(now);
                                cells.update_value(|c| {
                                    c.insert(key.clone(), cell);
                                });
                                let mine = key.clone();
                                // A row drawn anew for the same object may have taken the slot already.
                                on_cleanup(move || {
                                    cells.try_update_value(|c| {
                                        if c.get(&mine) == Some(&cell) {
                                            c.remove(&mine);
                                        }
                                    });
                                });
                                let key2 = key.clone();
                                let key3 = key.clone();
                                let name = key.1.clone();
                                view! {
                                    <tr
                                        class="object-row"
                                        class:chosen=move || chosen.with(|c| c.as_ref() == Some(&key3))
                                        class:deleted=deleted
                                        data-resource=key.0.clone()
                                        data-key=key.1.clone()
                                        data-deleted=deleted.to_string()
                                        title=deleted.then_some("deleted: kept a while so its history can be read")
                                        tabindex="0"
                                        on:click=move |_| chosen.set(Some(key.clone()))
                                        on:keydown=move |e| {
                                            if e.key() == "Enter" {
                                                chosen.set(Some(key2.clone()));
                                            }
                                        }
                                    >
                                        <td>{kind}</td>
                                        <td class="name">
                                            {name}
                                            {deleted.then(|| view! { <span class="gone">" deleted"</span> })}
                                        </td>
                                        <td class="rv">{move || cell.with(|c| c.0.clone())}</td>
                                        <td class="count">{move || cell.with(|c| c.1)}</td>
                                    </tr>
                                }
                            }
                        </For>
                    </tbody>
                </table>
            </div>
            <History chosen redraw/>
        </section>
    }
}

/// The chosen object's versions, oldest first, each with what changed.
#[component]
fn History(chosen: RwSignal<Option<ObjectKey>>, redraw: ReadSignal<u64>) -> impl IntoView {
    let model = expect_context::<Model>();
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
            ))
        })
    });
    let entries = move || {
        let key = latest.get()?.0;
        model.objects.with_untracked(|o| {
            let h = o.get(&key)?;
            let mut out = Vec::new();
            let mut previous: Option<&serde_json::Value> = None;
            for v in &h.versions {
                let changes: Vec<String> = match previous {
                    _ if v.event_type == watchlife_protocol::EventType::Deleted => {
                        vec!["deleted: removed from the Indexer".into()]
                    }
                    None if v.initial => vec!["as listed".into()],
                    None => vec!["created".into()],
                    Some(p) => {
                        let c: Vec<String> =
                            diff(p, &v.object).iter().map(|c| c.describe()).collect();
                        if c.is_empty() {
                            vec!["no visible change".into()]
                        } else {
                            c
                        }
                    }
                };
                out.push((v.event_type.as_str(), v.resource_version.clone(), changes));
                previous = Some(&v.object);
            }
            Some((key.1.clone(), h.dropped, h.deleted, out))
        })
    };
    view! {
        <div class="history" id="history" aria-live="polite">
            {move || match entries() {
                None => view! { <p class="hint">"Choose an object to see its history."</p> }.into_any(),
                Some((name, dropped, deleted, versions)) => view! {
                    <h3>
                        "History of " <span class="name">{name}</span>
                        {deleted.then(|| view! { " " <small>"(deleted)"</small> })}
                    </h3>
                    {(dropped > 0).then(|| view! { <p class="hint">{format!("{dropped} older versions dropped")}</p> })}
                    <ol>
                        {versions
                            .into_iter()
                            .map(|(t, rv, changes)| {
                                let rv_attr = rv.clone();
                                view! {
                                <li class="version" data-type=t data-rv=rv_attr>
                                    <span class=format!("badge {}", t.to_lowercase())>{t}</span>
                                    " "<span class="rv">{rv}</span>
                                    <ul>
                                        {changes.into_iter().map(|c| view! { <li class="change">{c}</li> }).collect_view()}
                                    </ul>
                                </li>
                            }})
                            .collect_view()}
                    </ol>
                }
                .into_any(),
            }}
        </div>
    }
}
