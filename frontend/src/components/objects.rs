//! The current objects (the Indexer's view: state as the accumulation of
//! events) and, for the chosen one, its history with a diff per version.
//! A deleted object stays a while, greyed, its history ending in DELETED.

use crate::history::diff;
use crate::model::{Model, ObjectKey};
use crate::view_state::ViewState;
use leptos::prelude::*;

#[component]
pub fn Objects() -> impl IntoView {
    let model = expect_context::<Model>();
    let view = expect_context::<ViewState>();
    let chosen: RwSignal<Option<ObjectKey>> = RwSignal::new(None);
    let rows = move || {
        let resource = view.resource.get();
        let namespace = view.namespace.get();
        let search = view.search.get();
        model.objects.with(|o| {
            o.iter()
                .filter(|((r, key), h)| {
                    (resource.is_empty() || *r == resource)
                        && (namespace.is_empty()
                            || h.target.namespace.as_deref() == Some(namespace.as_str()))
                        && (search.is_empty() || key.contains(search.as_str()))
                })
                .map(|(k, h)| {
                    (
                        k.clone(),
                        h.target.kind.clone(),
                        h.resource_version().to_string(),
                        h.versions.len() + h.dropped,
                        h.deleted,
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
                        <For each=rows key=|r| (r.0.clone(), r.2.clone()) let:row>
                            {
                                let key = row.0.clone();
                                let key2 = key.clone();
                                let key3 = key.clone();
                                view! {
                                    <tr
                                        class="object-row"
                                        class:chosen=move || chosen.with(|c| c.as_ref() == Some(&key3))
                                        class:deleted=row.4
                                        data-resource=key.0.clone()
                                        data-key=key.1.clone()
                                        data-deleted=row.4.to_string()
                                        title=row.4.then_some("deleted: kept a while so its history can be read")
                                        tabindex="0"
                                        on:click=move |_| chosen.set(Some(key.clone()))
                                        on:keydown=move |e| {
                                            if e.key() == "Enter" {
                                                chosen.set(Some(key2.clone()));
                                            }
                                        }
                                    >
                                        <td>{row.1.clone()}</td>
                                        <td class="name">
                                            {row.0.1.clone()}
                                            {row.4.then(|| view! { <span class="gone">" deleted"</span> })}
                                        </td>
                                        <td class="rv">{row.2.clone()}</td>
                                        <td class="count">{row.3}</td>
                                    </tr>
                                }
                            }
                        </For>
                    </tbody>
                </table>
            </div>
            <History chosen/>
        </section>
    }
}

/// The chosen object's versions, oldest first, each with what changed.
#[component]
fn History(chosen: RwSignal<Option<ObjectKey>>) -> impl IntoView {
    let model = expect_context::<Model>();
    let entries = move || {
        let key = chosen.get()?;
        model.objects.with(|o| {
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
