//! The current objects (the Indexer's view: state as the accumulation of
//! events) and, for the chosen one, its history with a diff per version.
//! A deleted object stays a while, greyed, its history ending in DELETED.
//!
//! - [`history`]: the chosen object's versions, each with what changed.
//! - [`listing`]: which resources are still being listed, above them.

pub mod history;
pub mod listing;

use super::scroll_table::ScrollTable;
use super::slot::part;
use crate::history::ObjectKey;
use crate::model::Model;
use crate::on_screen::on_screen;
use crate::throttle::throttled_on_screen;
use crate::view_state::ViewState;
use history::History;
use leptos::prelude::*;
use listing::ListingNote;

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

/// The rows the filters show, sorted by key as the model keeps them (not
/// tracking the objects: the caller redraws at its own pace).
fn shown_rows(model: Model, view: ViewState) -> Vec<ObjectRow> {
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
            .collect()
    })
}

/// The table of objects, a fixed set of row slots scrolled over them, and
/// the chosen one's history under it.
#[component]
pub fn Objects() -> impl IntoView {
    let model = expect_context::<Model>();
    let view = expect_context::<ViewState>();
    let chosen: RwSignal<Option<ObjectKey>> = RwSignal::new(None);
    let section = NodeRef::<leptos::html::Section>::new();
    let redraw = throttled_on_screen(REDRAW_MS, on_screen(section), move || model.objects.track());
    let rows = Memo::new(move |_| {
        redraw.track();
        shown_rows(model, view)
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
        <section node_ref=section class="objects panel" aria-label="Current objects" data-objects=move || total.get()>
            <h2>"Objects " <small>"the informer's cache: click one for its history"</small></h2>
            <ListingNote/>
            <ScrollTable
                class="scroll"
                style=format!("max-height:{VIEWPORT_H}px")
                scroll_top
                columns=&["kind", "namespace/name", "RV", "events"]
                body_id="objects"
                choose
            >
                <tr class="spacer" style=move || format!("height:{}px", first.get() as f64 * ROW_H)></tr>
                {(0..SLOTS)
                    .map(|i| {
                        let row = Memo::new(move |_| rows.with(|r| r.get(first.get() + i).cloned()));
                        object_slot(row.into(), chosen)
                    })
                    .collect_view()}
                <tr class="spacer" style=move || format!("height:{}px", below())></tr>
            </ScrollTable>
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
