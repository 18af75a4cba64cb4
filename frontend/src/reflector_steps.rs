//! What an informer did, step by step, read from a recording's frames: the
//! requests its Reflectors made (LIST, WATCH, the streaming list's WATCH),
//! what the server answered that changed their course (410 Gone, the
//! initial-events-end BOOKMARK), and the handler calls only one release
//! makes (`isInInitialList`, `DeletedFinalStateUnknown`). The compare view
//! lines up two such lists, one per Kubernetes profile, and marks the steps
//! one side took and the other did not.
//!
//! Nothing here knows a scenario: every step comes from a frame.

use std::collections::BTreeMap;
use watchlife_protocol::{FrameBody, RecordedFrame, ReflectorState};

/// Where a request asked to start from, as client-go chooses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StartingPoint {
    /// `resourceVersion=0`: whatever state the watch cache holds.
    Any,
    /// `resourceVersion=""`: the most recent state, a consistent read.
    Latest,
    /// The last resourceVersion the Reflector synced to.
    LastSynced,
}

impl StartingPoint {
    fn of(resource_version: &str) -> StartingPoint {
        match resource_version {
            "0" => StartingPoint::Any,
            "" => StartingPoint::Latest,
            _ => StartingPoint::LastSynced,
        }
    }

    /// The query parameter as the request carries it.
    fn query(self) -> &'static str {
        match self {
            StartingPoint::Any => "resourceVersion=0",
            StartingPoint::Latest => "resourceVersion=\"\"",
            StartingPoint::LastSynced => "resourceVersion=<last synced>",
        }
    }
}

/// One kind of step, comparable across profiles (resources and exact
/// resourceVersions aside).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StepKind {
    /// A LIST went out; `limit` 0 is unpaged.
    List { from: StartingPoint, limit: u64 },
    /// The LIST's last page came back.
    ListReturned,
    /// A plain WATCH went out.
    Watch,
    /// A streaming list went out: one WATCH with `sendInitialEvents=true`.
    StreamingList { from: StartingPoint },
    /// The BOOKMARK annotated `k8s.io/initial-events-end` closed a
    /// streaming list.
    InitialEventsEnd,
    /// The server refused the streaming list; the Reflector lists instead.
    StreamingListRefused,
    /// A watch ended (its timeout, or the server closed it).
    WatchEnded,
    /// The server answered 410 Gone.
    Gone,
    /// The Reflector lists again from scratch, after its backoff.
    Relist,
    /// OnAdd called with `isInInitialList=true`.
    InInitialList,
    /// OnDelete called with a `DeletedFinalStateUnknown` found by a relist.
    FinalStateUnknown,
    /// A relisted object that had not changed, delivered as an OnUpdate
    /// resync.
    RelistedUnchanged,
}

impl StepKind {
    /// A short name for the page's attributes and tests.
    pub fn slug(self) -> &'static str {
        match self {
            StepKind::List { .. } => "list",
            StepKind::ListReturned => "list-returned",
            StepKind::Watch => "watch",
            StepKind::StreamingList { .. } => "streaming-list",
            StepKind::InitialEventsEnd => "initial-events-end",
            StepKind::StreamingListRefused => "streaming-list-refused",
            StepKind::WatchEnded => "watch-ended",
            StepKind::Gone => "gone",
            StepKind::Relist => "relist",
            StepKind::InInitialList => "in-initial-list",
            StepKind::FinalStateUnknown => "final-state-unknown",
            StepKind::RelistedUnchanged => "relisted-unchanged",
        }
    }

    /// The step as a Kubernetes reader knows it: the request, or the answer.
    pub fn label(self) -> String {
        match self {
            StepKind::List { from, limit: 0 } => format!("LIST ?{} (unpaged)", from.query()),
            StepKind::List { from, limit } => format!("LIST ?{}&limit={limit}", from.query()),
            StepKind::ListReturned => "LIST returned: the items and their resourceVersion".into(),
            StepKind::Watch => "WATCH ?resourceVersion=<last synced>".into(),
            StepKind::StreamingList { from } => {
                format!("WATCH ?sendInitialEvents=true&{}", from.query())
            }
            StepKind::InitialEventsEnd => "BOOKMARK k8s.io/initial-events-end".into(),
            StepKind::StreamingListRefused => "streaming list refused: LIST instead".into(),
            StepKind::WatchEnded => "watch ended: timeout or server close".into(),
            StepKind::Gone => "410 Gone: resourceVersion compacted".into(),
            StepKind::Relist => "relist after the backoff".into(),
            StepKind::InInitialList => "OnAdd(obj, isInInitialList=true)".into(),
            StepKind::FinalStateUnknown => "OnDelete(DeletedFinalStateUnknown)".into(),
            StepKind::RelistedUnchanged => "relisted, unchanged: OnUpdate as a resync".into(),
        }
    }

    /// Whether steps of this kind, in one list-watch cycle of one resource,
    /// are one step however many there are (handler calls: one per
    /// object), rather than one each (requests).
    fn once_per_cycle(self) -> bool {
        matches!(
            self,
            StepKind::InInitialList | StepKind::FinalStateUnknown | StepKind::RelistedUnchanged
        )
    }
}

/// One step, taken by one or more resources' Reflectors at about the same
/// point of their list-watch cycles.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub kind: StepKind,
    /// When the first resource took it, in ms since the recording started.
    pub t_ms: u64,
    /// The resources that took it, in the order they did.
    pub resources: Vec<String>,
    /// Taken by this profile only: the other profile's steps, lined up in
    /// order, have no such step here.
    pub differs: bool,
}

/// The steps of a recording, in the order they were first taken.
///
/// The same step of several resources is one step: the `n`th step of a
/// kind within a resource's `c`th list-watch cycle (cycles are counted by
/// relists) is grouped with the other resources' `n`th of that kind in
/// their `c`th cycle. Handler calls count once per cycle.
pub fn steps(frames: &[RecordedFrame]) -> Vec<Step> {
    // Per resource: its cycle, and how often it took each kind in it.
    let mut cycles: BTreeMap<String, (u32, BTreeMap<StepKind, u32>)> = BTreeMap::new();
    let mut groups: BTreeMap<(StepKind, u32, u32), usize> = BTreeMap::new();
    let mut out: Vec<Step> = Vec::new();
    for f in frames {
        let Some((resource, kind)) = step_of(&f.frame.body) else {
            continue;
        };
        let (cycle, seen) = cycles.entry(resource.to_string()).or_default();
        if kind == StepKind::Relist {
            *cycle += 1;
            seen.clear();
        }
        let taken = seen.entry(kind).or_insert(0);
        let occurrence = if kind.once_per_cycle() { 0 } else { *taken };
        *taken += 1;
        let at = *groups.entry((kind, *cycle, occurrence)).or_insert_with(|| {
            out.push(Step {
                kind,
                t_ms: f.t_ms,
                resources: Vec::new(),
                differs: false,
            });
            out.len() - 1
        });
        if !out[at].resources.iter().any(|r| r == resource) {
            out[at].resources.push(resource.to_string());
        }
    }
    out
}

/// The resource and the kind of step a frame records, if it is one.
fn step_of(body: &FrameBody) -> Option<(&str, StepKind)> {
    match body {
        FrameBody::Reflector(u) => {
            let kind = match &u.state {
                ReflectorState::ListStarted {
                    resource_version,
                    limit,
                } => StepKind::List {
                    from: StartingPoint::of(resource_version),
                    limit: *limit,
                },
                ReflectorState::ListFinished { .. } => StepKind::ListReturned,
                ReflectorState::WatchStarted { .. } => StepKind::Watch,
                ReflectorState::StreamingListStarted {
                    resource_version, ..
                } => StepKind::StreamingList {
                    from: StartingPoint::of(resource_version),
                },
                ReflectorState::InitialEventsEnd { .. } => StepKind::InitialEventsEnd,
                ReflectorState::StreamingListFailed { .. } => StepKind::StreamingListRefused,
                ReflectorState::WatchEnded { .. } => StepKind::WatchEnded,
                ReflectorState::Gone { .. } => StepKind::Gone,
                ReflectorState::Relist { .. } => StepKind::Relist,
                ReflectorState::ListProgress { .. }
                | ReflectorState::Bookmark { .. }
                | ReflectorState::Backoff { .. }
                | ReflectorState::Answered { .. } => return None,
            };
            Some((u.resource.as_str(), kind))
        }
        FrameBody::Event(e) => {
            let kind = if e.handled.final_state_unknown {
                StepKind::FinalStateUnknown
            } else if e.handled.in_initial_list {
                StepKind::InInitialList
            } else if e.handled.resync && e.initial {
                StepKind::RelistedUnchanged
            } else {
                return None;
            };
            Some((e.target.resource.as_str(), kind))
        }
        _ => None,
    }
}

/// Lines two profiles' steps up in order (their longest common sequence of
/// kinds) and marks, on each side, the steps the other side has no match
/// for.
pub fn mark_differences(left: &mut [Step], right: &mut [Step]) {
    let (n, m) = (left.len(), right.len());
    // common[i][j]: the longest common sequence of left[i..] and right[j..].
    let mut common = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            common[i][j] = if left[i].kind == right[j].kind {
                common[i + 1][j + 1] + 1
            } else {
                common[i + 1][j].max(common[i][j + 1])
            };
        }
    }
    left.iter_mut().for_each(|s| s.differs = true);
    right.iter_mut().for_each(|s| s.differs = true);
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        if left[i].kind == right[j].kind {
            left[i].differs = false;
            right[j].differs = false;
            i += 1;
            j += 1;
        } else if common[i + 1][j] >= common[i][j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
}

/// The latest step taken by `t_ms`, if any.
pub fn current(steps: &[Step], t_ms: f64) -> Option<usize> {
    steps.iter().rposition(|s| s.t_ms as f64 <= t_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use watchlife_protocol::parse_recording;

    fn shipped(name: &str) -> Vec<Step> {
        let path = format!(
            "{}/../static/scenarios/{name}.jsonl",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        steps(&parse_recording(&text).expect("a recording").frames)
    }

    fn kinds(steps: &[Step], differing: bool) -> Vec<&'static str> {
        steps
            .iter()
            .filter(|s| s.differs == differing)
            .map(|s| s.kind.slug())
            .collect()
    }

    #[test]
    fn the_two_profiles_differ_in_how_they_list_and_agree_on_the_rest() {
        let mut modern = shipped("compaction-relist");
        let mut old = shipped("compaction-relist-1.20");
        mark_differences(&mut modern, &mut old);
        let modern_only = kinds(&modern, true);
        let old_only = kinds(&old, true);
        assert!(modern_only.contains(&"streaming-list"), "{modern_only:?}");
        assert!(
            modern_only.contains(&"initial-events-end"),
            "{modern_only:?}"
        );
        assert!(!modern_only.contains(&"gone"), "both get 410 Gone");
        assert!(old_only.contains(&"list"), "{old_only:?}");
        assert!(!old_only.contains(&"streaming-list"), "{old_only:?}");
        // Both start by listing: 1.36 with a streaming WATCH from "", 1.20
        // with a paged LIST from 0.
        assert_eq!(
            modern[0].kind,
            StepKind::StreamingList {
                from: StartingPoint::Latest
            }
        );
        assert_eq!(
            old[0].kind,
            StepKind::List {
                from: StartingPoint::Any,
                limit: 500
            }
        );
        assert_eq!(modern[0].resources.len(), 4, "{:?}", modern[0]);
        // The relist after 410 Gone is unpaged from the last synced RV.
        assert!(old.iter().any(|s| s.kind
            == StepKind::List {
                from: StartingPoint::LastSynced,
                limit: 0
            }));
        for side in [&modern, &old] {
            assert!(side.windows(2).all(|w| w[0].t_ms <= w[1].t_ms), "in order");
        }
    }

    /// Whether an object is in a Reflector's first list depends on when the
    /// scenario's first writes land beside the Reflectors' start: the
    /// recordings that show it are checked, whichever they are.
    #[test]
    fn handler_calls_of_one_release_are_steps_once_per_cycle() {
        let mut shown = 0;
        for name in [
            "pod-lifecycle",
            "scale",
            "label-and-image",
            "streaming-list",
        ] {
            let steps = shipped(name);
            let count =
                |kind: fn(&StepKind) -> bool| steps.iter().filter(|s| kind(&s.kind)).count();
            let initial = count(|k| *k == StepKind::InInitialList);
            let cycles = count(|k| matches!(k, StepKind::StreamingList { .. }));
            assert!(initial <= cycles, "{name}: {steps:?}");
            shown += initial;
        }
        assert!(shown > 0, "no shipped 1.36 recording shows isInInitialList");
        assert!(
            !shipped("pod-lifecycle-1.20")
                .iter()
                .any(|s| s.kind == StepKind::InInitialList),
            "1.20's OnAdd has no isInInitialList"
        );
    }

    #[test]
    fn the_current_step_is_the_latest_taken() {
        let step = |t_ms| Step {
            kind: StepKind::Watch,
            t_ms,
            resources: vec!["pods".into()],
            differs: false,
        };
        let steps = [step(0), step(100), step(100), step(300)];
        assert_eq!(current(&steps, 50.0), Some(0));
        assert_eq!(current(&steps, 100.0), Some(2));
        assert_eq!(current(&steps, 299.0), Some(2));
        assert_eq!(current(&steps, 1e9), Some(3));
        assert_eq!(current(&[], 10.0), None);
    }
}
