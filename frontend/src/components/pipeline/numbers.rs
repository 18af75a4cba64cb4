//! The numbers on an observed stage's node: its rate, its latency from the
//! stage before, its queue depth and negative intervals, worked out from the
//! page's statistics at the refresh clock's pace.

use crate::interval::negative_reason;
use crate::micros::format_micros;
use crate::model::Model;
use crate::narration::etcd_notifies;
use crate::stats::PipelineStats;
use leptos::prelude::*;
use watchlife_protocol::Stage;

/// What the columns of the listeners' lanes are, on the handlers' node.
const HANDLERS_LEGEND: &str = "buffer │ calls │ p50 run";

/// The numbers drawn on an observed stage's node, each line a string
/// (empty when there is nothing to say).
#[derive(Debug, Clone, PartialEq)]
pub struct Numbers {
    pub rate: String,
    pub latency: String,
    /// Queue depth and negative intervals, or the handlers' legend.
    pub third: String,
    /// Why some intervals are negative: the third line's tooltip.
    pub why: String,
}

impl Numbers {
    /// The numbers in one sentence, for the node's accessible label.
    pub fn spoken(&self) -> String {
        [&self.rate, &self.latency, &self.third, &self.why]
            .into_iter()
            .filter(|n| !n.is_empty())
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A stage's numbers, following the refresh clock only, not every event:
/// under load the numbers would change on every frame, faster than they can
/// be read. The first event to reach the stage, and a stream that stands
/// still, show their numbers at once.
pub fn stage_numbers(model: Model, stage: Stage, now: RwSignal<f64>) -> Memo<Numbers> {
    let reached = Memo::new(move |_| model.stats.with(|s| s.stage(stage).is_some()));
    Memo::new(move |_| {
        model.settled.track();
        reached.track();
        now.track();
        let now = model.now();
        let notifies = model
            .hello
            .with_untracked(|h| etcd_notifies(h.as_ref().map(|h| &h.source)));
        model
            .stats
            .with_untracked(|s| numbers_of(s, stage, now, notifies))
    })
}

/// A stage's numbers at page time `now`; `notifies` says what the etcd
/// mark is (see [`etcd_notifies`]).
fn numbers_of(s: &PipelineStats, stage: Stage, now: f64, notifies: bool) -> Numbers {
    let Some(st) = s.stage(stage) else {
        return Numbers {
            rate: "no events yet".to_string(),
            latency: String::new(),
            third: String::new(),
            why: String::new(),
        };
    };
    let rate = format!("{:.1} events/s", st.rate(now));
    let latency = match st.latency_quantiles([0.5, 0.99]) {
        Some([p50, p99]) => format!("p50 {} · p99 {}", format_micros(p50), format_micros(p99)),
        None => "first measured stage".to_string(),
    };
    let depth = st.depth.map(|d| format!("queue depth {d}"));
    // Negative samples are kept, counted here, and explained in the title.
    let (negative, kept) = st.negatives();
    let before = Stage::ALL
        .into_iter()
        .rev()
        .find(|x| *x < stage && s.seen.contains(x));
    let (negatives, why) = match before {
        Some(before) if negative > 0 => (
            Some(format!("{negative} of {kept} negative")),
            format!(
                "{negative} of the last {kept} intervals from the stage before are negative: {}",
                negative_reason(before, notifies)
            ),
        ),
        _ => (None, String::new()),
    };
    let legend = (stage == Stage::Handlers && !s.listeners.lanes.is_empty())
        .then(|| HANDLERS_LEGEND.to_string());
    let third = [depth, negatives]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" · ");
    let third = if third.is_empty() {
        legend.unwrap_or_default()
    } else {
        third
    };
    Numbers {
        rate,
        latency,
        third,
        why,
    }
}
