//! What has arrived and is not shown yet: the page's one clock.
//!
//! Every stream frame (an event, a Reflector's change, a watch cache's
//! report, a controller's tap frame) waits here, in arrival order, until the animation gets to it.
//! Nothing leaves out of order: an event leaves when its token is launched
//! ([`Backlog::next_token`]), and the frames and events behind it that wait
//! for no token leave with it ([`Backlog::release_ready`]). So a 410 notice
//! shows when the 410's token is drawn, and a stage's rate counts an event
//! once its token is on the picture, not before.
//!
//! When more events wait for a token than [`MAX_WAITING`], the oldest
//! ordinary one is marked [`Fate::Skip`]: it still leaves in its turn, with
//! no token, and its numbers still count. ERROR events and listed objects
//! are never skipped (see [`protected`]).

use crate::carried::Carried;
use crate::event_row::{EventRow, protected};
use std::collections::VecDeque;
use watchlife_protocol::{ServerFrame, WatchEvent};

/// Events waiting for a token; beyond this the oldest ordinary one is
/// marked to leave without one (about two journeys' worth at normal speed).
pub const MAX_WAITING: usize = 24;

/// How a held event leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// With a token of its own.
    Animate,
    /// With no token: too many came at once.
    Skip,
}

/// One thing held.
#[derive(Debug, Clone)]
pub enum Held {
    Event {
        row: EventRow,
        /// The object's body, kept apart from the row (see [`EventRow`]).
        object: Carried,
        fate: Fate,
    },
    /// A Reflector's change, a watch cache's report or a tap's frame (boxed: a frame is
    /// far larger than an event's row, and most things held are events).
    Frame(Box<ServerFrame>),
}

/// A held thing with the page time it arrived at (the recording's time when
/// replaying): the time its numbers are recorded at, so that measured rates
/// stay measured, whenever they are shown.
#[derive(Debug, Clone)]
pub struct Pending {
    pub held: Held,
    pub at: f64,
}

impl Pending {
    /// Whether it is an event that leaves with no token.
    pub fn skipped(&self) -> bool {
        matches!(
            self.held,
            Held::Event {
                fate: Fate::Skip,
                ..
            }
        )
    }
}

/// The held things, oldest first.
#[derive(Debug, Default)]
pub struct Backlog {
    items: VecDeque<Pending>,
    /// Held events whose fate is [`Fate::Animate`].
    animated: usize,
    /// Held events in all.
    events: usize,
}

impl Backlog {
    /// Holds an event; when [`MAX_WAITING`] already wait for a token, the
    /// oldest ordinary one is first marked to leave without one.
    pub fn push_event(&mut self, row: EventRow, object: Carried, at: f64) {
        if self.animated >= MAX_WAITING && self.skip_oldest() {
            self.animated -= 1;
        }
        self.items.push_back(Pending {
            held: Held::Event {
                row,
                object,
                fate: Fate::Animate,
            },
            at,
        });
        self.animated += 1;
        self.events += 1;
    }

    /// Marks the oldest ordinary event waiting for a token to leave without
    /// one. False when every one waiting is protected.
    fn skip_oldest(&mut self) -> bool {
        let oldest = self.items.iter_mut().find_map(|p| match &mut p.held {
            Held::Event {
                row,
                fate: fate @ Fate::Animate,
                ..
            } if !protected(&row.event) => Some(fate),
            _ => None,
        });
        oldest.map(|fate| *fate = Fate::Skip).is_some()
    }

    /// Marks every event waiting for a token, protected or not, to leave
    /// without one: at live speed nothing waits for a lane (see
    /// [`crate::animator::AnimState::frame`]).
    pub fn skip_all(&mut self) {
        for p in &mut self.items {
            if let Held::Event { fate, .. } = &mut p.held {
                *fate = Fate::Skip;
            }
        }
        self.animated = 0;
    }

    /// Holds a frame that is not an event.
    pub fn push_frame(&mut self, frame: ServerFrame, at: f64) {
        self.items.push_back(Pending {
            held: Held::Frame(Box::new(frame)),
            at,
        });
    }

    /// Events held, with a token to come or not.
    pub fn events(&self) -> usize {
        self.events
    }

    /// Events held that wait for a token.
    pub fn animated(&self) -> usize {
        self.animated
    }

    /// Things held in all.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The arrival time of the oldest thing held.
    pub fn oldest_at(&self) -> Option<f64> {
        self.items.front().map(|p| p.at)
    }

    /// Lets the front go, into `out`.
    fn pop(&mut self, out: &mut Vec<Pending>) -> Option<()> {
        let p = self.items.pop_front()?;
        if let Held::Event { fate, .. } = &p.held {
            self.events -= 1;
            if *fate == Fate::Animate {
                self.animated -= 1;
            }
        }
        out.push(p);
        Some(())
    }

    /// Lets go, into `out`, everything before the next event to animate that
    /// `shows` keeps, and that event; returns its row for the token. None
    /// (with nothing let go) when no such event is held.
    pub fn next_token(
        &mut self,
        shows: &impl Fn(&WatchEvent) -> bool,
        out: &mut Vec<Pending>,
    ) -> Option<EventRow> {
        let i = self.items.iter().position(|p| match &p.held {
            Held::Event {
                row,
                fate: Fate::Animate,
                ..
            } => shows(&row.event),
            _ => false,
        })?;
        for _ in 0..=i {
            self.pop(out);
        }
        match &out.last()?.held {
            Held::Event { row, .. } => Some(row.clone()),
            Held::Frame(_) => None,
        }
    }

    /// Lets go, into `out`, the front things that wait for no token: frames
    /// (but those `holds` keeps back a moment longer), skipped events, and
    /// events `shows` hides.
    pub fn release_ready(
        &mut self,
        shows: &impl Fn(&WatchEvent) -> bool,
        holds: &impl Fn(&ServerFrame) -> bool,
        out: &mut Vec<Pending>,
    ) {
        while let Some(p) = self.items.front() {
            let waits = match &p.held {
                Held::Event {
                    row,
                    fate: Fate::Animate,
                    ..
                } => shows(&row.event),
                Held::Event { .. } => false,
                Held::Frame(frame) => holds(frame),
            };
            if waits {
                return;
            }
            self.pop(out);
        }
    }

    /// Lets go of everything, into `out`: catching up, or a jump.
    pub fn release_all(&mut self, out: &mut Vec<Pending>) {
        while self.pop(out).is_some() {}
    }

    /// Lets go of the oldest things until at most `cap` are held.
    pub fn release_beyond(&mut self, cap: usize, out: &mut Vec<Pending>) {
        while self.items.len() > cap && self.pop(out).is_some() {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_events::pod_event;
    use std::sync::Arc;
    use watchlife_protocol::{
        EventType, FrameBody, ReflectorState, ReflectorUpdate, Stage, WatchEvent,
    };

    fn row(seq: u64, event_type: EventType) -> EventRow {
        EventRow {
            seq,
            event: Arc::new(pod_event(
                event_type,
                &format!("p{seq}"),
                &seq.to_string(),
                &[(Stage::Etcd, 0), (Stage::Reflector, 10)],
            )),
        }
    }

    fn gone(seq: u64) -> ServerFrame {
        ServerFrame {
            seq,
            body: FrameBody::Reflector(ReflectorUpdate {
                resource: "pods".into(),
                state: ReflectorState::Relist {
                    reason: "410".into(),
                },
            }),
        }
    }

    fn all(_: &WatchEvent) -> bool {
        true
    }

    fn never(_: &ServerFrame) -> bool {
        false
    }

    fn seqs(out: &[Pending]) -> Vec<u64> {
        out.iter()
            .map(|p| match &p.held {
                Held::Event { row, .. } => row.seq,
                Held::Frame(f) => f.seq,
            })
            .collect()
    }

    #[test]
    fn a_frame_leaves_with_the_token_before_it_and_not_earlier() {
        let mut b = Backlog::default();
        b.push_event(row(1, EventType::Error), Carried::Nothing, 0.0);
        b.push_frame(gone(2), 0.0);
        b.push_event(row(3, EventType::Added), Carried::Nothing, 1.0);
        let mut out = Vec::new();
        b.release_ready(&all, &never, &mut out);
        assert!(out.is_empty(), "nothing leaves before its token");
        assert_eq!(b.next_token(&all, &mut out).map(|r| r.seq), Some(1));
        b.release_ready(&all, &never, &mut out);
        assert_eq!(
            seqs(&out),
            vec![1, 2],
            "the 410 leaves with the ERROR's token"
        );
        assert_eq!((b.events(), b.animated()), (1, 1));
    }

    #[test]
    fn a_flood_skips_the_oldest_ordinary_events_in_their_turn() {
        let mut b = Backlog::default();
        b.push_event(row(0, EventType::Error), Carried::Nothing, 0.0);
        for seq in 1..100 {
            b.push_event(row(seq, EventType::Modified), Carried::Nothing, seq as f64);
        }
        assert_eq!(b.events(), 100, "nothing is lost");
        assert_eq!(b.animated(), MAX_WAITING);
        let mut out = Vec::new();
        assert_eq!(b.next_token(&all, &mut out).map(|r| r.seq), Some(0));
        b.release_ready(&all, &never, &mut out);
        let skipped = out.iter().filter(|p| p.skipped()).count();
        assert_eq!(skipped, 100 - MAX_WAITING);
        assert_eq!(b.events(), MAX_WAITING - 1);
    }

    #[test]
    fn a_hidden_event_leaves_without_a_token_and_all_can_leave_at_once() {
        let mut b = Backlog::default();
        b.push_event(row(1, EventType::Bookmark), Carried::Nothing, 0.0);
        b.push_event(row(2, EventType::Added), Carried::Nothing, 0.0);
        let no_bookmarks = |e: &WatchEvent| e.event_type != EventType::Bookmark;
        let mut out = Vec::new();
        assert_eq!(
            b.next_token(&no_bookmarks, &mut out).map(|r| r.seq),
            Some(2)
        );
        assert_eq!(seqs(&out), vec![1, 2]);
        b.push_frame(gone(3), 5.0);
        b.push_event(row(4, EventType::Added), Carried::Nothing, 6.0);
        assert_eq!(b.oldest_at(), Some(5.0));
        let mut out = Vec::new();
        b.release_all(&mut out);
        assert_eq!(seqs(&out), vec![3, 4]);
        assert!(b.is_empty() && b.events() == 0 && b.animated() == 0);
    }
}
