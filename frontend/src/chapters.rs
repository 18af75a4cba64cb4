//! A recording's markers: the moments watchlife finds in it (a first LIST,
//! the end of a streaming list, a 410 Gone, a relist, a slow watcher
//! closed, a resync) and those its author names (`markers=` in the replay
//! page's address). The timeline lists them; played over, each is a
//! chapter: it is told to the page embedding the player, and with
//! `pause_at_markers=1` the replay stops there, one step of a guided tour.

use crate::narration::reflector_state_short;
use crate::notice::reflector_alarming;
use std::collections::BTreeSet;
use watchlife_protocol::{EventType, FrameBody, RecordedFrame, ReflectorState};

/// A moment worth jumping to, drawn on the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    pub t_ms: u64,
    pub label: String,
    pub alarming: bool,
}

/// Most markers an address may name: far more than a tour has chapters,
/// few enough that a wrong address cannot flood the timeline.
const MAX_AUTHORED: usize = 100;

/// The markers an author wrote, `T:LABEL;T:LABEL` with `T` in seconds of
/// the recording (`12.5:the first relist`). Entries that do not read so
/// are skipped: a docs page's typo loses one marker, not the player.
pub fn authored(spec: &str) -> Vec<Marker> {
    spec.split(';')
        .filter_map(|entry| {
            let (t, label) = entry.split_once(':').unwrap_or((entry, ""));
            let seconds: f64 = t.trim().parse().ok().filter(|s: &f64| s.is_finite())?;
            Some(Marker {
                t_ms: (seconds.max(0.0) * 1000.0).round() as u64,
                label: label.trim().to_string(),
                alarming: false,
            })
        })
        .take(MAX_AUTHORED)
        .collect()
}

/// Every marker of a recording: those found in `frames` and the `authored`
/// ones, in time order (an authored marker first at the same moment).
pub fn all(frames: &[RecordedFrame], authored: Vec<Marker>) -> Vec<Marker> {
    let mut marks = authored;
    marks.extend(found(frames));
    marks.sort_by_key(|m| m.t_ms);
    marks
}

/// The moments found in a recording: each resource's first complete list
/// (a LIST or the end of a streaming list; resources listed in the same
/// frame's moment share one marker), a Reflector in trouble (410, relist,
/// backoff), an ERROR event, a slow watcher closed by a watch cache, a
/// viewer resynced, a controller's tap disconnected.
fn found(frames: &[RecordedFrame]) -> Vec<Marker> {
    let mut marks: Vec<Marker> = Vec::new();
    let mut listed = BTreeSet::new();
    let mut closed = 0;
    for f in frames {
        let mark = |label: String, alarming| Marker {
            t_ms: f.t_ms,
            label,
            alarming,
        };
        match &f.frame.body {
            FrameBody::Reflector(u) => match &u.state {
                ReflectorState::ListFinished { .. } | ReflectorState::InitialEventsEnd { .. }
                    if listed.insert(&u.resource) =>
                {
                    let how = match u.state {
                        ReflectorState::ListFinished { .. } => "listed",
                        _ => "listed by a streaming list",
                    };
                    match marks.last_mut() {
                        Some(last) if last.t_ms == f.t_ms && last.label.ends_with(how) => {
                            let resources = last.label.trim_end_matches(how).trim_end();
                            last.label = format!("{resources}, {} {how}", u.resource);
                        }
                        _ => marks.push(mark(format!("{} {how}", u.resource), false)),
                    }
                }
                state if reflector_alarming(state) => marks.push(mark(
                    format!("{}: {}", u.resource, reflector_state_short(state)),
                    true,
                )),
                _ => {}
            },
            FrameBody::Event(e) if e.event_type == EventType::Error => {
                marks.push(mark(format!("{}: ERROR", e.target.resource), true))
            }
            FrameBody::WatchCache(report) => {
                let now: u64 = report.caches.iter().map(|c| c.closed_slow).sum();
                if now > closed {
                    marks.push(mark("a slow watcher closed".into(), false));
                }
                closed = now;
            }
            FrameBody::Resync(_) => marks.push(mark("resynced: frames were missed".into(), true)),
            FrameBody::Tap(t) if t.left.is_some() => {
                marks.push(mark(format!("{} disconnected", t.controller), false))
            }
            _ => {}
        }
    }
    marks
}

/// The index of the first marker played over when what is shown moves from
/// `from_ms` to `to_ms` (a marker at `to_ms` is reached; one at `from_ms`
/// was reached before). `None` when the move passes none, or goes back.
pub fn crossed(markers: &[Marker], from_ms: f64, to_ms: f64) -> Option<usize> {
    markers.iter().position(|m| {
        let t = m.t_ms as f64;
        from_ms < t && t <= to_ms
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t_ms: u64) -> Marker {
        Marker {
            t_ms,
            label: String::new(),
            alarming: false,
        }
    }

    #[test]
    fn authored_markers_read_seconds_and_labels_and_skip_what_does_not_read() {
        let marks = authored("1.5:the first LIST; 12 : a relist;oops;-3:before;NaN:x;7");
        let read: Vec<_> = marks.iter().map(|m| (m.t_ms, m.label.as_str())).collect();
        assert_eq!(
            read,
            [
                (1500, "the first LIST"),
                (12000, "a relist"),
                (0, "before"),
                (7000, "")
            ]
        );
        assert!(authored("").is_empty());
        assert_eq!(authored(&"1:x;".repeat(500)).len(), MAX_AUTHORED);
    }

    #[test]
    fn a_marker_is_crossed_once_when_play_reaches_it_and_never_going_back() {
        let marks = [at(1000), at(2000)];
        assert_eq!(crossed(&marks, 0.0, 999.0), None);
        assert_eq!(crossed(&marks, 999.0, 1000.0), Some(0));
        assert_eq!(crossed(&marks, 1000.0, 1500.0), None, "reached already");
        assert_eq!(crossed(&marks, 1500.0, 2500.0), Some(1));
        assert_eq!(crossed(&marks, 500.0, 2500.0), Some(0), "the first of two");
        assert_eq!(crossed(&marks, 2500.0, 0.0), None, "a seek back");
    }
}
