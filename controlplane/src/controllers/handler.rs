//! Filtering event handlers, as client-go's `FilteringResourceEventHandler`.
//!
//! One informer can feed several handlers, each seeing only the objects its
//! filter accepts. The mini scheduler uses two on its pod informer: pods with
//! no node go to its scheduling queue, pods with a node to its cache.

use super::informer::Notification;
use serde_json::Value;

/// A handler's filter: which objects it wants.
#[derive(Debug, Clone, Copy)]
pub struct Filter {
    /// What the handler is, as the UI labels it.
    pub name: &'static str,
    pub accepts: fn(&Value) -> bool,
}

impl Filter {
    /// The notification this filter's handler receives, if any.
    ///
    /// An update is judged on both sides, as client-go does: accepted before
    /// and after is an update; accepted only after is an add of the new
    /// object; accepted only before is a delete of the old object (the object
    /// left this handler's view). Adds and deletes pass when the object is
    /// accepted.
    pub fn filter(&self, notification: &Notification) -> Option<Notification> {
        let accepts = self.accepts;
        match notification {
            Notification::Added(obj) | Notification::Deleted(obj) => {
                accepts(obj).then(|| notification.clone())
            }
            Notification::Updated { old, new } => match (accepts(old), accepts(new)) {
                (true, true) => Some(notification.clone()),
                (false, true) => Some(Notification::Added(new.clone())),
                (true, false) => Some(Notification::Deleted(old.clone())),
                (false, false) => None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    const EVEN: Filter = Filter {
        name: "even",
        accepts: |v| v["n"].as_u64().is_some_and(|n| n % 2 == 0),
    };

    fn n(v: u64) -> Arc<Value> {
        Arc::new(json!({ "n": v }))
    }

    #[test]
    fn updates_across_the_filter_become_adds_and_deletes() {
        let update = |old, new| Notification::Updated {
            old: n(old),
            new: n(new),
        };
        assert_eq!(EVEN.filter(&Notification::Added(n(1))), None);
        assert_eq!(
            EVEN.filter(&Notification::Added(n(2))),
            Some(Notification::Added(n(2)))
        );
        assert_eq!(EVEN.filter(&update(2, 4)), Some(update(2, 4)));
        assert_eq!(EVEN.filter(&update(1, 2)), Some(Notification::Added(n(2))));
        assert_eq!(
            EVEN.filter(&update(2, 3)),
            Some(Notification::Deleted(n(2)))
        );
        assert_eq!(EVEN.filter(&update(1, 3)), None);
        assert_eq!(EVEN.filter(&Notification::Deleted(n(3))), None);
    }
}
