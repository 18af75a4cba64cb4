//! What a viewer makes of the frames it reads: the objects (snapshot plus
//! the events applied since), and every breach of the stream's promises seen
//! on the way (invariant (b) of the chaos rounds).

use std::collections::{BTreeMap, HashSet};
use watchlife_protocol::{
    EventType, FrameBody, Micros, ObjectRef, ReflectorState, ReflectorUpdate, ServerFrame, Stage,
};

/// Failures told that a viewer keeps: more than a round's worth.
pub const FAILURES_KEPT: usize = 64;

/// Relists remembered per resource: the rounds' few, and more.
const RELISTS_KEPT: usize = 32;

/// How the event that last set an object reached the viewer: enough to
/// tell whether it is [`super::queued_deletion`]'s case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastEvent {
    /// An ADDED from the watch (not a listed object, not a resync).
    pub watch_added: bool,
    /// When the bridge queued it in its FIFO, and applied it to its Indexer.
    pub fifo: Option<Micros>,
    pub indexer: Option<Micros>,
}

/// `resource/namespace/name` (or `resource/name`).
pub fn key(target: &ObjectRef) -> String {
    format!("{}/{}", target.resource, target.key())
}

/// One viewer's state across its connections.
#[derive(Debug, Default)]
pub struct Model {
    /// The stream named by the latest `hello`.
    pub stream: Option<String>,
    /// The `seq` of the latest frame: the cursor to resume from.
    pub last_seq: u64,
    /// Key → resourceVersion.
    pub objects: BTreeMap<String, String>,
    /// The kinds of the current connection's first frames, heartbeats and
    /// the like left out.
    pub opening: Vec<&'static str>,
    /// ADDED, MODIFIED and DELETED events applied.
    pub changes: u64,
    pub snapshots: u32,
    pub resyncs: u32,
    /// Events that came before any snapshot on this connection.
    pub events_before_snapshot: u64,
    /// Connections opened (the first included).
    pub connections: u32,
    /// Breaches of the stream's promises, in the order seen.
    pub violations: Vec<String>,
    /// Stream frames seen (events, reflector and watch-cache updates).
    pub stream_frames: u64,
    /// The longest a watch event waited in the bridge's FIFO (its Indexer
    /// mark less its FIFO mark), µs: v1.20's phantom of
    /// [`super::queued_deletion`] needs a wait past the Reflector's 0.8 s
    /// backoff before a relist.
    pub longest_fifo_wait: Micros,
    /// Streaming lists the bridge's Reflectors reported starting (a LIST's
    /// part in v1.36's cycles, which no LIST metric counts).
    pub streaming_lists: u64,
    /// The failures the bridge told of (`resource: error` of each Reflector
    /// backoff), the latest [`FAILURES_KEPT`].
    pub failures_told: Vec<String>,
    /// Failures told in all, kept or not.
    pub failures_total: u64,
    /// Watches the bridge said it took for dead (silent past its bound),
    /// and requests it gave up on for the same silence before their answer.
    pub watches_taken_for_dead: u64,
    /// Resource → whether its Reflector has a WATCH out, as its last state
    /// told (a LIST, a backoff or an ended watch: not).
    watching: BTreeMap<String, bool>,
    /// The next stream `seq` this viewer may be sent, once it knows one.
    expect: Option<u64>,
    /// Whether the connection asked to resume (`since`).
    resuming: bool,
    /// The frame before this one was a `resync`.
    after_resync: bool,
    /// Whether this connection has had its first stream-position frame
    /// (a snapshot, or the first resumed frame).
    placed: bool,
    /// (key, resourceVersion, type) of the watch events since the last snapshot.
    delivered: HashSet<(String, String, &'static str)>,
    /// Key → the event that last set it, for the objects held since the
    /// last snapshot (a snapshot tells no event).
    pub last_events: BTreeMap<String, LastEvent>,
    /// Resource → when each of its relists was queued in the bridge's
    /// FIFO (the FIFO mark of its listed objects), oldest first.
    pub relists_queued: BTreeMap<String, Vec<Micros>>,
}

impl Model {
    /// The failures told since `total` were told in all (as many of them as
    /// are kept).
    pub fn failures_since(&self, total: u64) -> &[String] {
        let new = (self.failures_total - total).min(self.failures_told.len() as u64) as usize;
        &self.failures_told[self.failures_told.len() - new..]
    }

    /// A viewer's state as it first connects, holding `objects` from before.
    pub fn holding(objects: BTreeMap<String, String>) -> Model {
        Model {
            objects,
            ..Model::default()
        }
    }

    /// A new connection begins; `resuming` when it sent `stream` and `since`.
    pub fn connecting(&mut self, resuming: bool) {
        self.connections += 1;
        self.resuming = resuming;
        self.opening.clear();
        self.after_resync = false;
        self.placed = false;
        self.events_before_snapshot = 0;
    }

    /// Resources whose Reflector has a WATCH out: those a silence can catch.
    pub fn watches_out(&self) -> u64 {
        self.watching.values().filter(|w| **w).count() as u64
    }

    /// Follows one Reflector's state: whether it has a WATCH out, and each
    /// request it took for dead.
    fn follow_reflector(&mut self, update: &ReflectorUpdate) {
        let dead = match &update.state {
            ReflectorState::WatchEnded { reason, .. } => reason,
            // A WATCH (or LIST) sent on a connection that was already
            // silent is given up on before any answer.
            ReflectorState::Backoff { error, .. } => error,
            _ => "",
        };
        if dead.contains("taken for dead") {
            self.watches_taken_for_dead += 1;
        }
        if let Some(out) = watch_out(&update.state) {
            self.watching.insert(update.resource.clone(), out);
        }
    }

    fn violation(&mut self, what: String) {
        if self.violations.len() < 20 {
            self.violations.push(what);
        }
    }

    /// Applies one frame, checking it against what came before.
    pub fn apply(&mut self, frame: ServerFrame) {
        let kind = match &frame.body {
            FrameBody::Hello(_) => "hello",
            FrameBody::Resync(_) => "resync",
            FrameBody::Snapshot(_) => "snapshot",
            FrameBody::Event(_) => "event",
            _ => "other",
        };
        if kind != "other" && self.opening.len() < 4 {
            self.opening.push(kind);
        }
        let was_after_resync = std::mem::take(&mut self.after_resync);
        if frame.body.is_stream() {
            self.stream_frames += 1;
            match self.expect {
                Some(next) if frame.seq > next => self.violation(format!(
                    "seq gap not announced by a resync: expected {next}, got {} ({} frame(s) missing)",
                    frame.seq,
                    frame.seq - next
                )),
                Some(next) if frame.seq < next => self.violation(format!(
                    "seq went back: expected {next}, got {} (a frame sent twice)",
                    frame.seq
                )),
                None if self.resuming && !self.placed => {}
                _ => {}
            }
            self.expect = Some(frame.seq + 1);
            self.placed = true;
            self.last_seq = frame.seq;
        }
        if let FrameBody::Reflector(update) = &frame.body {
            self.follow_reflector(update);
        }
        match frame.body {
            FrameBody::Hello(hello) => {
                if self.stream.as_deref() != Some(hello.stream.as_str()) {
                    // Another stream (a restarted bridge): its numbers are
                    // its own; only a resync and a snapshot may place us.
                    self.expect = None;
                }
                self.stream = Some(hello.stream);
            }
            FrameBody::Reflector(ReflectorUpdate {
                state: ReflectorState::StreamingListStarted { .. },
                ..
            }) => self.streaming_lists += 1,
            FrameBody::Reflector(ReflectorUpdate {
                resource,
                state: ReflectorState::Backoff { error, .. },
            }) => {
                if self.failures_told.len() == FAILURES_KEPT {
                    self.failures_told.remove(0);
                }
                self.failures_told.push(format!("{resource}: {error}"));
                self.failures_total += 1;
            }
            FrameBody::Resync(_) => {
                self.resyncs += 1;
                self.after_resync = true;
            }
            FrameBody::Snapshot(snapshot) => {
                // A snapshot is only unannounced as the first thing a
                // viewer that did not ask to resume is sent.
                let fresh = !self.resuming && !self.placed;
                if !fresh && !was_after_resync {
                    self.violation(format!(
                        "snapshot at seq {} not announced by a resync ({})",
                        frame.seq,
                        if self.placed {
                            "mid-stream"
                        } else {
                            "on a connection that asked to resume"
                        }
                    ));
                }
                self.snapshots += 1;
                self.watching = snapshot
                    .reflectors
                    .iter()
                    .filter_map(|u| Some((u.resource.clone(), watch_out(&u.state)?)))
                    .collect();
                self.placed = true;
                self.expect = Some(frame.seq + 1);
                self.last_seq = frame.seq;
                self.delivered.clear();
                self.last_events.clear();
                self.objects = snapshot
                    .objects
                    .iter()
                    .map(|o| (key(&o.target), o.resource_version.clone()))
                    .collect();
            }
            FrameBody::Event(event) => {
                if self.snapshots == 0 {
                    self.events_before_snapshot += 1;
                }
                let type_name = match event.event_type {
                    EventType::Added => "ADDED",
                    EventType::Modified => "MODIFIED",
                    EventType::Deleted => "DELETED",
                    EventType::Bookmark | EventType::Error => return,
                };
                let key = key(&event.target);
                // A relist's or a periodic resync's events restate what is
                // known: they may repeat a resourceVersion by design.
                if !event.initial && !event.handled.resync {
                    let id = (key.clone(), event.resource_version.clone(), type_name);
                    if !self.delivered.insert(id) {
                        self.violation(format!(
                            "event delivered twice: {type_name} {key} at resourceVersion {} (seq {})",
                            event.resource_version, frame.seq
                        ));
                    }
                }
                let fifo = event.stages.get(&Stage::Fifo).map(|m| m.at);
                if event.initial
                    && let Some(queued) = fifo
                {
                    let relists = self
                        .relists_queued
                        .entry(event.target.resource.clone())
                        .or_default();
                    if relists.last() != Some(&queued) {
                        relists.push(queued);
                        if relists.len() > RELISTS_KEPT {
                            relists.remove(0);
                        }
                    }
                }
                let applied = event.stages.get(&Stage::Indexer).map(|m| m.at);
                if !event.initial
                    && let (Some(queued), Some(applied)) = (fifo, applied)
                {
                    let wait = applied.saturating_sub(queued);
                    self.longest_fifo_wait = self.longest_fifo_wait.max(wait);
                }
                match event.event_type {
                    EventType::Deleted => {
                        self.objects.remove(&key);
                        self.last_events.remove(&key);
                    }
                    _ => {
                        let last = LastEvent {
                            watch_added: event.event_type == EventType::Added
                                && !event.initial
                                && !event.handled.resync,
                            fifo,
                            indexer: applied,
                        };
                        self.last_events.insert(key.clone(), last);
                        self.objects.insert(key, event.resource_version);
                    }
                }
                self.changes += 1;
            }
            _ => {}
        }
    }
}

/// How `seen` differs from `truth`: empty when they agree.
pub fn differences(truth: &BTreeMap<String, String>, seen: &BTreeMap<String, String>) -> String {
    let (lost, phantom, stale) = counts(truth, seen);
    if lost.is_empty() && phantom.is_empty() && stale.is_empty() {
        return String::new();
    }
    format!(
        "{} lost {:?}, {} phantom {:?}, {} at another resourceVersion {:?}",
        lost.len(),
        lost.iter().take(5).collect::<Vec<_>>(),
        phantom.len(),
        phantom.iter().take(5).collect::<Vec<_>>(),
        stale.len(),
        stale.iter().take(5).collect::<Vec<_>>(),
    )
}

/// The keys lost, the phantom keys, and the objects at another resourceVersion.
pub fn counts(
    truth: &BTreeMap<String, String>,
    seen: &BTreeMap<String, String>,
) -> (Vec<String>, Vec<String>, Vec<String>) {
    let lost = truth
        .keys()
        .filter(|k| !seen.contains_key(*k))
        .cloned()
        .collect();
    let phantom = seen
        .keys()
        .filter(|k| !truth.contains_key(*k))
        .cloned()
        .collect();
    let stale = truth
        .iter()
        .filter_map(|(k, rv)| match seen.get(k) {
            Some(other) if other != rv => Some(format!("{k} at {other}, listed at {rv}")),
            _ => None,
        })
        .collect();
    (lost, phantom, stale)
}

/// Whether a Reflector in `state` has a WATCH out; `None` for the states
/// that do not tell (who answered, a long LIST's progress).
fn watch_out(state: &ReflectorState) -> Option<bool> {
    match state {
        ReflectorState::WatchStarted { .. }
        | ReflectorState::StreamingListStarted { .. }
        | ReflectorState::InitialEventsEnd { .. }
        | ReflectorState::Bookmark { .. } => Some(true),
        ReflectorState::Answered { .. } | ReflectorState::ListProgress { .. } => None,
        _ => Some(false),
    }
}
