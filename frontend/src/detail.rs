//! One event's life in lines of text: how it was delivered, each stage with
//! the interval from the one before, each listener's call, the reconcile.
//! The event log's waterfall is labelled with these lines and the event
//! detail lists them.

use crate::interval::{describe, interval};
use crate::micros::format_micros;
use watchlife_protocol::{Origin, Stage, WatchEvent};

/// How the event was delivered, when not as an ordinary watch event.
pub fn delivery(e: &WatchEvent) -> Option<&'static str> {
    if e.handled.final_state_unknown {
        Some("DeletedFinalStateUnknown (found by relist)")
    } else if e.handled.resync {
        Some("resync: the same resourceVersion handed to the handlers again")
    } else if e.handled.in_initial_list {
        Some("OnAdd(obj, isInInitialList=true): part of the informer's first list")
    } else {
        None
    }
}

/// Each observed stage after the first, with the interval from the one
/// before it (`etcd_notifies`: see [`crate::interval::negative_reason`]).
pub fn stage_lines(e: &WatchEvent, etcd_notifies: bool) -> Vec<String> {
    let marks: Vec<(Stage, u64)> = e.stages.iter().map(|(s, m)| (*s, m.at)).collect();
    marks
        .windows(2)
        .map(|w| {
            let us = interval(w[0].1, w[1].1);
            format!("{} {}", w[1].0.label(), describe(w[0].0, us, etcd_notifies))
        })
        .collect()
}

/// The demo apiserver's hops of the event, each with its wait, where the
/// server reported them: through etcd's watch to the Cacher's Reflector,
/// the `incoming` queue, the dispatcher, this watch's buffer, its writer.
pub fn server_lines(e: &WatchEvent) -> Vec<String> {
    let Some(path) = e.server.as_deref() else {
        return Vec::new();
    };
    let wait = |from: u64, to: u64| format_micros(to as i64 - from as i64);
    let mut out = Vec::new();
    match path.origin {
        Origin::Synthetic => out.push(
            "synthetic ADDED: the watch started from RV 0, so the watch cache sent every object as ADDED; no change was committed for it, so it has no etcd or watch cache time".into(),
        ),
        Origin::Replayed => out.push(
            "replayed from the watch cache's window to a watch that started from an older RV: commit and cache times are the change's own, the buffer and stream times this watch's".into(),
        ),
        Origin::Live => {}
    }
    let committed = e.stages.get(&Stage::Etcd).map(|m| m.at);
    let cached = e.stages.get(&Stage::WatchCache);
    if let (Some(c), Some(r)) = (committed, path.reflected) {
        out.push(format!(
            "read from etcd's watch by the Cacher's Reflector {} after the commit",
            wait(c, r)
        ));
    }
    if let Some(cached) = cached {
        if let Some(depth) = cached.depth {
            out.push(format!(
                "queued in the Cacher's incoming queue behind {} other events",
                depth.saturating_sub(1)
            ));
        }
        if let Some(d) = path.dispatched {
            out.push(format!(
                "taken by the dispatcher after {} in incoming",
                wait(cached.at, d.at)
            ));
        }
    }
    let buffered_after = path
        .dispatched
        .map(|d| {
            format!(
                ", {} after the dispatcher took it",
                wait(d.at, path.buffered.at)
            )
        })
        .unwrap_or_default();
    out.push(format!(
        "put in this watch's buffer at depth {}{buffered_after}",
        path.buffered.depth.unwrap_or(1)
    ));
    out.push(format!(
        "written on this watch's stream after {} in its buffer",
        wait(path.buffered.at, path.written)
    ));
    out
}

/// Each listener's call: its callback, its buffer's depth, when it took the
/// notification (from the handlers' mark) and how long its handler ran.
pub fn call_lines(e: &WatchEvent) -> Vec<String> {
    let handlers = e.stages.get(&Stage::Handlers).map(|m| m.at);
    e.handled
        .calls
        .iter()
        .map(|c| {
            let taken = handlers
                .map(|h| {
                    let us = interval(h, c.dequeued);
                    format!(", dequeued {}", describe(Stage::Handlers, us, false))
                })
                .unwrap_or_default();
            let ran = interval(c.dequeued, c.returned);
            format!(
                "{}: {} at buffer depth {}{taken}, returned {}",
                c.listener,
                c.callback.as_str(),
                c.depth,
                describe(Stage::Handlers, ran, false)
            )
        })
        .collect()
}

/// The reconcile that covered the event's key: its worker, when it started
/// (from the workqueue's mark), how long it ran, and the resourceVersion it
/// read from the Indexer.
pub fn reconcile_line(e: &WatchEvent) -> Option<String> {
    let r = e.handled.reconcile.as_ref()?;
    let waited = e
        .stages
        .get(&Stage::Workqueue)
        .map(|m| {
            let us = interval(m.at, r.started);
            format!(", started {}", describe(Stage::Workqueue, us, false))
        })
        .unwrap_or_default();
    let read = match &r.seen_resource_version {
        Some(rv) => format!("read RV {rv}"),
        None => "found the object gone".into(),
    };
    let requeued = r
        .requeued_after_ms
        .map(|ms| format!("; failed, requeued after {ms} ms"))
        .unwrap_or_default();
    Some(format!(
        "reconcile by worker {}{waited}, ran {}, {read}{requeued}",
        r.worker,
        describe(Stage::Reconcile, interval(r.started, r.finished), false)
    ))
}

/// Every line of the event's detail, in the order above; the Indexer's
/// previous resourceVersion after the delivery.
pub fn lines(e: &WatchEvent, etcd_notifies: bool) -> Vec<String> {
    let mut out: Vec<String> = delivery(e).map(String::from).into_iter().collect();
    if let Some(old) = &e.handled.old_resource_version {
        out.push(format!("the Indexer held RV {old} before"));
    }
    out.extend(server_lines(e));
    out.extend(stage_lines(e, etcd_notifies));
    out.extend(call_lines(e));
    out.extend(reconcile_line(e));
    out
}

/// The whole detail of event `seq`: a heading, then [`lines`], one per line.
pub fn text(seq: u64, e: &WatchEvent, etcd_notifies: bool) -> String {
    let mut text = format!(
        "Event {seq}: {} {} {} at RV {}",
        e.event_type.as_str(),
        e.target.kind,
        e.target.key(),
        e.resource_version
    );
    for line in lines(e, etcd_notifies) {
        text.push_str("\n· ");
        text.push_str(&line);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_events::pod_event;
    use watchlife_protocol::{Callback, EventType, Handled, HandlerCall, ReconcileRun, StageMark};

    fn event(stages: &[(Stage, u64)], handled: Handled) -> WatchEvent {
        WatchEvent {
            handled,
            ..pod_event(EventType::Modified, "web-1", "12", stages)
        }
    }

    #[test]
    fn stages_keep_their_sign_and_say_when_they_were_read_at_once() {
        let e = event(
            &[
                (Stage::Etcd, 1_120),
                (Stage::Reflector, 1_000),
                (Stage::Fifo, 1_010),
                (Stage::Indexer, 1_010),
            ],
            Handled::default(),
        );
        assert_eq!(
            stage_lines(&e, true),
            [
                "Reflector −120 µs (etcd's watch heard of it after the apiserver's watch did)",
                "FIFO +10 µs",
                "Indexer ±0 (same instant: both read at once)",
            ]
        );
        assert!(stage_lines(&e, false)[0].ends_with("(the later stage's clock read came first)"));
    }

    #[test]
    fn calls_and_the_reconcile_are_listed_with_their_times() {
        let handled = Handled {
            in_initial_list: false,
            old_resource_version: Some("11".into()),
            resync: true,
            calls: vec![
                HandlerCall {
                    listener: "scheduler: scheduled".into(),
                    callback: Callback::OnUpdate,
                    depth: 2,
                    dequeued: 130,
                    returned: 145,
                },
                HandlerCall {
                    listener: "controller".into(),
                    callback: Callback::OnUpdate,
                    depth: 0,
                    dequeued: 100,
                    returned: 100,
                },
            ],
            reconcile: Some(ReconcileRun {
                worker: 1,
                started: 400,
                finished: 1_600,
                seen_resource_version: Some("12".into()),
                requeued_after_ms: Some(5),
            }),
            ..Handled::default()
        };
        let e = event(&[(Stage::Handlers, 100), (Stage::Workqueue, 200)], handled);
        assert_eq!(
            lines(&e, false),
            [
                "resync: the same resourceVersion handed to the handlers again",
                "the Indexer held RV 11 before",
                "workqueue +100 µs",
                "scheduler: scheduled: OnUpdate at buffer depth 2, dequeued +30 µs, returned +15 µs",
                "controller: OnUpdate at buffer depth 0, dequeued ±0 (same instant: both read at once), returned ±0 (same instant: both read at once)",
                "reconcile by worker 1, started +200 µs, ran +1.20 ms, read RV 12; failed, requeued after 5 ms",
            ]
        );
    }

    #[test]
    fn the_detail_is_a_heading_and_a_line_each() {
        let e = event(&[(Stage::Fifo, 5), (Stage::Indexer, 9)], Handled::default());
        assert_eq!(
            text(7, &e, false),
            "Event 7: MODIFIED Pod default/web-1 at RV 12\n· Indexer +4 µs"
        );
    }

    #[test]
    fn a_relist_deletion_is_named_as_client_go_names_it() {
        let e = event(
            &[],
            Handled {
                final_state_unknown: true,
                resync: false,
                ..Handled::default()
            },
        );
        assert_eq!(
            delivery(&e),
            Some("DeletedFinalStateUnknown (found by relist)")
        );
    }

    #[test]
    fn the_server_path_is_told_hop_by_hop_and_a_synthetic_added_has_no_commit() {
        let mut e = event(
            &[(Stage::Etcd, 1_000), (Stage::WatchStream, 1_900)],
            Handled::default(),
        );
        e.stages.insert(
            Stage::WatchCache,
            StageMark {
                at: 1_050,
                depth: Some(3),
            },
        );
        e.server = Some(Box::new(watchlife_protocol::ServerPath {
            origin: Origin::Live,
            reflected: Some(1_040),
            dispatched: Some(StageMark {
                at: 1_250,
                depth: Some(3),
            }),
            buffered: StageMark {
                at: 1_260,
                depth: Some(2),
            },
            written: 1_900,
        }));
        assert_eq!(
            server_lines(&e),
            [
                "read from etcd's watch by the Cacher's Reflector 40 µs after the commit",
                "queued in the Cacher's incoming queue behind 2 other events",
                "taken by the dispatcher after 200 µs in incoming",
                "put in this watch's buffer at depth 2, 10 µs after the dispatcher took it",
                "written on this watch's stream after 640 µs in its buffer",
            ]
        );
        let mut synthetic = event(&[(Stage::WatchStream, 1_900)], Handled::default());
        synthetic.server = Some(Box::new(watchlife_protocol::ServerPath {
            origin: Origin::Synthetic,
            reflected: None,
            dispatched: None,
            buffered: StageMark::at(1_800),
            written: 1_900,
        }));
        let lines = server_lines(&synthetic);
        assert!(lines[0].starts_with("synthetic ADDED"));
        assert!(lines.iter().all(|l| !l.contains("etcd's watch by")));
    }
}
