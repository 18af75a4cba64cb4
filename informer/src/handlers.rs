//! Event handlers, as an informer calls them.
//!
//! Contract (as client-go's SharedInformer states it): a handler sees the
//! notifications of one object in the order the Indexer applied them; `old` in
//! OnUpdate is what the Indexer held before; a handler must not block, because
//! the next notification waits for it.

use serde_json::Value;

/// Which callback a handler received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    OnAdd,
    OnUpdate,
    OnDelete,
}

/// A change the Indexer applied, as handlers receive it.
#[derive(Debug, Clone, Copy)]
pub enum Notification<'a> {
    /// A new object; `initial` when it came from a LIST.
    Add {
        object: &'a Value,
        initial: bool,
    },
    Update {
        old: &'a Value,
        new: &'a Value,
    },
    Delete {
        object: &'a Value,
    },
}

/// A registered handler.
pub trait EventHandler: Send {
    /// Short name, shown where the handler's work is drawn.
    fn name(&self) -> &str;
    fn on_add(&mut self, object: &Value, initial: bool);
    fn on_update(&mut self, old: &Value, new: &Value);
    fn on_delete(&mut self, object: &Value);
}

/// Wraps a handler so it only hears about objects that pass `filter`, as
/// client-go's FilteringResourceEventHandler does: an update that makes an
/// object pass becomes OnAdd, one that makes it fail becomes OnDelete.
pub struct Filtering<H> {
    filter: fn(&Value) -> bool,
    inner: H,
}

impl<H: EventHandler> Filtering<H> {
    pub fn new(filter: fn(&Value) -> bool, inner: H) -> Self {
        Filtering { filter, inner }
    }

    pub fn inner(&self) -> &H {
        &self.inner
    }

    /// Delivers a notification through the filter; returns the call made, if any.
    pub fn deliver(&mut self, n: Notification<'_>) -> Option<Call> {
        let pass = self.filter;
        match n {
            Notification::Add { object, initial } if pass(object) => {
                self.inner.on_add(object, initial);
                Some(Call::OnAdd)
            }
            Notification::Update { old, new } => match (pass(old), pass(new)) {
                (true, true) => {
                    self.inner.on_update(old, new);
                    Some(Call::OnUpdate)
                }
                (false, true) => {
                    self.inner.on_add(new, false);
                    Some(Call::OnAdd)
                }
                (true, false) => {
                    self.inner.on_delete(old);
                    Some(Call::OnDelete)
                }
                (false, false) => None,
            },
            Notification::Delete { object } if pass(object) => {
                self.inner.on_delete(object);
                Some(Call::OnDelete)
            }
            _ => None,
        }
    }
}

/// A handler that counts what it was told: enough to show where events went.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally {
    pub name: &'static str,
    pub adds: u64,
    pub updates: u64,
    pub deletes: u64,
    /// Objects the handler currently holds (adds minus deletes).
    pub holding: i64,
}

impl Tally {
    pub fn named(name: &'static str) -> Self {
        Tally {
            name,
            ..Tally::default()
        }
    }
}

impl EventHandler for Tally {
    fn name(&self) -> &str {
        self.name
    }
    fn on_add(&mut self, _: &Value, _: bool) {
        self.adds += 1;
        self.holding += 1;
    }
    fn on_update(&mut self, _: &Value, _: &Value) {
        self.updates += 1;
    }
    fn on_delete(&mut self, _: &Value) {
        self.deletes += 1;
        self.holding -= 1;
    }
}

/// Whether a pod is bound to a node (`spec.nodeName` set).
pub fn is_scheduled(pod: &Value) -> bool {
    pod.pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty())
}

/// The mini scheduler's pair of filtering handlers from the talk: unscheduled
/// pods go to its scheduling queue, scheduled pods to its cache.
pub struct SchedulerSplit {
    pub queue: Filtering<Tally>,
    pub cache: Filtering<Tally>,
}

impl Default for SchedulerSplit {
    fn default() -> Self {
        SchedulerSplit {
            queue: Filtering::new(|p| !is_scheduled(p), Tally::named("scheduling queue")),
            cache: Filtering::new(is_scheduled, Tally::named("scheduler cache")),
        }
    }
}

impl SchedulerSplit {
    /// Delivers to both halves; returns which one took the notification.
    pub fn deliver(&mut self, n: Notification<'_>) -> Vec<(&'static str, Call)> {
        let mut calls = Vec::new();
        if let Some(call) = self.queue.deliver(n) {
            calls.push((self.queue.inner().name, call));
        }
        if let Some(call) = self.cache.deliver(n) {
            calls.push((self.cache.inner().name, call));
        }
        calls
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn binding_a_pod_moves_it_from_the_queue_to_the_cache() {
        let mut split = SchedulerSplit::default();
        let pending = json!({"spec": {}});
        let bound = json!({"spec": {"nodeName": "node-a"}});
        assert_eq!(
            split.deliver(Notification::Add {
                object: &pending,
                initial: false
            }),
            vec![("scheduling queue", Call::OnAdd)]
        );
        assert_eq!(
            split.deliver(Notification::Update {
                old: &pending,
                new: &bound
            }),
            vec![
                ("scheduling queue", Call::OnDelete),
                ("scheduler cache", Call::OnAdd)
            ]
        );
        assert_eq!(
            split.deliver(Notification::Update {
                old: &bound,
                new: &bound
            }),
            vec![("scheduler cache", Call::OnUpdate)]
        );
        assert_eq!(
            split.deliver(Notification::Delete { object: &bound }),
            vec![("scheduler cache", Call::OnDelete)]
        );
        assert_eq!(split.queue.inner().holding, 0);
        assert_eq!(split.cache.inner().holding, 0);
        assert_eq!(split.cache.inner().updates, 1);
    }
}
