//! The current objects (the Indexer's view: state as the accumulation of
//! events) and, for the chosen one, its history with a diff per version.
//! A deleted object stays a while, greyed, its history ending in DELETED.

use super::slot::part;
use crate::history::ObjectKey;
use crate::history::diff;
use crate::model::Model;
use crate::throttle::throttled;
use crate::view_state::ViewState;
use leptos::prelude::*;

/// Shortest time between two redraws of the table and of the chosen
/// object's history as objects change: five a second is quicker than a
/// changing resourceVersion can be read, and a busy cluster then costs the
/// animation nothing like a redraw of every row on every frame.
const REDRAW_MS: f64 = 200.0;
/// Height of one row in px; the stylesheet gives rows exactly this height.
const ROW_H: f64 = 28.0;
/// Most height of the scrolling area in px: eight rows.
const VIEWPORT_H: f64 = 8.0 * ROW_H;
/// Rows drawn beyond the visible ones, above and below, so that a fast
/// scroll shows no gap.
const OVERSCAN: usize = 6;
/// Rows in the page at once: the visible ones and the overscan. A busy
/// cluster has hundreds of objects, created and deleted many times a
/// second; only these rows exist, each showing whichever object is at its
/// place, so an object coming or going changes a few texts, never the table.
const SLOTS: usize = (VIEWPORT_H / ROW_H) as usize + 2 * OVERSCAN;

/// A version delivered as a resync, in the history.
const RESYNC: &str = "resync: handed to the handlers again at the same resourceVersion";
/// A deletion found by a relist, in the history.
const DFSU: &str =
    "DeletedFinalStateUnknown (found by relist): removed from the Indexer, its final state unknown";
/// A change whose earlier body the page never had: it came in a light
/// snapshot and changed before anyone opened the object.
const NOT_FETCHED: &str =
    "changed: the earlier body came without its fields (light snapshot), so no diff";

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
    let scroll_top = RwSignal::new(0.0_f64);
    let first = Memo::new(move |_| ((scroll_top.get() / ROW_H) as usize).saturating_sub(OVERSCAN));
    let total = Memo::new(move |_| rows.with(Vec::len));
    let below = move || total.get().saturating_sub(first.get() + SLOTS) as f64 * ROW_H;
    // One listener for all the rows, which show another object whenever the
    // table changes or scrolls.
    let choose = move |ev: &web_sys::Event| {
        let row = event_target::<web_sys::Element>(ev)
            .closest("tr.object-row")
            .ok()
            .flatten();
        let key = row.and_then(|tr| {
            Some((
                tr.get_attribute("data-resource")?,
                tr.get_attribute("data-key")?,
            ))
        });
        if key.is_some() {
            chosen.set(key);
        }
    };
    view! {
        <section class="objects panel" aria-label="Current objects" data-objects=move || total.get()>
            <h2>"Objects " <small>"the informer's cache: click one for its history"</small></h2>
            <div
                class="scroll"
                style=format!("max-height:{VIEWPORT_H}px")
                on:scroll=move |ev| {
                    let el = event_target::<web_sys::Element>(&ev);
                    scroll_top.set(el.scroll_top() as f64);
                }
            >
                <table>
                    <thead><tr><th>"kind"</th><th>"namespace/name"</th><th>"RV"</th><th>"events"</th></tr></thead>
                    <tbody
                        id="objects"
                        on:click=move |ev| choose(&ev)
                        on:keydown=move |ev| {
                            if ev.key() == "Enter" {
                                choose(&ev);
                            }
                        }
                    >
                        <tr class="spacer" style=move || format!("height:{}px", first.get() as f64 * ROW_H)></tr>
                        {(0..SLOTS)
                            .map(|i| {
                                let row = Memo::new(move |_| rows.with(|r| r.get(first.get() + i).cloned()));
                                object_slot(row.into(), chosen)
                            })
                            .collect_view()}
                        <tr class="spacer" style=move || format!("height:{}px", below())></tr>
                    </tbody>
                </table>
            </div>
            <History chosen redraw/>
        </section>
    }
}

/// One row of the table: the object at its place, or hidden (and without
/// the row's class and data) while there is none.
fn object_slot(
    row: Signal<Option<ObjectRow>>,
    chosen: RwSignal<Option<ObjectKey>>,
) -> impl IntoView {
    let key = part(row, |r| r.key.clone());
    let deleted = part(row, |r| r.deleted);
    let class = move || match key.get() {
        None => "slot".to_string(),
        Some(key) => {
            let mut class = "object-row".to_string();
            if deleted.get() == Some(true) {
                class.push_str(" deleted");
            }
            if chosen.with(|c| c.as_ref() == Some(&key)) {
                class.push_str(" chosen");
            }
            class
        }
    };
    let kind = part(row, |r| r.kind.clone());
    let rv = part(row, |r| r.resource_version.clone());
    let events = part(row, |r| r.events);
    view! {
        <tr
            class=class
            hidden=move || key.with(Option::is_none)
            data-resource=move || key.get().map(|k| k.0)
            data-key=move || key.get().map(|k| k.1)
            data-deleted=move || deleted.get().map(|d| d.to_string())
            title=move || (deleted.get() == Some(true)).then_some("deleted: kept a while so its history can be read")
            tabindex=move || key.with(Option::is_some).then_some("0")
        >
            <td>{move || kind.get()}</td>
            <td class="name">
                {move || key.get().map(|k| k.1)}
                {move || (deleted.get() == Some(true)).then(|| view! { <span class="gone">" deleted"</span> })}
            </td>
            <td class="rv">{move || rv.get()}</td>
            <td class="count">{move || events.get()}</td>
        </tr>
    }
}

/// The chosen object's versions, oldest first, each with what changed.
#[component]
fn History(chosen: RwSignal<Option<ObjectKey>>, redraw: ReadSignal<u64>) -> impl IntoView {
    let model = expect_context::<Model>();
    let token = expect_context::<crate::view_state::ViewState>().token;
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
    let entries = move || {
        let key = latest.get()?.0;
        model.objects.with_untracked(|o| {
            let h = o.get(&key)?;
            let mut out = Vec::new();
            // The previous version: `Some(None)` when its body was never fetched.
            let mut previous: Option<Option<serde_json::Value>> = None;
            let mut parsed = h
                .versions
                .iter()
                .map(|v| v.object.as_ref().map(|o| o.parse()));
            for v in &h.versions {
                let current = parsed.next().flatten();
                let changes: Vec<String> = match &previous {
                    _ if v.final_state_unknown => vec![DFSU.into()],
                    _ if v.event_type == watchlife_protocol::EventType::Deleted => {
                        vec!["deleted: removed from the Indexer".into()]
                    }
                    _ if v.resync => vec![RESYNC.into()],
                    None if v.initial => vec!["as listed".into()],
                    None => vec!["created".into()],
                    Some(p) => match (p, &current) {
                        (Some(p), Some(now)) => {
                            let c: Vec<String> =
                                diff(p, now).iter().map(|c| c.describe()).collect();
                            if c.is_empty() {
                                vec!["no visible change".into()]
                            } else {
                                c
                            }
                        }
                        _ => vec![NOT_FETCHED.into()],
                    },
                };
                let mark = if v.final_state_unknown {
                    "dfsu"
                } else if v.resync {
                    "resync"
                } else {
                    ""
                };
                // Whether the page holds this version's body (a light
                // snapshot's is fetched when the object is opened).
                let body = if current.is_some() { "kept" } else { "absent" };
                out.push((
                    v.event_type.as_str(),
                    v.resource_version.clone(),
                    mark,
                    body,
                    changes,
                ));
                previous = Some(current);
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
                            .map(|(t, rv, mark, body, changes)| {
                                let rv_attr = rv.clone();
                                view! {
                                <li class="version" data-type=t data-rv=rv_attr data-mark=mark data-body=body>
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
