//! What one informer did, in the terms both sides can report: its
//! Reflector's LIST and WATCH requests, the events it received, and the
//! calls of its event handler; each step stamped with when the test learned
//! of it.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use watchlife_protocol::Callback;

/// One step of an informer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A LIST request for its first page, at `rv` ("0", "" or exact) with
    /// this page size (0: unpaged).
    List { rv: String, limit: u64 },
    /// The LIST came back whole (every page), at `rv`.
    Listed { rv: String, items: u64 },
    /// The LIST failed.
    ListFailed { error: String },
    /// A WATCH request from `rv`, asking the server to end it after
    /// `timeout_seconds`.
    Watch { rv: String, timeout_seconds: u64 },
    /// An event about an object (`ADDED`, `MODIFIED`, `DELETED`) or a
    /// `BOOKMARK` (no key). `initial`: it came from a LIST (watchlife's
    /// stream says so; client-go's reference prints watch events only).
    Event {
        kind: String,
        key: String,
        rv: String,
        initial: bool,
    },
    /// A call of the event handler.
    Call(Call),
    /// Anything else worth reading in a trace: errors, a watch's end, a 410.
    Note(String),
}

/// One call of the event handler, as compared between the two sides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// `namespace/name`; for a `DeletedFinalStateUnknown`, the tombstone's key.
    pub key: String,
    pub callback: Callback,
    /// The object's resourceVersion (OnUpdate: the new object's; a
    /// `DeletedFinalStateUnknown`: that of the object inside it).
    pub rv: String,
    /// OnUpdate's old object's resourceVersion; compared for OnUpdate only.
    pub old_rv: Option<String>,
    /// OnDelete got a `DeletedFinalStateUnknown`.
    pub final_state_unknown: bool,
}

impl Call {
    /// What the comparison looks at: the callback, the resourceVersions,
    /// and whether the final state is unknown.
    pub fn signature(&self) -> String {
        match self.callback {
            Callback::OnUpdate => format!(
                "OnUpdate {}→{}",
                self.old_rv.as_deref().unwrap_or("?"),
                self.rv
            ),
            Callback::OnDelete if self.final_state_unknown => {
                format!("OnDelete {} DeletedFinalStateUnknown", self.rv)
            }
            other => format!("{} {}", other.as_str(), self.rv),
        }
    }
}

/// Which steps tell what the side holds: client-go's handler calls, or the
/// events of watchlife's stream (what its page shows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Calls,
    Events,
}

/// A step and when the test learned of it, since the trace's origin.
#[derive(Debug, Clone)]
pub struct Entry {
    pub at: Duration,
    pub step: Step,
}

/// A growing list of steps, filled by a reader task and read by the test.
/// Cloning shares it.
#[derive(Clone)]
pub struct Trace {
    entries: Arc<Mutex<Vec<Entry>>>,
    origin: Instant,
    view: View,
}

impl Trace {
    /// An empty trace whose times count from `origin`; what the side
    /// holds is read from `view`.
    pub fn new(origin: Instant, view: View) -> Trace {
        Trace {
            entries: Default::default(),
            origin,
            view,
        }
    }

    /// Appends a step, stamped now.
    pub fn push(&self, step: Step) {
        let at = self.origin.elapsed();
        self.entries.lock().unwrap().push(Entry { at, step });
    }

    /// Now, on this trace's clock: a mark to look for steps after.
    pub fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    /// The steps so far.
    pub fn entries(&self) -> Vec<Entry> {
        self.entries.lock().unwrap().clone()
    }

    /// The steps since `mark`.
    pub fn since(&self, mark: Duration) -> Vec<Step> {
        self.entries()
            .into_iter()
            .filter(|e| e.at >= mark)
            .map(|e| e.step)
            .collect()
    }

    /// Each LIST request (first pages): (rv, limit), with when it went out
    /// and whether it came back whole (`None` while it is out).
    pub fn lists(&self) -> Vec<ListAttempt> {
        let mut lists: Vec<ListAttempt> = Vec::new();
        for entry in self.entries() {
            match entry.step {
                Step::List { rv, limit } => lists.push(ListAttempt {
                    at: entry.at,
                    rv,
                    limit,
                    ok: None,
                }),
                Step::Listed { .. } => set_outcome(&mut lists, true),
                Step::ListFailed { .. } => set_outcome(&mut lists, false),
                _ => {}
            }
        }
        lists
    }

    /// Each WATCH request: (rv, timeout_seconds).
    pub fn watches(&self) -> Vec<(String, u64)> {
        self.entries()
            .into_iter()
            .filter_map(|e| match e.step {
                Step::Watch {
                    rv,
                    timeout_seconds,
                } => Some((rv, timeout_seconds)),
                _ => None,
            })
            .collect()
    }

    /// The handler's calls, by key, in order.
    pub fn calls(&self) -> BTreeMap<String, Vec<Call>> {
        let mut calls: BTreeMap<String, Vec<Call>> = BTreeMap::new();
        for entry in self.entries() {
            if let Step::Call(call) = entry.step {
                calls.entry(call.key.clone()).or_default().push(call);
            }
        }
        calls
    }

    /// What the side holds now, key → resourceVersion, from its [`View`].
    pub fn held(&self) -> BTreeMap<String, String> {
        let mut held = BTreeMap::new();
        for entry in self.entries() {
            let (key, rv, gone) = match (self.view, entry.step) {
                (View::Calls, Step::Call(c)) => (c.key, c.rv, c.callback == Callback::OnDelete),
                (View::Events, Step::Event { kind, key, rv, .. }) if !key.is_empty() => {
                    (key, rv, kind == "DELETED")
                }
                _ => continue,
            };
            if gone {
                held.remove(&key);
            } else {
                held.insert(key, rv);
            }
        }
        held
    }
}

/// One LIST request and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListAttempt {
    pub at: Duration,
    pub rv: String,
    pub limit: u64,
    /// `Some(true)`: it came back whole; `Some(false)`: it failed.
    pub ok: Option<bool>,
}

impl fmt::Display for ListAttempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LIST rv={:?} limit={}", self.rv, self.limit)
    }
}

/// Marks the last LIST still out as ended.
fn set_outcome(lists: &mut [ListAttempt], ok: bool) {
    if let Some(last) = lists.last_mut().filter(|l| l.ok.is_none()) {
        last.ok = Some(ok);
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::List { rv, limit } => write!(f, "LIST rv={rv:?} limit={limit}"),
            Step::Listed { rv, items } => write!(f, "  listed {items} at rv={rv}"),
            Step::ListFailed { error } => write!(f, "  LIST failed: {error}"),
            Step::Watch {
                rv,
                timeout_seconds,
            } => write!(f, "WATCH rv={rv:?} timeout={timeout_seconds}s"),
            Step::Event {
                kind,
                key,
                rv,
                initial,
            } => {
                let from = if *initial { " (listed)" } else { "" };
                write!(f, "  event {kind} {key} rv={rv}{from}")
            }
            Step::Call(call) => write!(f, "    {} {}", call.key, call.signature()),
            Step::Note(note) => write!(f, "  · {note}"),
        }
    }
}

/// The trace, one step a line, for failure messages; a long one (a side
/// that storms) by its beginning and its end.
pub fn render(entries: &[Entry]) -> String {
    const HEAD: usize = 150;
    const TAIL: usize = 50;
    let line = |e: &Entry| format!("  {:>8.3}s {}\n", e.at.as_secs_f64(), e.step);
    if entries.len() <= HEAD + TAIL {
        return entries.iter().map(line).collect();
    }
    let mut text: String = entries[..HEAD].iter().map(line).collect();
    text += &format!("  … {} steps left out …\n", entries.len() - HEAD - TAIL);
    text.extend(entries[entries.len() - TAIL..].iter().map(line));
    text
}

/// States a test waits for.
impl Trace {
    /// A LIST came back and a WATCH went out after it.
    pub fn watching(&self) -> bool {
        watches_after_a_list(
            &self
                .entries()
                .into_iter()
                .map(|e| e.step)
                .collect::<Vec<_>>(),
        )
    }

    /// Since `mark`, a LIST came back and a WATCH went out after it.
    pub fn relisted_since(&self, mark: Duration) -> bool {
        watches_after_a_list(&self.since(mark))
    }

    /// Since `mark`, a WATCH went out.
    pub fn watched_since(&self, mark: Duration) -> bool {
        self.since(mark)
            .iter()
            .any(|s| matches!(s, Step::Watch { .. }))
    }

    /// This many LISTs failed.
    pub fn failed_lists(&self, n: usize) -> bool {
        self.lists().iter().filter(|l| l.ok == Some(false)).count() >= n
    }
}

fn watches_after_a_list(steps: &[Step]) -> bool {
    steps
        .iter()
        .skip_while(|s| !matches!(s, Step::Listed { .. }))
        .any(|s| matches!(s, Step::Watch { .. }))
}
