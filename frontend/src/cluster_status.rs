//! The cluster's status, apart from the page's link to the bridge: whether
//! the bridge's Reflectors reach the apiserver, since when, when they try
//! again, and why not, in plain words.
//!
//! It follows the frames as they arrive (the wall clock), not the
//! animation: an on-call engineer wants to know now that the cluster went
//! away. A Reflector is failing from its first `backoff` until the server
//! answers it again: a LIST or a streaming list finished, a BOOKMARK came,
//! or a heartbeat counts as many open watches as there are resources (each
//! Reflector holds at most one, so every one is watching).

use crate::plain_words::{Kind, grant_advice, plain_error, watch_end};
use std::collections::BTreeMap;
use watchlife_protocol::{FrameBody, ReflectorState, Source};

/// How long a note about a watch that ended (not a failure) stays shown.
pub const NOTE_SHOWN_MS: f64 = 20_000.0;

/// What the bridge has said of its source, as of the last frame.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterStatus {
    /// The source is a real cluster (not the demo's control plane).
    pub cluster: bool,
    /// Resources watched, as the hello named them.
    resources: usize,
    /// The failing Reflectors, by resource.
    failing: BTreeMap<String, Failing>,
    /// Wall time (ms) the current trouble began; `None` when there is none.
    since_ms: Option<f64>,
    /// Wall time (ms) the last trouble ended.
    back_ms: Option<f64>,
    /// The server has answered a Reflector at least once.
    answered: bool,
    /// When each resource's latest WATCH went out, and its timeout.
    watches: BTreeMap<String, (f64, u64)>,
    /// The latest note worth a line that is not a failure.
    note: Option<Note>,
}

/// One failing Reflector.
#[derive(Debug, Clone, PartialEq)]
struct Failing {
    kind: Kind,
    words: String,
    raw: String,
    /// Wall time (ms) of its next try.
    retry_at_ms: f64,
}

/// A plain note with its raw text and when it came.
#[derive(Debug, Clone, PartialEq)]
struct Note {
    words: String,
    raw: String,
    at_ms: f64,
}

/// The status line's tone, for the stylesheet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Ok,
    Trouble,
    Back,
}

impl Tone {
    pub fn as_str(self) -> &'static str {
        match self {
            Tone::Ok => "ok",
            Tone::Trouble => "trouble",
            Tone::Back => "back",
        }
    }
}

/// The status line as drawn: a headline, plain words under it, and the raw
/// text behind a click.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub tone: Tone,
    pub headline: String,
    pub words: String,
    pub raw: String,
}

impl ClusterStatus {
    /// Whether `body` can change the status (the rest is not looked at).
    pub fn concerns(body: &FrameBody) -> bool {
        matches!(
            body,
            FrameBody::Hello(_)
                | FrameBody::Reflector(_)
                | FrameBody::Snapshot(_)
                | FrameBody::Heartbeat(_)
        )
    }

    /// Takes in one frame that arrived at wall time `now_ms`.
    pub fn observe(&mut self, body: &FrameBody, now_ms: f64) {
        match body {
            FrameBody::Hello(hello) => {
                self.cluster = matches!(hello.source, Source::Cluster { .. });
                self.resources = hello.resources.len();
            }
            FrameBody::Reflector(update) => self.reflector(&update.resource, &update.state, now_ms),
            FrameBody::Snapshot(snapshot) => {
                for update in &snapshot.reflectors {
                    self.reflector(&update.resource, &update.state, now_ms);
                }
            }
            FrameBody::Heartbeat(beat) => {
                let all_open = beat
                    .watches_open
                    .is_some_and(|n| self.resources > 0 && n >= self.resources as u64);
                if all_open {
                    self.answered = true;
                    let failing: Vec<String> = self.failing.keys().cloned().collect();
                    for resource in failing {
                        self.answered(&resource, now_ms);
                    }
                }
            }
            _ => {}
        }
    }

    fn reflector(&mut self, resource: &str, state: &ReflectorState, now_ms: f64) {
        match state {
            ReflectorState::Backoff { delay_ms, error } => {
                let plain = plain_error(error, resource);
                self.since_ms.get_or_insert(now_ms);
                self.failing.insert(
                    resource.to_string(),
                    Failing {
                        kind: plain.kind,
                        words: plain.words,
                        raw: format!("{resource}: {error}"),
                        retry_at_ms: now_ms + *delay_ms as f64,
                    },
                );
            }
            ReflectorState::ListFinished { .. }
            | ReflectorState::InitialEventsEnd { .. }
            | ReflectorState::Bookmark { .. }
            | ReflectorState::Answered { .. } => self.answered(resource, now_ms),
            ReflectorState::WatchStarted {
                timeout_seconds, ..
            } => drop(
                self.watches
                    .insert(resource.to_string(), (now_ms, *timeout_seconds)),
            ),
            ReflectorState::WatchEnded { reason, .. } if reason.contains("server closed it") => {
                let (started, timeout) = self.watches.get(resource).copied().unwrap_or((now_ms, 0));
                self.note(
                    format!("{resource}: {}", watch_end(now_ms - started, timeout)),
                    reason,
                    now_ms,
                );
            }
            ReflectorState::Gone { message, .. } => self.note(
                format!("{resource}: 410 Gone, its resourceVersion was compacted away; relisting"),
                message,
                now_ms,
            ),
            _ => {}
        }
    }

    fn note(&mut self, words: String, raw: &str, now_ms: f64) {
        self.note = Some(Note {
            words,
            raw: raw.to_string(),
            at_ms: now_ms,
        });
    }

    /// The server answered `resource`'s Reflector at `now_ms`.
    fn answered(&mut self, resource: &str, now_ms: f64) {
        self.answered = true;
        if self.failing.remove(resource).is_some() && self.failing.is_empty() {
            self.since_ms = None;
            self.back_ms = Some(now_ms);
        }
    }

    /// The line to draw at wall time `now_ms` (`clock` writes a wall time
    /// as the viewer reads one), or none: a demo that has had no trouble.
    pub fn line(&self, now_ms: f64, clock: &dyn Fn(f64) -> String) -> Option<Line> {
        if let Some(worst) = self.failing.values().min_by(|a, b| a.kind.cmp(&b.kind)) {
            return Some(self.trouble(worst, now_ms, clock));
        }
        let note = self
            .note
            .as_ref()
            .filter(|n| now_ms - n.at_ms < NOTE_SHOWN_MS);
        let (words, raw) = note.map_or((String::new(), String::new()), |n| {
            (n.words.clone(), n.raw.clone())
        });
        if let Some(back) = self.back_ms {
            let headline = format!("back since {}", clock(back));
            return Some(Line {
                tone: Tone::Back,
                headline,
                words,
                raw,
            });
        }
        if !self.cluster && note.is_none() {
            return None;
        }
        let headline = match (self.cluster, self.answered) {
            (true, true) => "cluster reachable",
            (true, false) => "cluster: waiting for its first answer",
            (false, _) => "demo control plane",
        };
        Some(Line {
            tone: Tone::Ok,
            headline: headline.into(),
            words,
            raw,
        })
    }

    fn trouble(&self, worst: &Failing, now_ms: f64, clock: &dyn Fn(f64) -> String) -> Line {
        let since = clock(self.since_ms.unwrap_or(now_ms));
        let retry = retrying(worst.retry_at_ms - now_ms);
        let (resources, same): (Vec<&str>, Vec<&Failing>) = self
            .failing
            .iter()
            .filter(|(_, f)| f.kind == worst.kind)
            .map(|(resource, f)| (resource.as_str(), f))
            .unzip();
        let headline = match worst.kind {
            Kind::Unreachable => format!("cluster unreachable since {since} · {retry}"),
            Kind::Forbidden => {
                let mut denials: Vec<&str> = same.iter().map(|f| f.words.as_str()).collect();
                denials.dedup();
                format!("{} · {retry}", denials.join("; "))
            }
            Kind::Unauthorized => format!("unauthorized since {since} · {retry}"),
            Kind::ServerError => format!("the apiserver is failing since {since} · {retry}"),
            Kind::Other => format!("list-watch failing since {since} · {retry}"),
        };
        let words = match worst.kind {
            Kind::Forbidden => {
                let raws: Vec<&str> = same.iter().map(|f| f.raw.as_str()).collect();
                grant_advice(&raws, &resources)
            }
            _ => worst.words.clone(),
        };
        let raw = same
            .iter()
            .map(|f| f.raw.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        Line {
            tone: Tone::Trouble,
            headline,
            words,
            raw,
        }
    }
}

/// "retrying in 12 s" (rounded up, so it reads 1 s until the try), or
/// "retrying now" once the deadline has passed.
fn retrying(left_ms: f64) -> String {
    if left_ms > 0.0 {
        format!("retrying in {} s", (left_ms / 1000.0).ceil() as u64)
    } else {
        "retrying now".into()
    }
}

#[cfg(test)]
mod tests;
