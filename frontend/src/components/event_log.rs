//! The recent events as a virtualised list (only the rows in view exist in
//! the page, redrawn in place at most [`REDRAW_MS`] apart), each with a
//! waterfall of its stage times; click one to follow its token and read
//! its detail.

use super::event_detail::{Chosen, EventDetail};
use super::scroll_table::ScrollTable;
use crate::detail;
use crate::event_row::EventRow;
use crate::interval::interval;
use crate::model::Model;
use crate::narration::etcd_notifies;
use crate::player::Player;
use crate::throttle::throttled;
use crate::view_state::ViewState;
use leptos::prelude::*;
use std::collections::VecDeque;
use watchlife_protocol::Stage;

/// Height of one row in px; the stylesheet gives rows exactly this height.
const ROW_H: f64 = 30.0;
/// Height of the scrolling area in px.
const VIEWPORT_H: f64 = 360.0;
/// Rows drawn beyond the visible ones, so a fast scroll shows no gap.
const OVERSCAN: usize = 6;
/// Width of the waterfall drawing.
const WATERFALL_W: f64 = 180.0;
/// Shortest time between two redraws of the log as events arrive: ten a
/// second still reads as live, and beyond a few events a second the rows
/// are replaced faster than anyone can read them, so drawing every frame
/// would only cost the animation its frames.
const REDRAW_MS: f64 = 100.0;

/// The rows in view: the events that pass the filters, newest first, from
/// the `first` to at most `first + count`.
#[derive(Debug, Clone)]
struct Window {
    first: usize,
    /// Events that pass the filters.
    total: usize,
    rows: Vec<EventRow>,
}

impl PartialEq for Window {
    /// Rows are equal when their `seq` is: the events themselves never change.
    fn eq(&self, other: &Self) -> bool {
        self.first == other.first
            && self.total == other.total
            && self.rows.len() == other.rows.len()
            && self
                .rows
                .iter()
                .zip(&other.rows)
                .all(|(a, b)| a.seq == b.seq)
    }
}

/// The window of `count` rows from `first` of the events `filters` show,
/// newest first, cloning only the rows in it.
fn window(
    events: &VecDeque<EventRow>,
    filters: &crate::filters::Filters,
    first: usize,
    count: usize,
) -> Window {
    let (total, rows) = if filters.is_empty() {
        let rows = events
            .iter()
            .rev()
            .skip(first)
            .take(count)
            .cloned()
            .collect();
        (events.len(), rows)
    } else {
        let mut total = 0;
        let mut rows = Vec::new();
        for row in events.iter().rev().filter(|r| filters.shows(&r.event)) {
            if total >= first && rows.len() < count {
                rows.push(row.clone());
            }
            total += 1;
        }
        (total, rows)
    };
    Window {
        first: first.min(total),
        total,
        rows,
    }
}

/// The row of the event whose row `ev` happened in, if it is in view.
fn row_of(ev: &web_sys::Event, shown: Memo<Window>) -> Option<EventRow> {
    let seq = event_target::<web_sys::Element>(ev)
        .closest("tr.event-row")
        .ok()
        .flatten()?
        .get_attribute("data-seq")?
        .parse::<u64>()
        .ok()?;
    shown.with_untracked(|w| w.rows.iter().find(|r| r.seq == seq).cloned())
}

/// The click handler of the log: the event clicked is followed (its token)
/// and its detail shown. One listener for all the rows, which are redrawn
/// many times a second: listeners of their own would be taken off and put
/// back on each redraw.
fn follower(
    shown: Memo<Window>,
    notifies: Memo<bool>,
    detail: RwSignal<Chosen>,
) -> impl Fn(&web_sys::Event) + Copy + 'static {
    let view = expect_context::<ViewState>();
    let player = expect_context::<Player>();
    move |ev: &web_sys::Event| {
        if let Some(row) = row_of(ev, shown) {
            let text = detail::text(row.seq, &row.event, notifies.get_untracked());
            detail.set(Some((row.event.clone(), text)));
            player.follow(row, view.paused.get_untracked());
        }
    }
}

/// The log's title: how many events the filters show, how many older ones
/// were dropped (read at each `redraw`), what a click does, and the
/// BOOKMARKs' interval with the box that hides them.
#[component]
fn LogHeading(
    shown: Memo<Window>,
    dropped: RwSignal<u64>,
    redraw: ReadSignal<u64>,
) -> impl IntoView {
    let dropped = move || {
        redraw.track();
        dropped.get_untracked()
    };
    view! {
        <h2>
            "Events "
            <small>
                {move || format!("{} shown", shown.with(|w| w.total))}
                {move || match dropped() {
                    0 => String::new(),
                    n => format!(" · {n} older events dropped"),
                }}
                " · click one to follow its token and read its detail"
            </small>
            <super::bookmark_filter::BookmarkFilter/>
        </h2>
    }
}

/// Recent events, newest first.
#[component]
pub fn EventLog() -> impl IntoView {
    let model = expect_context::<Model>();
    let view = expect_context::<ViewState>();
    let scroll_top = RwSignal::new(0.0_f64);
    let redraw = throttled(REDRAW_MS, move || model.events.track());
    let shown = Memo::new(move |_| {
        redraw.track();
        let filters = view.filters();
        let first = ((scroll_top.get() / ROW_H) as usize).saturating_sub(OVERSCAN);
        let count = (VIEWPORT_H / ROW_H) as usize + 2 * OVERSCAN;
        model
            .events
            .with_untracked(|e| window(e, &filters, first, count))
    });
    let received = move || {
        redraw.track();
        model.events.with_untracked(|e| e.len() as u64) + model.dropped.get_untracked()
    };
    // What the etcd mark is, for the words of a negative interval.
    let notifies = Memo::new(move |_| {
        model
            .hello
            .with(|h| etcd_notifies(h.as_ref().map(|h| &h.source)))
    });
    // The detail of the event clicked, shown under the log.
    let detail: RwSignal<Chosen> = RwSignal::new(None);
    let follow = follower(shown, notifies, detail);
    view! {
        <section
            class="event-log panel"
            aria-label="Live events"
            data-received=received
        >
            <LogHeading shown dropped=model.dropped redraw/>
            <ScrollTable
                class="scroll log-scroll"
                style=format!("height:{VIEWPORT_H}px")
                scroll_top
                columns=&["seq", "event", "kind", "namespace/name", "RV", "stages"]
                body_id="events"
                choose=follow
            >
                <tr
                    class="spacer"
                    style=move || shown.with(|w| format!("height:{}px", w.first as f64 * ROW_H))
                ></tr>
                // Row by row in place: a redraw updates the rows drawn
                // before (their attributes and text) to show the window's
                // events, and adds or removes rows only where the count
                // changed. Not a keyed `<For>`: leptos 0.8's held on to
                // something of every row it ever drew (measured: about
                // 130 bytes of wasm memory a row, so 1.5 MiB a minute on a
                // busy stream, which no renewal of its owner gave back).
                {move || {
                    let notifies = notifies.get();
                    shown
                        .with(|w| w.rows.clone())
                        .into_iter()
                        .map(|row| view! { <Row row notifies/> })
                        .collect_view()
                }}
                <tr
                    class="spacer"
                    style=move || {
                        shown.with(|w| {
                            let after = w.total - w.first - w.rows.len();
                            format!("height:{}px", after as f64 * ROW_H)
                        })
                    }
                ></tr>
            </ScrollTable>
            <EventDetail detail/>
        </section>
    }
}

/// How an event was delivered, for its row's `data-mark`: `resync`,
/// `dfsu` (DeletedFinalStateUnknown), `initial-list` (OnAdd's
/// isInInitialList), or empty.
fn mark(e: &watchlife_protocol::WatchEvent) -> &'static str {
    if e.handled.final_state_unknown {
        "dfsu"
    } else if e.handled.resync {
        "resync"
    } else if e.handled.in_initial_list {
        "initial-list"
    } else {
        ""
    }
}

#[component]
fn Row(row: EventRow, notifies: bool) -> impl IntoView {
    let e = row.event.clone();
    let kind = e.event_type.as_str();
    let seq = row.seq;
    let delivery = detail::delivery(&e);
    view! {
        <tr
            class="event-row"
            data-type=kind
            data-rv=e.resource_version.clone()
            data-resource=e.target.resource.clone()
            data-namespace=e.target.namespace.clone().unwrap_or_default()
            data-initial=e.initial.to_string()
            data-coalesced=e.coalesced.to_string()
            data-mark=mark(&e)
            data-seq=seq
            tabindex="0"
            title="Follow this event's token"
        >
            <td class="seq">{seq}</td>
            <td>
                <span class=format!("badge {}", kind.to_lowercase())>{kind}</span>
                {e.initial.then_some(" listed")}
                {e.coalesced.then(|| view! { <span class="merged-note" title="its key was already waiting in the workqueue">" merged"</span> })}
                {delivery.map(|_| view! {
                    <span class="delivery-note">
                        {if e.handled.final_state_unknown {
                            " DeletedFinalStateUnknown (found by relist)"
                        } else if e.handled.resync {
                            " resync"
                        } else {
                            " isInInitialList"
                        }}
                    </span>
                })}
            </td>
            <td class="kind">{e.target.kind.clone()}</td>
            <td class="name">{e.target.key()}</td>
            <td class="rv">{e.resource_version.clone()}</td>
            <td class="waterfall-cell"><Waterfall row notifies/></td>
        </tr>
    }
}

/// One bar per observed stage, from the previous stage's time to this one's,
/// on a scale spanning every mark of the event. A stage read before the one
/// before it has its bar drawn backwards, marked `negative`; its label says
/// so with the signed interval (see [`crate::detail`]).
#[component]
fn Waterfall(row: EventRow, notifies: bool) -> impl IntoView {
    let marks: Vec<(Stage, u64)> = row.event.stages.iter().map(|(s, m)| (*s, m.at)).collect();
    let start = marks.iter().map(|m| m.1).min().unwrap_or(0);
    let end = marks.iter().map(|m| m.1).max().unwrap_or(0);
    let span = (end - start).max(1) as f64;
    let x = |at: u64| (at - start) as f64 / span * WATERFALL_W;
    let bars: Vec<(Stage, f64, f64, bool)> = marks
        .windows(2)
        .map(|w| {
            let (from, to) = (x(w[0].1), x(w[1].1));
            let back = interval(w[0].1, w[1].1) < 0;
            (w[1].0, from.min(to), (to - from).abs().max(2.0), back)
        })
        .collect();
    // Backward bars overlap the forward ones: drawn last, across the whole
    // height, so that they are not hidden.
    let (forward, backward): (Vec<_>, Vec<_>) = bars.into_iter().partition(|b| !b.3);
    let lines = detail::lines(&row.event, notifies);
    let label = if marks.len() < 2 && lines.is_empty() {
        "one stage measured".to_string()
    } else {
        lines.join("; ")
    };
    let aria = label.clone();
    view! {
        <svg class="waterfall" width=WATERFALL_W height=12 role="img" aria-label=aria>
            <title>{label}</title>
            {forward
                .into_iter()
                .chain(backward)
                .map(|(s, x, w, back)| view! {
                    <rect
                        class=format!("bar {}{}", super::pipeline::stage_id(s), if back { " negative" } else { "" })
                        x=x y=if back { 0 } else { 2 } width=w height=if back { 12 } else { 8 } rx=2
                    />
                })
                .collect_view()}
        </svg>
    }
}
