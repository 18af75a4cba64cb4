//! Tokens: each event drawn as a token that moves through the stages it
//! passed, each hop lasting in proportion to the measured latency, dilated
//! so that a person can follow it.
//!
//! The animation has its own clock, which stops while paused: a paused token
//! stays where it is, and so does everything the page shows: an event's
//! numbers, and the frames after it, are shown when its token is launched
//! (see [`crate::backlog`]). Events arriving faster than they can be
//! followed are shown in their turn without a token. ERROR events and the
//! objects of a LIST (the initial list, or a relist after 410 Gone) always
//! get one: while they crowd the queue, tokens travel faster instead.
//!
//! An event whose key was already waiting in the workqueue (coalesced) ends
//! its journey there: its token merges into the queued key rather than
//! travelling on to a reconcile of its own.
//!
//! A token cannot travel back in time: a stage whose mark was read before
//! the previous stage's (a negative interval, see [`crate::interval`]) is
//! reached in the shortest hop, and the token is marked
//! [`Token::reordered`]; the event log gives the signed number.

pub use crate::backlog::MAX_WAITING;
use crate::backlog::{Backlog, Held, Pending};
use crate::event_row::EventRow;
use std::collections::VecDeque;
use watchlife_protocol::{FrameBody, ServerFrame, Stage, WatchEvent};

/// Tokens on screen at once, one lane each: more cannot be followed.
pub const LANES: usize = 6;
/// Shortest hop on screen, so that a microsecond hop is still seen.
pub const MIN_HOP_MS: f64 = 140.0;
/// Animation time between two launches, so tokens do not overlap.
pub const LAUNCH_GAP_MS: f64 = 350.0;
/// Launch gap at live speed: tokens are then glimpses, not journeys.
pub const LIVE_LAUNCH_GAP_MS: f64 = 40.0;
/// How long a token stays on its last stage after arriving.
pub const LINGER_MS: f64 = 700.0;
/// How long a coalesced token takes to merge into its queued key: longer
/// than a linger, so that the merge itself can be watched.
pub const MERGE_MS: f64 = 1_500.0;
/// Longest frame step counted, so a tab coming back from the background
/// does not jump every token to the end at once.
pub const MAX_FRAME_MS: f64 = 100.0;
/// Journey length while more events wait than [`MAX_WAITING`] (only events
/// that may not be dropped are then left): fast enough to drain a relist.
pub const CATCH_UP_JOURNEY_MS: f64 = 800.0;

/// Events of one frame shown without a token whose resourceVersions are
/// kept: a catch-up lets thousands go at once, and no one reads them all.
pub const UNTOKENED_NAMED: usize = 64;

/// The events one frame showed without a token.
#[derive(Debug, Clone, Default)]
pub struct Untokened {
    /// The newest of them.
    pub newest: Option<EventRow>,
    /// Their resourceVersions, newest first, at most [`UNTOKENED_NAMED`].
    pub rvs: Vec<String>,
}

/// One event travelling through the stages.
#[derive(Debug, Clone)]
pub struct Token {
    pub id: u64,
    pub lane: usize,
    pub row: EventRow,
    /// Each observed stage with the animation time the token reaches it.
    pub hops: Vec<(Stage, f64)>,
    /// A coalesced event: the journey ends in the workqueue, merged into the
    /// key already waiting there.
    pub merges: bool,
    /// Some stage's mark was read before the previous stage's.
    pub reordered: bool,
}

/// Where a token is at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Place {
    /// The stage it last reached.
    pub stage: Stage,
    /// Position along the pipeline in stage indices (2.5 is half-way from
    /// the third stage to the fourth).
    pub at: f64,
}

impl Token {
    /// Animation time it reaches its last stage.
    pub fn arrival(&self) -> f64 {
        self.hops.last().map(|h| h.1).unwrap_or(0.0)
    }

    /// How long it stays on screen after reaching its last stage.
    pub fn linger(&self) -> f64 {
        if self.merges { MERGE_MS } else { LINGER_MS }
    }

    /// For a merging token that has reached the workqueue, how far the
    /// merge has gone at animation time `t` (0 on arrival, 1 when gone).
    pub fn merge_progress(&self, t: f64) -> Option<f64> {
        (self.merges && t >= self.arrival())
            .then(|| ((t - self.arrival()) / MERGE_MS).clamp(0.0, 1.0))
    }

    /// The object's key as the workqueue holds it: resource and `namespace/name`.
    pub fn key(&self) -> (&str, String) {
        let target = &self.row.event.target;
        (target.resource.as_str(), target.key())
    }

    /// Its place at animation time `t`; with `step` it jumps from stage to
    /// stage instead of gliding (for reduced motion).
    pub fn place(&self, t: f64, step: bool) -> Option<Place> {
        let i = self.hops.iter().rposition(|h| h.1 <= t)?;
        let (stage, t0) = self.hops[i];
        let from = index(stage);
        let at = match self.hops.get(i + 1) {
            Some(&(next, t1)) if !step && t1 > t0 => {
                from + (index(next) - from) * ((t - t0) / (t1 - t0))
            }
            _ => from,
        };
        Some(Place { stage, at })
    }
}

/// Whether some stage of `e` was read before the stage before it.
pub fn reordered(e: &WatchEvent) -> bool {
    let mut marks = e.stages.values().map(|m| m.at);
    let first = marks.next();
    marks
        .scan(first, |prev, at| {
            let back = prev.is_some_and(|p| at < p);
            *prev = Some(at);
            Some(back)
        })
        .any(|back| back)
}

/// Position of a stage in the pipeline.
pub fn index(stage: Stage) -> f64 {
    Stage::ALL.iter().position(|s| *s == stage).unwrap_or(0) as f64
}

/// When each hop happens, starting at `start`: proportional to the measured
/// latencies, the whole journey lasting `journey_ms` (or the measured time
/// itself when live), no hop shorter than [`MIN_HOP_MS`] unless live. A
/// negative interval takes no time on screen (live) or the shortest hop.
pub fn schedule(row: &EventRow, start: f64, journey_ms: Option<f64>) -> Vec<(Stage, f64)> {
    let marks: Vec<(Stage, u64)> = row.event.stages.iter().map(|(s, m)| (*s, m.at)).collect();
    let gaps: Vec<f64> = marks
        .windows(2)
        .map(|w| crate::interval::interval(w[0].1, w[1].1).max(0) as f64)
        .collect();
    let total: f64 = gaps.iter().sum();
    let mut t = start;
    let mut hops = Vec::with_capacity(marks.len());
    for (i, (stage, _)) in marks.iter().enumerate() {
        if i > 0 {
            let gap = gaps[i - 1];
            t += match journey_ms {
                None => gap / 1000.0,
                Some(j) if total > 0.0 => (j * gap / total).max(MIN_HOP_MS),
                Some(j) => (j / gaps.len() as f64).max(MIN_HOP_MS),
            };
        }
        hops.push((*stage, t));
    }
    hops
}

/// The animation's state: its clock and the tokens on screen. The events
/// waiting for a token are held in the page's [`Backlog`], in arrival order
/// with everything else the page shows; each frame lets go of what the
/// animation has reached (see [`crate::backlog`]).
#[derive(Debug, Default)]
pub struct AnimState {
    /// Animation time (ms); stands still while paused.
    pub clock: f64,
    /// Events shown already that the viewer asked to see travel again,
    /// launched before anything held.
    pub reruns: VecDeque<EventRow>,
    pub active: Vec<Token>,
    /// Tokens launched since the page opened.
    pub launched: u64,
    /// Events shown without a token: too many came at once, the viewer
    /// caught up, or no lane was free at live speed.
    pub skipped_total: u64,
    /// The events the latest frame that let any go showed without a token:
    /// at live speed, the first visible sign of an event that found no lane.
    pub untokened: Untokened,
    /// Coalesced events whose token merged into a queued key.
    pub merged: u64,
    /// The token a step launched; the clock runs until it has arrived.
    pub stepping: Option<u64>,
    /// A step was asked for while nothing was waiting.
    pub step_requested: bool,
    /// The event (by `seq`) the viewer asked to follow.
    pub followed: Option<u64>,
    /// When the newest token reaches the watch cache (its launch, when the
    /// watch cache did not measure it). A watch cache's report waits for
    /// it: a watcher closed for being slow shows as the event before the
    /// report reaches the cache, not as it leaves etcd.
    cache_reached: f64,
    last_launch: f64,
    next_id: u64,
}

/// What one frame of the animation works on: the held things, which events
/// the viewer's filters show, and where what it lets go is put.
pub struct Feed<'a, F: Fn(&WatchEvent) -> bool> {
    pub backlog: &'a mut Backlog,
    pub shows: F,
    pub out: &'a mut Vec<Pending>,
}

impl<F: Fn(&WatchEvent) -> bool> Feed<'_, F> {
    /// Whether an event waits for a token.
    fn waiting(&self, reruns: &VecDeque<EventRow>) -> bool {
        !reruns.is_empty() || self.backlog.animated() > 0
    }
}

impl AnimState {
    /// Replays an event already shown next, and narrates it.
    pub fn follow(&mut self, row: EventRow) {
        self.followed = Some(row.seq);
        self.reruns.retain(|r| r.seq != row.seq);
        self.reruns.push_front(row);
    }

    /// Asks for one event to travel while paused.
    pub fn step(&mut self) {
        self.step_requested = true;
    }

    /// Lets go of everything held at once, with no tokens: the page shows
    /// what has arrived. Returns how many events were let go.
    pub fn catch_up(&mut self, backlog: &mut Backlog, out: &mut Vec<Pending>) -> usize {
        let events = backlog.events();
        let first = out.len();
        backlog.release_all(out);
        self.skipped_total += events as u64;
        self.note_untokened(&out[first..], |_| true);
        events
    }

    /// Remembers the events of `released` that `untokened` says left with
    /// no token, if there are any.
    fn note_untokened(&mut self, released: &[Pending], untokened: impl Fn(&Pending) -> bool) {
        let rows: Vec<&EventRow> = released
            .iter()
            .filter(|p| untokened(p))
            .filter_map(|p| match &p.held {
                Held::Event { row, .. } => Some(row),
                Held::Frame(_) => None,
            })
            .collect();
        let Some(newest) = rows.last() else {
            return;
        };
        self.untokened = Untokened {
            newest: Some((*newest).clone()),
            rvs: rows
                .iter()
                .rev()
                .take(UNTOKENED_NAMED)
                .map(|r| r.event.resource_version.clone())
                .collect(),
        };
    }

    /// Advances by `dt` ms of page time: launches what is due and lets go,
    /// into `feed.out`, of what the animation has reached.
    pub fn frame<F: Fn(&WatchEvent) -> bool>(
        &mut self,
        dt: f64,
        paused: bool,
        journey_ms: Option<f64>,
        feed: &mut Feed<'_, F>,
    ) {
        if !paused {
            self.stepping = None;
            self.step_requested = false;
        }
        // A step waiting for a free lane lets the tokens on screen move on
        // until one is free, as a step in progress does.
        let step_waits_for_lane = self.step_requested
            && self.stepping.is_none()
            && feed.waiting(&self.reruns)
            && self.free_lane().is_none();
        if !paused || self.stepping.is_some() || step_waits_for_lane {
            self.clock += dt.clamp(0.0, MAX_FRAME_MS);
        }
        let clock = self.clock;
        self.active.retain(|t| t.arrival() + t.linger() > clock);
        if let Some(id) = self.stepping
            && !self
                .active
                .iter()
                .any(|t| t.id == id && t.arrival() > clock)
        {
            self.stepping = None;
        }
        let first = feed.out.len();
        if paused {
            if self.step_requested
                && self.stepping.is_none()
                && feed.waiting(&self.reruns)
                && let Some(id) = self.launch(journey_ms, feed)
            {
                self.step_requested = false;
                self.stepping = Some(id);
            }
        } else {
            self.launch_due(journey_ms, feed);
        }
        // Live, an event's first visible change is drawn in the frame it
        // arrived before: its token if a lane was free, else its row and
        // numbers now, with no token. Nothing waits for a lane.
        let live = !paused && journey_ms.is_none();
        if live {
            feed.backlog.skip_all();
        }
        // What the clock has reached leaves while the clock runs.
        if !paused || self.stepping.is_some() {
            let (clock, reached) = (self.clock, self.cache_reached);
            let holds = |f: &ServerFrame| {
                !live && matches!(f.body, FrameBody::WatchCache(_)) && clock < reached
            };
            feed.backlog.release_ready(&feed.shows, &holds, feed.out);
        }
        let released = &feed.out[first..];
        self.skipped_total += released.iter().filter(|p| p.skipped()).count() as u64;
        self.note_untokened(released, Pending::skipped);
    }

    /// Launches the waiting events whose turn has come.
    fn launch_due<F: Fn(&WatchEvent) -> bool>(
        &mut self,
        journey_ms: Option<f64>,
        feed: &mut Feed<'_, F>,
    ) {
        // Only protected events are left beyond the bound: hurry them along.
        let catch_up = feed.backlog.animated() > MAX_WAITING;
        let journey_ms = match journey_ms {
            Some(j) if catch_up => Some(j.min(CATCH_UP_JOURNEY_MS)),
            j => j,
        };
        let gap = if journey_ms.is_some() && !catch_up {
            LAUNCH_GAP_MS
        } else {
            LIVE_LAUNCH_GAP_MS
        };
        while feed.waiting(&self.reruns)
            && (self.launched == 0 || self.clock - self.last_launch >= gap)
        {
            if self.launch(journey_ms, feed).is_none() {
                break;
            }
        }
    }

    /// A lane no token is on.
    fn free_lane(&self) -> Option<usize> {
        (0..LANES).find(|l| !self.active.iter().any(|t| t.lane == *l))
    }

    /// Launches the next event to rerun, else the next held one, in a free
    /// lane; what is held before it is let go with it.
    fn launch<F: Fn(&WatchEvent) -> bool>(
        &mut self,
        journey_ms: Option<f64>,
        feed: &mut Feed<'_, F>,
    ) -> Option<u64> {
        let lane = self.free_lane()?;
        let row = match self.reruns.pop_front() {
            Some(row) => row,
            None => feed.backlog.next_token(&feed.shows, feed.out)?,
        };
        self.next_id += 1;
        self.launched += 1;
        self.last_launch = self.clock;
        let mut hops = schedule(&row, self.clock, journey_ms);
        self.cache_reached = hops
            .iter()
            .find(|h| h.0 == Stage::WatchCache)
            .map_or(self.clock, |h| h.1);
        let merges = row.event.coalesced
            && hops.iter().any(|h| h.0 == Stage::Workqueue)
            && hops.last().is_some_and(|h| h.0 != Stage::Workqueue);
        if merges {
            hops.retain(|h| h.0 <= Stage::Workqueue);
            self.merged += 1;
        }
        let reordered = reordered(&row.event);
        self.active.push(Token {
            id: self.next_id,
            lane,
            row,
            hops,
            merges,
            reordered,
        });
        Some(self.next_id)
    }

    /// The keys waiting in the workqueue as the animation shows them: tokens
    /// between the workqueue and reconcile, and merging tokens until they are
    /// gone. Each key with how many events it holds, in order of arrival.
    pub fn queued(&self, step: bool) -> Vec<((String, String), u32)> {
        let mut keys: Vec<((String, String), u32, f64)> = Vec::new();
        for t in &self.active {
            let at_queue = t
                .place(self.clock, step)
                .is_some_and(|p| p.stage == Stage::Workqueue)
                && t.merge_progress(self.clock).is_none_or(|m| m < 1.0);
            if !at_queue {
                continue;
            }
            let (resource, key) = t.key();
            let since = t
                .hops
                .iter()
                .find(|h| h.0 == Stage::Workqueue)
                .map_or(0.0, |h| h.1);
            match keys.iter_mut().find(|k| k.0.0 == resource && k.0.1 == key) {
                Some(k) => {
                    k.1 += 1;
                    k.2 = k.2.min(since);
                }
                None => keys.push(((resource.to_string(), key), 1, since)),
            }
        }
        keys.sort_by(|a, b| a.2.total_cmp(&b.2));
        keys.into_iter().map(|(k, n, _)| (k, n)).collect()
    }

    /// The token whose story the captions tell: the followed one, else the newest.
    pub fn narrated(&self) -> Option<&Token> {
        self.followed
            .and_then(|seq| self.active.iter().find(|t| t.row.seq == seq))
            .or_else(|| self.active.iter().max_by_key(|t| t.id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backlog::{Backlog, Held};
    use crate::carried::Carried;
    use crate::test_events::pod_event;
    use std::sync::Arc;
    use watchlife_protocol::{EventType, WatchEvent};

    fn row(seq: u64, event_type: EventType, stages: &[(Stage, u64)]) -> EventRow {
        keyed(seq, event_type, stages, &format!("p{seq}"), false)
    }

    fn keyed(
        seq: u64,
        event_type: EventType,
        stages: &[(Stage, u64)],
        name: &str,
        coalesced: bool,
    ) -> EventRow {
        EventRow {
            seq,
            event: Arc::new(WatchEvent {
                coalesced,
                ..pod_event(event_type, name, &seq.to_string(), stages)
            }),
        }
    }

    /// An animation with its backlog, every event shown by the filters.
    #[derive(Default)]
    struct Rig {
        a: AnimState,
        backlog: Backlog,
        out: Vec<Pending>,
    }

    impl Rig {
        fn push(&mut self, row: EventRow) {
            self.backlog.push_event(row, Carried::Nothing, 0.0);
        }

        fn frame(&mut self, dt: f64, paused: bool, journey_ms: Option<f64>) {
            let mut feed = Feed {
                backlog: &mut self.backlog,
                shows: |_: &WatchEvent| true,
                out: &mut self.out,
            };
            self.a.frame(dt, paused, journey_ms, &mut feed);
        }
    }

    const PATH: [(Stage, u64); 3] = [
        (Stage::Etcd, 0),
        (Stage::WatchCache, 100),
        (Stage::Reflector, 400),
    ];

    #[test]
    fn hops_are_proportional_to_the_measured_latencies() {
        let hops = schedule(&row(1, EventType::Added, &PATH), 0.0, Some(2_000.0));
        assert_eq!(hops[1].1, 500.0);
        assert_eq!(hops[2].1, 2_000.0);
        let live = schedule(&row(1, EventType::Added, &PATH), 0.0, None);
        assert_eq!(live[2].1, 0.4);
    }

    #[test]
    fn a_watch_cache_report_shows_once_the_token_before_it_reaches_the_cache() {
        let mut r = Rig::default();
        r.push(row(1, EventType::Modified, &PATH));
        let report = ServerFrame {
            seq: 2,
            body: FrameBody::WatchCache(Default::default()),
        };
        r.backlog.push_frame(report, 0.0);
        let reports = |out: &[Pending]| {
            out.iter()
                .filter(|p| matches!(&p.held, Held::Frame(f) if f.seq == 2))
                .count()
        };
        // The token sets off at etcd; the cache is a quarter of its way on.
        while r.a.launched == 0 {
            r.frame(16.0, false, Some(2_000.0));
        }
        let launched_at = r.a.clock;
        assert_eq!(reports(&r.out), 0, "held as the token leaves etcd");
        while r.a.clock < launched_at + 480.0 {
            r.frame(16.0, false, Some(2_000.0));
        }
        assert_eq!(
            reports(&r.out),
            0,
            "still before the cache at {} ms",
            r.a.clock
        );
        for _ in 0..3 {
            r.frame(16.0, false, Some(2_000.0));
        }
        assert_eq!(reports(&r.out), 1, "shown once the token is at the cache");
    }

    #[test]
    fn a_paused_clock_stands_still_and_a_step_launches_exactly_one() {
        let mut r = Rig::default();
        for seq in 1..=3 {
            r.push(row(seq, EventType::Modified, &PATH));
        }
        r.frame(16.0, true, Some(2_000.0));
        assert_eq!((r.a.clock, r.a.launched), (0.0, 0));
        r.a.step();
        for _ in 0..400 {
            r.frame(16.0, true, Some(2_000.0));
        }
        assert_eq!(r.a.launched, 1);
        assert!(
            r.a.clock >= 2_000.0 && r.a.clock < 2_100.0,
            "clock {}",
            r.a.clock
        );
        let place = r.a.active[0].place(r.a.clock, false).unwrap();
        assert_eq!(place.stage, Stage::Reflector);
    }

    #[test]
    fn a_step_with_every_lane_taken_waits_for_one_then_launches_one() {
        let mut r = Rig::default();
        for seq in 1..=20 {
            r.push(row(seq, EventType::Modified, &PATH));
        }
        while r.a.active.len() < LANES {
            r.frame(16.0, false, Some(8_000.0));
        }
        let before = r.a.launched;
        r.frame(16.0, true, Some(8_000.0));
        r.a.step();
        for _ in 0..2_000 {
            r.frame(16.0, true, Some(8_000.0));
        }
        assert_eq!(
            r.a.launched,
            before + 1,
            "exactly one, once a lane was free"
        );
        assert!(!r.a.step_requested);
    }

    #[test]
    fn a_flood_is_sampled_but_errors_are_kept_and_nothing_is_lost() {
        let mut r = Rig::default();
        r.push(row(0, EventType::Error, &PATH));
        for seq in 1..100 {
            r.push(row(seq, EventType::Modified, &PATH));
        }
        while r.a.launched == 0 {
            r.frame(16.0, false, Some(2_000.0));
        }
        assert_eq!(r.a.active[0].row.event.event_type, EventType::Error);
        assert_eq!(r.a.skipped_total, 100 - MAX_WAITING as u64);
        assert_eq!(r.out.len() as u64, 1 + r.a.skipped_total, "shown in order");
        assert_eq!(r.backlog.events(), MAX_WAITING - 1);
    }

    #[test]
    fn live_every_event_is_shown_in_the_next_frame_with_a_token_or_without() {
        let mut r = Rig::default();
        r.push(row(0, EventType::Error, &PATH));
        for seq in 1..40 {
            r.push(row(seq, EventType::Modified, &PATH));
        }
        r.frame(16.0, false, None);
        assert_eq!(r.out.len(), 40, "all shown, in order, in one frame");
        assert!(r.out.iter().enumerate().all(|(i, p)| match &p.held {
            Held::Event { row, .. } => row.seq == i as u64,
            Held::Frame(_) => false,
        }));
        assert_eq!((r.a.launched, r.a.skipped_total), (1, 39));
        let newest = r.a.untokened.newest.as_ref().map(|row| row.seq);
        assert_eq!((newest, r.a.untokened.rvs.len()), (Some(39), 39));
        assert!(r.backlog.is_empty());
        // Slower than live, the same events wait for their tokens.
        let mut slow = Rig::default();
        for seq in 0..10 {
            slow.push(row(seq, EventType::Modified, &PATH));
        }
        slow.frame(16.0, false, Some(2_000.0));
        assert_eq!((slow.out.len(), slow.backlog.events()), (1, 9));
        assert!(slow.a.untokened.newest.is_none());
    }

    #[test]
    fn paused_nothing_is_shown_until_it_runs_or_catches_up() {
        let mut r = Rig::default();
        for seq in 1..=10 {
            r.push(row(seq, EventType::Modified, &PATH));
        }
        for _ in 0..100 {
            r.frame(16.0, true, Some(2_000.0));
        }
        assert!(r.out.is_empty(), "nothing shown while paused");
        while r.a.launched == 0 {
            r.frame(16.0, false, Some(2_000.0));
        }
        assert_eq!(r.out.len(), 1, "the first token's event, as it is launched");
        let caught = r.a.catch_up(&mut r.backlog, &mut r.out);
        assert_eq!((caught, r.out.len(), r.a.skipped_total), (9, 10, 9));
    }

    #[test]
    fn a_relist_is_never_sampled_away_and_drains_faster() {
        let mut r = Rig::default();
        for seq in 0..100 {
            let mut listed = row(seq, EventType::Added, &PATH);
            Arc::make_mut(&mut listed.event).initial = true;
            r.push(listed);
        }
        assert_eq!(r.backlog.animated(), 100);
        // Ordinary events arriving now are the ones sampled.
        r.push(row(100, EventType::Modified, &PATH));
        r.push(row(101, EventType::Modified, &PATH));
        assert_eq!(r.backlog.animated(), 101, "one ordinary event is skipped");
        for _ in 0..5 {
            r.frame(16.0, false, Some(8_000.0));
        }
        let t = &r.a.active[0];
        assert!(
            t.arrival() - t.hops[0].1 <= CATCH_UP_JOURNEY_MS,
            "a backlog travels at catch-up speed"
        );
    }

    const QUEUED: [(Stage, u64); 4] = [
        (Stage::Etcd, 0),
        (Stage::Handlers, 100),
        (Stage::Workqueue, 200),
        (Stage::Reconcile, 1_000),
    ];

    #[test]
    fn a_coalesced_event_merges_into_the_queued_key() {
        let mut r = Rig::default();
        r.push(keyed(1, EventType::Modified, &QUEUED, "web-1", false));
        r.push(keyed(2, EventType::Modified, &QUEUED, "web-1", true));
        for _ in 0..50 {
            r.frame(16.0, false, Some(2_000.0));
        }
        let merging = r.a.active.iter().find(|t| t.merges).expect("launched");
        assert_eq!(merging.hops.last().unwrap().0, Stage::Workqueue);
        assert_eq!(r.a.merged, 1);
        // Both are at the workqueue a while later: one key holding two events.
        for _ in 0..30 {
            r.frame(16.0, false, Some(2_000.0));
        }
        let queued = r.a.queued(false);
        assert_eq!(
            queued,
            vec![(("pods".to_string(), "default/web-1".to_string()), 2)]
        );
        let merging = r.a.active.iter().find(|t| t.merges).unwrap();
        assert!(merging.merge_progress(r.a.clock).is_some());
    }

    #[test]
    fn a_stage_read_first_is_reached_in_the_shortest_hop_and_marked() {
        // The Reflector's mark was read 120 µs before etcd's.
        let path = [
            (Stage::Etcd, 1_120),
            (Stage::Reflector, 1_000),
            (Stage::Fifo, 1_300),
        ];
        let r = row(1, EventType::Modified, &path);
        assert!(reordered(&r.event));
        assert!(!reordered(&row(2, EventType::Modified, &PATH).event));
        let hops = schedule(&r, 0.0, Some(2_000.0));
        assert_eq!(hops[1].1, MIN_HOP_MS);
        assert_eq!(hops[2].1, MIN_HOP_MS + 2_000.0);
        let live = schedule(&r, 0.0, None);
        assert_eq!((live[1].1, live[2].1), (0.0, 0.3));
    }

    #[test]
    fn a_token_glides_or_steps() {
        let t = Token {
            id: 1,
            lane: 0,
            row: row(1, EventType::Added, &PATH),
            hops: schedule(&row(1, EventType::Added, &PATH), 0.0, Some(2_000.0)),
            merges: false,
            reordered: false,
        };
        assert_eq!(t.place(250.0, false).unwrap().at, 0.5);
        assert_eq!(t.place(250.0, true).unwrap().at, 0.0);
        assert!(t.place(-1.0, false).is_none());
    }
}
