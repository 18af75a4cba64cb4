//! The stages after the Reflector, wired together and instrumented.
//!
//! Reflector → [`Fifo`] → (processing loop) → [`Indexer`] → handlers →
//! [`Workqueue`] → (worker) → reconcile. Each stage stamps the event with the
//! time it reached the stage and, where the stage is a queue, its depth. The
//! caller drives the three sides — [`Informer::enqueue`] /
//! [`Informer::enqueue_list`] from the Reflector, [`Informer::process_one`] from
//! the processing loop, [`Informer::reconcile_one`] from a worker — from
//! whichever tasks it likes; the measured times are then the real queueing.

use crate::fifo::{DeltaType, Fifo};
use crate::handlers::{Notification, SchedulerSplit};
use crate::indexer::Indexer;
use crate::workqueue::Workqueue;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use watchlife_protocol::{EventType, Micros, Stage, StageMark, WatchEvent};

/// One event on its way through the stages.
#[derive(Debug)]
struct Delta {
    event: WatchEvent,
    object: Arc<Value>,
    kind: DeltaType,
}

/// What the FIFO holds: single deltas, or a whole LIST to apply at once.
#[derive(Debug)]
enum Item {
    Delta(Delta),
    Replace(Vec<Delta>),
}

/// Events finished by one reconcile of one key.
#[derive(Debug)]
pub struct Reconciled {
    pub key: String,
    /// The events merged into this reconcile, oldest first, every stage stamped.
    pub events: Vec<WatchEvent>,
    /// The resourceVersion the worker read from the Indexer (absent when the
    /// object is gone). Newer than the first event's when later ones merged in.
    pub seen_version: Option<String>,
}

/// The informer of one resource.
pub struct Informer {
    fifo: Fifo<Item>,
    indexer: Indexer,
    scheduler: SchedulerSplit,
    workqueue: Workqueue,
    /// Events past the workqueue, waiting for their key's reconcile.
    in_flight: HashMap<u64, WatchEvent>,
    next_id: u64,
}

impl Default for Informer {
    fn default() -> Self {
        Informer::new()
    }
}

impl Informer {
    pub fn new() -> Self {
        Informer {
            fifo: Fifo::default(),
            indexer: Indexer::default(),
            scheduler: SchedulerSplit::default(),
            workqueue: Workqueue::default(),
            in_flight: HashMap::new(),
            next_id: 0,
        }
    }

    /// The Reflector queues one watch event (ADDED, MODIFIED or DELETED).
    /// BOOKMARK and ERROR events stop at the Reflector and are ignored here.
    pub fn enqueue(&mut self, mut event: WatchEvent, object: Arc<Value>, now: Micros) {
        let kind = match event.event_type {
            EventType::Added => DeltaType::Added,
            EventType::Modified => DeltaType::Updated,
            EventType::Deleted => DeltaType::Deleted,
            EventType::Bookmark | EventType::Error => return,
        };
        let depth = self.fifo.len() + 1;
        stamp(&mut event, Stage::Fifo, now, Some(depth));
        self.fifo.push(Item::Delta(Delta {
            event,
            object,
            kind,
        }));
    }

    /// The Reflector queues a whole LIST: applied to the Indexer in one step.
    pub fn enqueue_list(&mut self, items: Vec<(WatchEvent, Arc<Value>)>, now: Micros) {
        let depth = self.fifo.len() + 1;
        let deltas = items
            .into_iter()
            .map(|(mut event, object)| {
                stamp(&mut event, Stage::Fifo, now, Some(depth));
                Delta {
                    event,
                    object,
                    kind: DeltaType::Replaced,
                }
            })
            .collect();
        self.fifo.push(Item::Replace(deltas));
    }

    /// The processing loop's step: pops one FIFO item, applies it to the
    /// Indexer, calls the handlers, and adds the keys to the workqueue.
    /// Returns false when the FIFO was empty.
    pub fn process_one(&mut self, now: Micros) -> bool {
        match self.fifo.pop() {
            None => false,
            Some(Item::Delta(delta)) => {
                let notification_old = match delta.kind {
                    DeltaType::Deleted => self.indexer.remove(&delta.event.target.key()),
                    _ => self
                        .indexer
                        .upsert(&delta.event.target.key(), delta.object.clone()),
                };
                self.after_indexer(delta, notification_old, now);
                true
            }
            Some(Item::Replace(deltas)) => {
                self.replace(deltas, now);
                true
            }
        }
    }

    /// A worker's step: takes the oldest key from the workqueue, reads the
    /// object from the Indexer, and finishes every event merged into the key.
    pub fn reconcile_one(&mut self, now: Micros) -> Option<Reconciled> {
        let (key, ids) = self.workqueue.get()?;
        let seen_version = self
            .indexer
            .get(&key)
            .and_then(|o| o.pointer("/metadata/resourceVersion"))
            .and_then(Value::as_str)
            .map(String::from);
        let events = ids
            .into_iter()
            .filter_map(|id| self.in_flight.remove(&id))
            .map(|mut event| {
                stamp(&mut event, Stage::Reconcile, now, None);
                event
            })
            .collect();
        self.workqueue.done(&key);
        Some(Reconciled {
            key,
            events,
            seen_version,
        })
    }

    /// The Indexer (read-only).
    pub fn indexer(&self) -> &Indexer {
        &self.indexer
    }

    /// The scheduler's filtering handlers (read-only).
    pub fn scheduler(&self) -> &SchedulerSplit {
        &self.scheduler
    }

    /// Items waiting in the FIFO.
    pub fn fifo_depth(&self) -> usize {
        self.fifo.len()
    }

    /// Keys waiting in the workqueue.
    pub fn workqueue_depth(&self) -> usize {
        self.workqueue.len()
    }

    /// Applies a LIST atomically, then notifies per object: OnAdd for new
    /// keys, OnUpdate for known ones, OnDelete (a synthesized DELETED event)
    /// for keys the LIST no longer has.
    fn replace(&mut self, deltas: Vec<Delta>, now: Micros) {
        let listed: std::collections::HashSet<String> =
            deltas.iter().map(|d| d.event.target.key()).collect();
        let mut vanished: Vec<(String, Arc<Value>)> = self
            .indexer
            .keys()
            .filter(|k| !listed.contains(*k))
            .map(|k| {
                (
                    k.to_string(),
                    self.indexer.get(k).cloned().expect("listed key"),
                )
            })
            .collect();
        vanished.sort_by(|a, b| a.0.cmp(&b.0));
        let mut previous: HashMap<String, Arc<Value>> = HashMap::new();
        for d in &deltas {
            if let Some(old) = self.indexer.get(&d.event.target.key()) {
                previous.insert(d.event.target.key(), old.clone());
            }
        }
        self.indexer.replace(
            deltas
                .iter()
                .map(|d| (d.event.target.key(), d.object.clone())),
        );
        let template = deltas.first().map(|d| d.event.clone());
        for mut delta in deltas {
            let old = previous.remove(&delta.event.target.key());
            if old.is_some() {
                delta.event.event_type = EventType::Modified;
            }
            self.after_indexer(delta, old, now);
        }
        for (key, object) in vanished {
            let event = deleted_by_relist(template.as_ref(), &key, &object, now);
            self.after_indexer(
                Delta {
                    event,
                    object: object.clone(),
                    kind: DeltaType::Deleted,
                },
                Some(object),
                now,
            );
        }
    }

    /// Handlers and workqueue for one delta already applied to the Indexer;
    /// `old` is what the Indexer held before.
    fn after_indexer(&mut self, mut delta: Delta, old: Option<Arc<Value>>, now: Micros) {
        stamp(&mut delta.event, Stage::Indexer, now, None);
        let new = delta.object.as_ref();
        let notification = match (delta.kind, old.as_deref()) {
            (DeltaType::Deleted, Some(old)) => Notification::Delete { object: old },
            (DeltaType::Deleted, None) => Notification::Delete { object: new },
            (_, Some(old)) => Notification::Update { old, new },
            (_, None) => Notification::Add {
                object: new,
                initial: delta.kind == DeltaType::Replaced,
            },
        };
        self.scheduler.deliver(notification);
        stamp(&mut delta.event, Stage::Handlers, now, None);
        // The controller's own handler: enqueue the key, whatever changed.
        let id = self.next_id;
        self.next_id += 1;
        let added = self.workqueue.add(&delta.event.target.key(), id);
        stamp(&mut delta.event, Stage::Workqueue, now, Some(added.depth));
        delta.event.coalesced = added.coalesced;
        self.in_flight.insert(id, delta.event);
    }
}

fn stamp(event: &mut WatchEvent, stage: Stage, at: Micros, depth: Option<usize>) {
    event.stages.insert(
        stage,
        StageMark {
            at,
            depth: depth.map(|d| d.min(u32::MAX as usize) as u32),
        },
    );
}

/// The DELETED event a relist implies for an object the LIST no longer has
/// (client-go's DeletedFinalStateUnknown).
fn deleted_by_relist(
    template: Option<&WatchEvent>,
    key: &str,
    object: &Arc<Value>,
    now: Micros,
) -> WatchEvent {
    let (namespace, name) = match key.split_once('/') {
        Some((ns, name)) => (Some(ns.to_string()), name.to_string()),
        None => (None, key.to_string()),
    };
    let mut event = WatchEvent {
        event_type: EventType::Deleted,
        target: watchlife_protocol::ObjectRef {
            resource: template
                .map(|t| t.target.resource.clone())
                .unwrap_or_default(),
            kind: object
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            namespace,
            name,
        },
        resource_version: object
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        object: (**object).clone(),
        stages: Default::default(),
        initial: true,
        coalesced: false,
        handled: Default::default(),
    };
    stamp(&mut event, Stage::Fifo, now, None);
    event
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use watchlife_protocol::ObjectRef;

    fn event(t: EventType, name: &str, rv: u64) -> (WatchEvent, Arc<Value>) {
        let object = Arc::new(json!({
            "kind": "Pod",
            "metadata": {"namespace": "default", "name": name, "resourceVersion": rv.to_string()}
        }));
        let event = WatchEvent {
            event_type: t,
            target: ObjectRef {
                resource: "pods".into(),
                kind: "Pod".into(),
                namespace: Some("default".into()),
                name: name.into(),
            },
            resource_version: rv.to_string(),
            object: (*object).clone(),
            stages: Default::default(),
            initial: false,
            coalesced: false,
            handled: Default::default(),
        };
        (event, object)
    }

    fn push(inf: &mut Informer, t: EventType, name: &str, rv: u64, now: Micros) {
        let (e, o) = event(t, name, rv);
        inf.enqueue(e, o, now);
    }

    #[test]
    fn every_stage_is_stamped_in_order() {
        let mut inf = Informer::new();
        push(&mut inf, EventType::Added, "a", 519, 10);
        assert!(inf.process_one(20));
        let done = inf.reconcile_one(30).unwrap();
        assert_eq!(done.key, "default/a");
        assert_eq!(done.seen_version.as_deref(), Some("519"));
        let stages: Vec<_> = done.events[0]
            .stages
            .iter()
            .map(|(s, m)| (*s, m.at))
            .collect();
        assert_eq!(
            stages,
            vec![
                (Stage::Fifo, 10),
                (Stage::Indexer, 20),
                (Stage::Handlers, 20),
                (Stage::Workqueue, 20),
                (Stage::Reconcile, 30)
            ]
        );
        assert_eq!(done.events[0].stages[&Stage::Fifo].depth, Some(1));
    }

    #[test]
    fn later_events_for_a_queued_key_merge_into_one_reconcile() {
        let mut inf = Informer::new();
        push(&mut inf, EventType::Added, "a", 519, 1);
        push(&mut inf, EventType::Modified, "a", 603, 1);
        push(&mut inf, EventType::Modified, "a", 604, 1);
        while inf.process_one(2) {}
        assert_eq!(inf.workqueue_depth(), 1);
        let done = inf.reconcile_one(3).unwrap();
        let seen: Vec<_> = done
            .events
            .iter()
            .map(|e| (e.resource_version.as_str(), e.coalesced))
            .collect();
        assert_eq!(seen, vec![("519", false), ("603", true), ("604", true)]);
        assert_eq!(done.seen_version.as_deref(), Some("604"));
        assert!(inf.reconcile_one(4).is_none());
    }

    #[test]
    fn a_relist_replaces_the_store_and_deletes_what_vanished() {
        let mut inf = Informer::new();
        push(&mut inf, EventType::Added, "a", 1, 0);
        push(&mut inf, EventType::Added, "b", 2, 0);
        while inf.process_one(0) {}
        while inf.reconcile_one(0).is_some() {}
        inf.enqueue_list(
            vec![
                event(EventType::Added, "b", 5),
                event(EventType::Added, "c", 6),
            ],
            1,
        );
        assert!(inf.process_one(2));
        let mut keys: Vec<_> = inf.indexer().keys().map(String::from).collect();
        keys.sort();
        assert_eq!(keys, vec!["default/b", "default/c"]);
        let mut finished = Vec::new();
        while let Some(r) = inf.reconcile_one(3) {
            finished.extend(r.events.into_iter().map(|e| (e.target.name, e.event_type)));
        }
        finished.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            finished,
            vec![
                ("a".to_string(), EventType::Deleted),
                ("b".to_string(), EventType::Modified),
                ("c".to_string(), EventType::Added)
            ]
        );
    }

    #[test]
    fn the_scheduler_split_sees_pods_move_to_its_cache() {
        let mut inf = Informer::new();
        let (e, _) = event(EventType::Added, "p", 1);
        inf.enqueue(e, Arc::new(json!({"spec": {}})), 0);
        let (e, _) = event(EventType::Modified, "p", 2);
        inf.enqueue(e, Arc::new(json!({"spec": {"nodeName": "node-a"}})), 0);
        while inf.process_one(0) {}
        assert_eq!(inf.scheduler().queue.inner().holding, 0);
        assert_eq!(inf.scheduler().cache.inner().holding, 1);
    }
}
