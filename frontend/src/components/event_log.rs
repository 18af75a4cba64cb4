//! The recent events as a virtualised list (only the rows in view exist in
//! the page, redrawn in place at most [`REDRAW_MS`] apart), each with a
//! waterfall of its stage times; click one to follow its token and read
//! its detail. While a row has the keyboard's focus the list holds still
//! (the events that arrive meanwhile are counted above it), so that the
//! row under the focus, and the one Enter follows, stays the event the
//! reader chose.

use super::event_detail::{Chosen, EventDetail};
use super::scroll_table::ScrollTable;
use crate::detail;
use crate::event_row::EventRow;
use crate::interval::interval;
use crate::model::Model;
use crate::narration::etcd_notifies;
use crate::on_screen::on_screen;
use crate::player::Player;
use crate::throttle::throttled_on_screen;
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
    /// Events that pass the filters but arrived after the list was held,
    /// and are not in it.
    newer: usize,
    /// The newest event this window was drawn from (held or not): where a
    /// hold begins, so that the rows on screen are the rows held.
    newest: u64,
}

impl PartialEq for Window {
    /// Rows are equal when their `seq` is: the events themselves never change.
    fn eq(&self, other: &Self) -> bool {
        self.first == other.first
            && self.total == other.total
            && self.newer == other.newer
            && self.rows.len() == other.rows.len()
            && self
                .rows
                .iter()
                .zip(&other.rows)
                .all(|(a, b)| a.seq == b.seq)
    }
}

/// The window of `count` rows from `first` of the events `filters` show,
/// newest first, none newer than `held` when the list is held, cloning
/// only the rows in it.
fn window(
    events: &VecDeque<EventRow>,
    filters: &crate::filters::Filters,
    first: usize,
    count: usize,
    held: Option<u64>,
) -> Window {
    let held = held.unwrap_or(u64::MAX);
    // Events are in the order of their seq: the newer ones are at the end.
    let newer_all = events.iter().rev().take_while(|r| r.seq > held).count();
    let kept = events.iter().rev().skip(newer_all);
    let (total, rows, newer) = if filters.is_empty() {
        let rows = kept.skip(first).take(count).cloned().collect();
        (events.len() - newer_all, rows, newer_all)
    } else {
        let newer = events
            .iter()
            .rev()
            .take(newer_all)
            .filter(|r| filters.shows(&r.event))
            .count();
        let mut total = 0;
        let mut rows = Vec::new();
        for row in kept.filter(|r| filters.shows(&r.event)) {
            if total >= first && rows.len() < count {
                rows.push(row.clone());
            }
            total += 1;
        }
        (total, rows, newer)
    };
    Window {
        first: first.min(total),
        total,
        rows,
        newer,
        newest: events.iter().rev().nth(newer_all).map_or(0, |r| r.seq),
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
                // The count is a value of this closure, not a closure in the
                // note (see `crate::components`).
                {move || {
                    let newer = shown.with(|w| w.newer);
                    (newer != 0).then(|| view! {
                        <span class="held-note">
                            {format!(" · held while a row has the focus: {newer} newer above")}
                        </span>
                    })
                }}
                " · click one to follow its token and read its detail"
            </small>
            <super::bookmark_filter::BookmarkFilter/>
        </h2>
    }
}

/// The rows to draw: the window at `scroll_top` of the events that pass
/// the filters, taken again at each `redraw`. While `keyboard` is true (a
/// row has the keyboard's focus) the window is held at the newest row on
/// screen when it came: the model may hold newer events not drawn yet.
fn shown_window(
    model: Model,
    view: ViewState,
    scroll_top: RwSignal<f64>,
    redraw: ReadSignal<u64>,
    keyboard: RwSignal<bool>,
) -> Memo<Window> {
    let drawn_newest = StoredValue::new(0_u64);
    let held = Memo::new(move |before: Option<&Option<u64>>| {
        keyboard.get().then(|| {
            before
                .copied()
                .flatten()
                .unwrap_or_else(|| drawn_newest.get_value())
        })
    });
    Memo::new(move |_| {
        redraw.track();
        let filters = view.filters();
        let first = ((scroll_top.get() / ROW_H) as usize).saturating_sub(OVERSCAN);
        let count = (VIEWPORT_H / ROW_H) as usize + 2 * OVERSCAN;
        let held = held.get();
        let w = model
            .events
            .with_untracked(|e| window(e, &filters, first, count, held));
        drawn_newest.set_value(w.newest);
        w
    })
}

/// Recent events, newest first.
#[component]
pub fn EventLog() -> impl IntoView {
    let model = expect_context::<Model>();
    let view = expect_context::<ViewState>();
    let scroll_top = RwSignal::new(0.0_f64);
    let section = NodeRef::<leptos::html::Section>::new();
    let redraw = throttled_on_screen(REDRAW_MS, on_screen(section), move || model.events.track());
    let keyboard = RwSignal::new(false);
    let shown = shown_window(model, view, scroll_top, redraw, keyboard);
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
            node_ref=section
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
                keyboard
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filters::Filters;
    use crate::test_events::pod_event;
    use std::sync::Arc;
    use watchlife_protocol::EventType;

    /// Events 1..=n, pods `p{seq % 2}`.
    fn events(n: u64) -> VecDeque<EventRow> {
        (1..=n)
            .map(|seq| EventRow {
                seq,
                event: Arc::new(pod_event(
                    EventType::Modified,
                    &format!("p{}", seq % 2),
                    &seq.to_string(),
                    &[],
                )),
            })
            .collect()
    }

    fn seqs(w: &Window) -> Vec<u64> {
        w.rows.iter().map(|r| r.seq).collect()
    }

    #[test]
    fn a_held_list_keeps_its_rows_and_counts_the_newer_events() {
        let all = events(10);
        let live = window(&all, &Filters::default(), 0, 3, None);
        assert_eq!(
            (seqs(&live), live.total, live.newer),
            (vec![10, 9, 8], 10, 0)
        );

        assert_eq!(live.newest, 10);
        let held = window(&all, &Filters::default(), 0, 3, Some(7));
        assert_eq!((seqs(&held), held.total, held.newer), (vec![7, 6, 5], 7, 3));
        assert_eq!(held.newest, 7);
        let scrolled = window(&all, &Filters::default(), 2, 3, Some(7));
        assert_eq!(seqs(&scrolled), [5, 4, 3]);

        let odd = Filters {
            search: "p1".into(),
            ..Filters::default()
        };
        let held = window(&all, &odd, 0, 2, Some(7));
        assert_eq!((seqs(&held), held.total, held.newer), (vec![7, 5], 4, 1));
    }
}
