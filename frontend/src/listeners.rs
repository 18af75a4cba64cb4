//! The informer's listeners (client-go's processorListeners) as the events
//! tell of them: one lane per listener name that some event's handling
//! called, in the order names first appeared. No list of listeners is
//! assumed; a listener that filtered an event out was not called, so that
//! event adds nothing to its lane.

use std::collections::VecDeque;
use watchlife_protocol::{Callback, HandlerCall};

/// Handler run times kept per listener for its percentiles: enough for a
/// stable p50, small enough to sort on every refresh.
pub const HANDLER_SAMPLES: usize = 128;

/// One listener's lane. Each resource has an informer of its own, so a name
/// (`controller`) may stand for one listener per resource: its depth is the
/// one reported by the latest call, with the resource that call was for.
#[derive(Debug, Clone, PartialEq)]
pub struct Lane {
    pub name: String,
    /// Notifications in the listener's buffer as its latest call entered it.
    pub depth: u32,
    /// The resource of the latest call.
    pub resource: String,
    /// Calls by callback: OnAdd, OnUpdate, OnDelete.
    pub calls: [u64; 3],
    /// Dequeue → return (µs) of the latest calls, newest last.
    durations: VecDeque<i64>,
}

impl Lane {
    /// p50 and p99 of the kept dequeue → return times (µs).
    pub fn handling_quantiles(&self) -> Option<[i64; 2]> {
        crate::quantiles::quantiles(self.durations.iter().copied().collect(), [0.5, 0.99])
    }

    /// How many dequeue → return times are kept.
    pub fn samples(&self) -> usize {
        self.durations.len()
    }
}

/// Index of a callback in [`Lane::calls`].
fn slot(callback: Callback) -> usize {
    match callback {
        Callback::OnAdd => 0,
        Callback::OnUpdate => 1,
        Callback::OnDelete => 2,
    }
}

/// Every listener seen, in order of first appearance.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listeners {
    pub lanes: Vec<Lane>,
}

impl Listeners {
    /// Records the calls of one event of `resource`.
    pub fn record(&mut self, resource: &str, calls: &[HandlerCall]) {
        for call in calls {
            let i = match self.lanes.iter().position(|l| l.name == call.listener) {
                Some(i) => i,
                None => {
                    self.lanes.push(Lane {
                        name: call.listener.clone(),
                        depth: 0,
                        resource: String::new(),
                        calls: [0; 3],
                        durations: VecDeque::new(),
                    });
                    self.lanes.len() - 1
                }
            };
            let lane = &mut self.lanes[i];
            lane.depth = call.depth;
            if lane.resource != resource {
                lane.resource = resource.to_string();
            }
            lane.calls[slot(call.callback)] += 1;
            if lane.durations.len() == HANDLER_SAMPLES {
                lane.durations.pop_front();
            }
            lane.durations
                .push_back(crate::interval::interval(call.dequeued, call.returned));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(listener: &str, callback: Callback, depth: u32, took: u64) -> HandlerCall {
        HandlerCall {
            listener: listener.into(),
            callback,
            depth,
            dequeued: 1_000,
            returned: 1_000 + took,
        }
    }

    #[test]
    fn lanes_come_from_the_calls_in_order_of_appearance() {
        let mut l = Listeners::default();
        l.record("pods", &[call("controller", Callback::OnAdd, 1, 30)]);
        // The scheduler's filter let this one through; the controller ran too.
        l.record(
            "pods",
            &[
                call("scheduler: scheduled", Callback::OnUpdate, 4, 10),
                call("controller", Callback::OnUpdate, 2, 50),
            ],
        );
        l.record(
            "configmaps",
            &[call("controller", Callback::OnDelete, 0, 40)],
        );
        let names: Vec<&str> = l.lanes.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["controller", "scheduler: scheduled"]);
        let c = &l.lanes[0];
        assert_eq!(c.calls, [1, 1, 1]);
        assert_eq!((c.depth, c.resource.as_str()), (0, "configmaps"));
        assert_eq!(c.handling_quantiles(), Some([40, 50]));
        let s = &l.lanes[1];
        assert_eq!((s.calls, s.depth), ([0, 1, 0], 4));
    }

    #[test]
    fn a_listener_never_called_has_no_lane_and_samples_are_bounded() {
        let mut l = Listeners::default();
        l.record("pods", &[]);
        assert!(l.lanes.is_empty());
        for _ in 0..HANDLER_SAMPLES + 5 {
            l.record("pods", &[call("controller", Callback::OnUpdate, 0, 7)]);
        }
        assert_eq!(l.lanes[0].samples(), HANDLER_SAMPLES);
        assert_eq!(l.lanes[0].calls[1], HANDLER_SAMPLES as u64 + 5);
    }
}
