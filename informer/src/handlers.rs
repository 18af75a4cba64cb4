//! Event handlers, as a listener calls them.
//!
//! Contract (as client-go's SharedInformer states it): a handler sees the
//! notifications of one object in the order the Indexer applied them; `old`
//! in OnUpdate is what the Indexer held before; a slow handler delays only
//! its own listener.

use crate::object::Object;
use crate::shared_informer::{Kind, Notification};

/// Which callback of a handler ran (client-go's `ResourceEventHandler`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Callback {
    OnAdd,
    OnUpdate,
    OnDelete,
}

/// A registered handler: runs the callback a notification asks for, or
/// none when it filters the object out; returns the callback it ran.
pub trait Handler: Send {
    fn handle(&mut self, n: &Notification) -> Option<Callback>;
}

/// Runs every notification's callback (a plain `ResourceEventHandlerFuncs`).
#[derive(Debug, Default, Clone, Copy)]
pub struct Unfiltered;

impl Handler for Unfiltered {
    fn handle(&mut self, n: &Notification) -> Option<Callback> {
        Some(match n.kind {
            Kind::Add => Callback::OnAdd,
            Kind::Update => Callback::OnUpdate,
            Kind::Delete => Callback::OnDelete,
        })
    }
}

/// Hears only of objects that pass `filter`, as client-go's
/// FilteringResourceEventHandler: an update that makes an object pass
/// becomes OnAdd, one that makes it fail becomes OnDelete.
#[derive(Debug, Clone, Copy)]
pub struct Filtering {
    filter: fn(&Object) -> bool,
}

impl Filtering {
    pub fn new(filter: fn(&Object) -> bool) -> Self {
        Filtering { filter }
    }
}

impl Handler for Filtering {
    fn handle(&mut self, n: &Notification) -> Option<Callback> {
        let pass = self.filter;
        match n.kind {
            Kind::Add => pass(&n.object).then_some(Callback::OnAdd),
            Kind::Delete => pass(&n.object).then_some(Callback::OnDelete),
            Kind::Update => {
                let was = n.old.as_ref().is_some_and(pass);
                match (was, pass(&n.object)) {
                    (true, true) => Some(Callback::OnUpdate),
                    (false, true) => Some(Callback::OnAdd),
                    (true, false) => Some(Callback::OnDelete),
                    (false, false) => None,
                }
            }
        }
    }
}

/// Whether a pod is bound to a node (`spec.nodeName` set).
pub fn is_scheduled(pod: &Object) -> bool {
    pod.meta().node_name().is_some()
}

/// Whether a pod still waits for a node.
pub fn is_unscheduled(pod: &Object) -> bool {
    !is_scheduled(pod)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn update(old: serde_json::Value, new: serde_json::Value) -> Notification {
        Notification {
            id: 1,
            key: "default/p".into(),
            kind: Kind::Update,
            object: Object::from(new),
            old: Some(Object::from(old)),
            final_state_unknown: false,
            resync: false,
            listed: false,
            in_initial_list: false,
        }
    }

    #[test]
    fn binding_a_pod_moves_it_from_the_queue_to_the_cache() {
        let mut queue = Filtering::new(is_unscheduled);
        let mut cache = Filtering::new(is_scheduled);
        let pending = json!({"spec": {}});
        let bound = json!({"spec": {"nodeName": "node-a"}});
        let binding = update(pending.clone(), bound.clone());
        assert_eq!(queue.handle(&binding), Some(Callback::OnDelete));
        assert_eq!(cache.handle(&binding), Some(Callback::OnAdd));
        let again = update(bound.clone(), bound);
        assert_eq!(queue.handle(&again), None);
        assert_eq!(cache.handle(&again), Some(Callback::OnUpdate));
        assert_eq!(Unfiltered.handle(&again), Some(Callback::OnUpdate));
    }
}
