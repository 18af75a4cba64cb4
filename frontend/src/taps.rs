//! The user's kube-rs controllers, as their taps tell them (see
//! `watchlife_protocol::tap`): one [`Lane`] per tap connection, with
//! kube-rs's stages — watcher → store → trigger → scheduler → runner →
//! reconcile → requeue — not client-go's.
//!
//! Only what a tap observed is kept. kube-runtime gives no hook between the
//! store and the reconciler's call, so the trigger, the scheduler and the
//! runner are one measured wait ([`Reconcile::since_watcher_event_us`]),
//! never split. A lane's times are on the controller's clock.
//!
//! [`Taps::hops_of`] matches a bridge event with what each controller did
//! with the same version of the same object: by namespace, name and
//! resourceVersion (a controller may spell its resource otherwise than the
//! bridge does, `deployments.apps` or `deployments`; a resourceVersion
//! names one write of the whole cluster).
//!
//! Everything is bounded: lanes, and in each lane its watcher events,
//! reconciles, requests and errors.

use std::collections::VecDeque;
use watchlife_protocol::tap::Reason;
use watchlife_protocol::tap::{
    ErrorPolicyFrame, Hello, ReconcileEnd, ReconcileResult, ReconcileStart, RequestFrame,
    RequestVerb, Stats, TapFrame, TapObjectRef, TapRelay, WatcherErrorFrame, WatcherEventKind,
    WatcherFrame,
};

/// Lanes kept. A tap that reconnects is a new lane, so a flapping tap would
/// grow the list without end: beyond this, the oldest lane that left goes
/// first (the oldest of all when none left). A page shows a handful of
/// controllers side by side; eight is more than fits on a projector.
pub const LANES_KEPT: usize = 8;

/// Watcher events and reconciles kept per lane, for matching with the
/// bridge's events: a clicked event is one of the log's recent ones, and a
/// controller handles each of them once or twice.
pub const MATCH_KEPT: usize = 256;

/// Objects whose latest reconcile a lane shows, latest first: one row per
/// object, so that one object requeued in a loop does not hide the others;
/// few enough to read at a glance.
pub const RECONCILES_SHOWN: usize = 6;

/// The watcher's latest requests and errors a lane keeps (LIST, WATCH, a
/// relist after an error): what its watcher stage is doing now.
pub const REQUESTS_KEPT: usize = 4;
pub const ERRORS_KEPT: usize = 3;

/// Every tap seen, by connection.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Taps {
    /// In the order the taps connected (the bridge's `tap` numbers).
    pub lanes: Vec<Lane>,
}

/// One tap connection: one controller process.
#[derive(Debug, Clone, PartialEq)]
pub struct Lane {
    /// The bridge's number for the connection.
    pub tap: u64,
    pub controller: String,
    /// The tap's greeting, when the page saw it (a recording begun after
    /// the tap connected has none).
    pub hello: Option<Hello>,
    /// Why the connection ended, once it did.
    pub left: Option<String>,
    /// Watcher events by kind, in [`WatcherEventKind`]'s order.
    pub watcher_counts: [u64; 5],
    /// The latest watcher events, oldest first.
    pub watcher_events: VecDeque<WatcherFrame>,
    /// Whether the latest watcher event was seen after the reflector
    /// applied it to the store (`None`: not observed).
    pub store_applied: Option<bool>,
    /// The watcher's latest LISTs and WATCHes (not the reconciler's requests).
    pub requests: VecDeque<RequestFrame>,
    pub errors: VecDeque<WatcherErrorFrame>,
    pub errors_total: u64,
    /// The latest reconciles, oldest first.
    pub reconciles: VecDeque<Reconcile>,
    pub reconciles_total: u64,
    /// The tap's latest counters.
    pub stats: Option<Stats>,
}

/// One call of the reconciler, and what came of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reconcile {
    /// The tap's number for it.
    pub id: u64,
    pub object: TapObjectRef,
    /// As the reconciler read it from the store.
    pub resource_version: Option<String>,
    /// `None` when not observed.
    pub reason: Option<Reason>,
    /// When the reconciler was called (µs since the epoch, the controller's
    /// clock); `None` when its start was not received.
    pub started_us: Option<u64>,
    /// The trigger, scheduler and runner together: from the object's last
    /// watcher event the tap saw to this call.
    pub since_watcher_event_us: Option<u64>,
    pub end: Option<ReconcileEnd>,
    /// The error policy's answer, for a failed reconcile.
    pub policy: Option<ErrorPolicyFrame>,
}

/// What one controller did with one version of one object, for an event's
/// waterfall. Times are µs since the epoch on the controller's clock.
#[derive(Debug, Clone, PartialEq)]
pub struct ControllerHops {
    pub tap: u64,
    pub controller: String,
    /// Its watcher yielded this version.
    pub watcher_at: Option<u64>,
    /// The first reconcile that read this version.
    pub reconcile: Option<Reconcile>,
}

impl ControllerHops {
    /// When the wait before the reconcile began: the watcher event matched,
    /// else the one the tap measured the wait from.
    pub fn wait_from(&self) -> Option<u64> {
        let r = self.reconcile.as_ref()?;
        self.watcher_at.or_else(|| {
            r.started_us
                .zip(r.since_watcher_event_us)
                .map(|(at, since)| at.saturating_sub(since))
        })
    }
}

/// Whether `object` is `namespace/name`.
fn same_object(object: &TapObjectRef, namespace: Option<&str>, name: &str) -> bool {
    object.namespace.as_deref() == namespace && object.name == name
}

/// Keeps at most `cap` items, dropping the oldest.
fn push_bounded<T>(items: &mut VecDeque<T>, item: T, cap: usize) {
    if items.len() >= cap {
        items.pop_front();
    }
    items.push_back(item);
}

impl Taps {
    /// Takes one relayed frame.
    pub fn record(&mut self, relay: TapRelay) {
        let lane = self.lane(relay.tap, &relay.controller);
        if let Some(why) = relay.left {
            lane.left = Some(why);
        }
        if let Some(frame) = relay.frame {
            lane.record(frame);
        }
    }

    /// The lane of connection `tap`, made when new.
    fn lane(&mut self, tap: u64, controller: &str) -> &mut Lane {
        if let Some(i) = self.lanes.iter().position(|l| l.tap == tap) {
            return &mut self.lanes[i];
        }
        if self.lanes.len() >= LANES_KEPT {
            let gone = self
                .lanes
                .iter()
                .position(|l| l.left.is_some())
                .unwrap_or(0);
            self.lanes.remove(gone);
        }
        let at = self.lanes.partition_point(|l| l.tap < tap);
        self.lanes.insert(at, Lane::new(tap, controller));
        &mut self.lanes[at]
    }

    /// What each controller did with `namespace/name` at `resource_version`:
    /// one entry per lane that saw it in its watcher or reconciled it.
    pub fn hops_of(
        &self,
        namespace: Option<&str>,
        name: &str,
        resource_version: &str,
    ) -> Vec<ControllerHops> {
        self.lanes
            .iter()
            .filter_map(|lane| {
                let watcher_at = lane
                    .watcher_events
                    .iter()
                    .rev()
                    .find(|w| {
                        w.resource_version.as_deref() == Some(resource_version)
                            && w.object
                                .as_ref()
                                .is_some_and(|o| same_object(o, namespace, name))
                    })
                    .map(|w| w.at_us);
                let reconcile = lane
                    .reconciles
                    .iter()
                    .find(|r| {
                        r.resource_version.as_deref() == Some(resource_version)
                            && same_object(&r.object, namespace, name)
                    })
                    .cloned();
                (watcher_at.is_some() || reconcile.is_some()).then(|| ControllerHops {
                    tap: lane.tap,
                    controller: lane.controller.clone(),
                    watcher_at,
                    reconcile,
                })
            })
            .collect()
    }
}

impl Lane {
    fn new(tap: u64, controller: &str) -> Lane {
        Lane {
            tap,
            controller: controller.to_string(),
            hello: None,
            left: None,
            watcher_counts: [0; 5],
            watcher_events: VecDeque::new(),
            store_applied: None,
            requests: VecDeque::new(),
            errors: VecDeque::new(),
            errors_total: 0,
            reconciles: VecDeque::new(),
            reconciles_total: 0,
            stats: None,
        }
    }

    fn record(&mut self, frame: TapFrame) {
        match frame {
            TapFrame::Hello(hello) => {
                self.controller = hello.controller.clone();
                self.hello = Some(hello);
            }
            TapFrame::Watcher(w) => {
                self.watcher_counts[kind_index(w.event)] += 1;
                if w.object.is_some() {
                    self.store_applied = w.applied_to_store;
                    push_bounded(&mut self.watcher_events, w, MATCH_KEPT);
                }
            }
            TapFrame::WatcherError(e) => {
                self.errors_total += 1;
                push_bounded(&mut self.errors, e, ERRORS_KEPT);
            }
            // The watcher's LISTs and WATCHes; the reconciler's own requests
            // would push them out, and belong to its reconcile.
            TapFrame::Request(r) if r.verb != RequestVerb::Other => {
                push_bounded(&mut self.requests, r, REQUESTS_KEPT)
            }
            TapFrame::Request(_) => {}
            TapFrame::ReconcileStart(s) => self.started(s),
            TapFrame::ReconcileEnd(end) => self.ended(end),
            TapFrame::ErrorPolicy(p) => self.policy(p),
            TapFrame::Stats(s) => self.stats = Some(s),
        }
    }

    fn started(&mut self, s: ReconcileStart) {
        self.reconciles_total += 1;
        let r = Reconcile {
            id: s.reconcile,
            object: s.object,
            resource_version: s.resource_version,
            reason: s.reason,
            started_us: Some(s.at_us),
            since_watcher_event_us: s.since_watcher_event_us,
            end: None,
            policy: None,
        };
        push_bounded(&mut self.reconciles, r, MATCH_KEPT);
    }

    /// An end whose start was not received (dropped by the tap, or before
    /// a recording began) is kept alone: its start unknown.
    fn ended(&mut self, end: ReconcileEnd) {
        match self
            .reconciles
            .iter_mut()
            .rev()
            .find(|r| r.id == end.reconcile)
        {
            Some(r) => r.end = Some(end),
            None => {
                self.reconciles_total += 1;
                let r = Reconcile {
                    id: end.reconcile,
                    object: end.object.clone(),
                    resource_version: None,
                    reason: None,
                    started_us: None,
                    since_watcher_event_us: None,
                    end: Some(end),
                    policy: None,
                };
                push_bounded(&mut self.reconciles, r, MATCH_KEPT);
            }
        }
    }

    /// The error policy's answer goes with its failed reconcile: the one it
    /// names, else the object's latest failed one.
    fn policy(&mut self, p: ErrorPolicyFrame) {
        let target = self
            .reconciles
            .iter_mut()
            .rev()
            .find(|r| match p.reconcile {
                Some(id) => r.id == id,
                None => {
                    r.object == p.object
                        && r.policy.is_none()
                        && matches!(
                            r.end.as_ref().map(|e| &e.result),
                            Some(ReconcileResult::Error { .. })
                        )
                }
            });
        if let Some(r) = target {
            r.policy = Some(p);
        }
    }

    /// The reconciles shown: each object's latest, for the
    /// [`RECONCILES_SHOWN`] objects reconciled last, latest first.
    pub fn latest_reconciles(&self) -> Vec<&Reconcile> {
        let mut shown: Vec<&Reconcile> = Vec::with_capacity(RECONCILES_SHOWN);
        for r in self.reconciles.iter().rev() {
            if shown.len() == RECONCILES_SHOWN {
                break;
            }
            if !shown.iter().any(|s| s.object == r.object) {
                shown.push(r);
            }
        }
        shown
    }

    /// How many of the reconciles kept were of `object`.
    pub fn runs_of(&self, object: &TapObjectRef) -> usize {
        self.reconciles
            .iter()
            .filter(|r| &r.object == object)
            .count()
    }

    /// The frames the tap dropped, by its own count.
    pub fn dropped(&self) -> u64 {
        self.stats.as_ref().map_or(0, |s| s.dropped)
    }

    /// Stages this tap says it cannot observe (from its hello).
    pub fn unobserved(&self) -> &[String] {
        self.hello.as_ref().map_or(&[], |h| &h.unobserved)
    }

    /// Watcher events counted, by kind, with their names.
    pub fn watcher_counts(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        KIND_NAMES.iter().copied().zip(self.watcher_counts)
    }
}

/// kube-runtime's names of the watcher events, in [`WatcherEventKind`]'s order.
const KIND_NAMES: [&str; 5] = ["Init", "InitApply", "InitDone", "Apply", "Delete"];

fn kind_index(kind: WatcherEventKind) -> usize {
    match kind {
        WatcherEventKind::Init => 0,
        WatcherEventKind::InitApply => 1,
        WatcherEventKind::InitDone => 2,
        WatcherEventKind::Apply => 3,
        WatcherEventKind::Delete => 4,
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use watchlife_protocol::tap::Requeue;

    pub fn web() -> TapObjectRef {
        TapObjectRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("default".into()),
            name: "web".into(),
        }
    }

    pub fn relay(tap: u64, controller: &str, frame: TapFrame) -> TapRelay {
        TapRelay {
            tap,
            controller: controller.into(),
            received: 0,
            frame: Some(frame),
            left: None,
        }
    }

    pub fn watcher(seq: u64, at_us: u64, rv: &str) -> TapFrame {
        TapFrame::Watcher(WatcherFrame {
            seq,
            at_us,
            resource: "deployments.apps".into(),
            event: WatcherEventKind::Apply,
            object: Some(web()),
            resource_version: Some(rv.into()),
            applied_to_store: Some(true),
        })
    }

    pub fn start(seq: u64, at_us: u64, id: u64, rv: &str) -> TapFrame {
        TapFrame::ReconcileStart(ReconcileStart {
            seq,
            at_us,
            reconcile: id,
            object: web(),
            resource_version: Some(rv.into()),
            reason: Some(Reason::ObjectUpdated),
            since_watcher_event_us: Some(700),
        })
    }

    pub fn end(seq: u64, at_us: u64, id: u64, result: ReconcileResult) -> TapFrame {
        TapFrame::ReconcileEnd(ReconcileEnd {
            seq,
            at_us,
            reconcile: id,
            object: web(),
            duration_us: 2_000,
            result,
        })
    }

    #[test]
    fn a_lane_per_connection_titled_by_its_controller() {
        let mut t = Taps::default();
        t.record(relay(2, "b", watcher(1, 10, "5")));
        t.record(relay(1, "a", watcher(1, 10, "5")));
        t.record(relay(2, "b", watcher(2, 11, "6")));
        let names: Vec<(u64, &str)> = t
            .lanes
            .iter()
            .map(|l| (l.tap, l.controller.as_str()))
            .collect();
        assert_eq!(names, [(1, "a"), (2, "b")]);
        assert_eq!(t.lanes[1].watcher_counts[3], 2);
        assert_eq!(t.lanes[1].store_applied, Some(true));
        t.record(TapRelay {
            left: Some("closed by the tap".into()),
            frame: None,
            ..relay(1, "a", watcher(0, 0, ""))
        });
        assert_eq!(t.lanes[0].left.as_deref(), Some("closed by the tap"));
    }

    #[test]
    fn lanes_are_bounded_and_those_that_left_go_first() {
        let mut t = Taps::default();
        for tap in 1..=LANES_KEPT as u64 {
            t.record(relay(tap, "c", watcher(1, 1, "1")));
        }
        t.lanes[3].left = Some("broken".into());
        t.record(relay(99, "new", watcher(1, 1, "1")));
        assert_eq!(t.lanes.len(), LANES_KEPT);
        assert!(
            t.lanes.iter().all(|l| l.tap != 4),
            "the lane that left went"
        );
        assert_eq!(t.lanes.last().unwrap().controller, "new");
    }

    #[test]
    fn a_reconcile_gathers_its_end_and_its_error_policy() {
        let mut t = Taps::default();
        let after = ReconcileResult::Action {
            action: Requeue::After {
                after_us: 300_000_000,
            },
        };
        t.record(relay(1, "c", start(1, 100, 7, "812")));
        t.record(relay(1, "c", end(2, 2_100, 7, after.clone())));
        t.record(relay(1, "c", start(3, 3_000, 8, "813")));
        let failed = ReconcileResult::Error {
            message: "boom".into(),
        };
        t.record(relay(1, "c", end(4, 5_000, 8, failed)));
        t.record(relay(
            1,
            "c",
            TapFrame::ErrorPolicy(ErrorPolicyFrame {
                seq: 5,
                at_us: 5_001,
                reconcile: None,
                object: web(),
                message: "boom".into(),
                action: Requeue::After {
                    after_us: 5_000_000,
                },
            }),
        ));
        // An end whose start was dropped is kept, its start unknown.
        t.record(relay(1, "c", end(6, 9_000, 9, after.clone())));
        let lane = &t.lanes[0];
        let latest: Vec<u64> = lane.latest_reconciles().iter().map(|r| r.id).collect();
        assert_eq!(latest, [9], "one row per object, its latest");
        assert_eq!(lane.runs_of(&web()), 3);
        assert_eq!(lane.reconciles[0].end.as_ref().unwrap().result, after);
        assert!(lane.reconciles[1].policy.is_some());
        assert_eq!(lane.reconciles[2].started_us, None);
        assert_eq!(lane.reconciles_total, 3);
    }

    #[test]
    fn each_objects_latest_reconcile_is_shown_latest_first() {
        let mut t = Taps::default();
        let other = |name: &str| TapObjectRef {
            name: name.into(),
            ..web()
        };
        let mut starts = Vec::new();
        for (id, name) in [(1, "a"), (2, "b"), (3, "a"), (4, "web")] {
            let TapFrame::ReconcileStart(mut s) = start(id, id, id, "1") else {
                unreachable!()
            };
            s.object = other(name);
            starts.push(relay(1, "c", TapFrame::ReconcileStart(s)));
        }
        for r in starts {
            t.record(r);
        }
        let latest: Vec<u64> = t.lanes[0]
            .latest_reconciles()
            .iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(latest, [4, 3, 2]);
    }

    #[test]
    fn a_bridge_event_matches_each_controller_by_namespace_name_and_rv() {
        let mut t = Taps::default();
        t.record(relay(1, "a", watcher(1, 1_000, "812")));
        t.record(relay(1, "a", start(2, 1_700, 1, "812")));
        t.record(relay(
            1,
            "a",
            end(
                3,
                3_700,
                1,
                ReconcileResult::Action {
                    action: Requeue::AwaitChange,
                },
            ),
        ));
        // The second controller's watcher was not tapped: its wait is
        // measured from the event the tap saw, by `since_watcher_event_us`.
        t.record(relay(2, "b", start(1, 2_000, 1, "812")));
        t.record(relay(3, "c", watcher(1, 1_000, "813")));
        let hops = t.hops_of(Some("default"), "web", "812");
        assert_eq!(hops.len(), 2, "{hops:?}");
        assert_eq!(
            (hops[0].controller.as_str(), hops[0].watcher_at),
            ("a", Some(1_000))
        );
        assert_eq!(hops[0].wait_from(), Some(1_000));
        assert_eq!(hops[1].watcher_at, None);
        assert_eq!(hops[1].wait_from(), Some(1_300));
        assert!(t.hops_of(None, "web", "812").is_empty(), "another object");
        assert!(t.hops_of(Some("default"), "web", "811").is_empty());
    }

    #[test]
    fn requests_errors_and_watcher_events_are_bounded() {
        let mut t = Taps::default();
        for seq in 0..(MATCH_KEPT as u64 + 10) {
            t.record(relay(1, "c", watcher(seq, seq, &seq.to_string())));
            t.record(relay(
                1,
                "c",
                TapFrame::Request(RequestFrame {
                    seq,
                    at_us: seq,
                    method: "GET".into(),
                    url: "/apis/apps/v1/deployments?watch=true".into(),
                    verb: RequestVerb::Watch,
                    status: Some(200),
                    duration_us: None,
                }),
            ));
            t.record(relay(
                1,
                "c",
                TapFrame::WatcherError(WatcherErrorFrame {
                    seq,
                    at_us: seq,
                    resource: "deployments.apps".into(),
                    message: "410".into(),
                }),
            ));
        }
        let lane = &t.lanes[0];
        assert_eq!(lane.watcher_events.len(), MATCH_KEPT);
        assert_eq!(lane.requests.len(), REQUESTS_KEPT);
        assert_eq!(lane.errors.len(), ERRORS_KEPT);
        assert_eq!(lane.errors_total, MATCH_KEPT as u64 + 10);
    }

    #[test]
    fn a_recording_with_tap_frames_replays_its_lanes() {
        let text = concat!(
            r#"{"watchlife_recording":2,"protocol":2,"source":{"kind":"demo","api":"x"},"resources":["pods"],"started_at":0}"#,
            "\n",
            r#"{"t_ms":5,"seq":4,"type":"tap","data":{"tap":1,"controller":"cm","received":9,"frame":{"type":"stats","seq":3,"at_us":9,"recorded":40,"dropped":3}}}"#,
            "\n",
            r#"{"t_ms":6,"seq":5,"type":"tap","data":{"tap":1,"controller":"cm","received":10,"left":"closed by the tap"}}"#,
            "\n",
        );
        let recording = watchlife_protocol::parse_recording(text).unwrap();
        assert!(recording.problems.is_empty(), "{:?}", recording.problems);
        let mut t = Taps::default();
        for f in recording.frames {
            assert!(f.frame.body.is_stream());
            if let watchlife_protocol::FrameBody::Tap(relay) = f.frame.body {
                t.record(relay);
            }
        }
        assert_eq!(t.lanes[0].dropped(), 3);
        assert!(t.lanes[0].left.is_some());
    }
}
