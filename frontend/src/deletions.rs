//! The deleted objects the page keeps showing a while, greyed, in the order
//! they were deleted: the ones to forget are always at the front, so that
//! forgetting costs nothing like a pass over every object on every event.

use crate::history::{ObjectHistory, ObjectKey};
use std::collections::{BTreeMap, VecDeque};

/// How long a deleted object stays in the table (greyed, its history ending
/// in DELETED), so that what happened to it can still be read.
pub const DELETED_KEPT_MS: f64 = 60_000.0;
/// Deleted objects kept at most, however many were deleted in that time.
pub const DELETED_KEPT: usize = 100;

/// The deletions of the objects in the table, oldest first.
///
/// Contract: every object whose history has `deleted_at` has an entry with
/// that time, as long as [`Deletions::changed`] is told of every change of
/// `deleted_at`. An entry whose object was since created again, deleted
/// again or removed is stale, and skipped when it reaches the front.
#[derive(Debug, Default)]
pub struct Deletions {
    /// (page time of the deletion in ms, key), in the order of deletion.
    order: VecDeque<(f64, ObjectKey)>,
    /// Entries that are not stale: the deleted objects in the table.
    kept: usize,
}

impl Deletions {
    /// The deleted objects of `objects`, as after a snapshot replaced them.
    pub fn of(objects: &BTreeMap<ObjectKey, ObjectHistory>) -> Deletions {
        let mut order: Vec<(f64, ObjectKey)> = objects
            .iter()
            .filter_map(|(key, h)| h.deleted_at.map(|at| (at, key.clone())))
            .collect();
        order.sort_by(|a, b| a.0.total_cmp(&b.0));
        Deletions {
            kept: order.len(),
            order: order.into(),
        }
    }

    /// An event changed the `deleted_at` of the object at `key` from
    /// `before` to `after`.
    pub fn changed(&mut self, key: &ObjectKey, before: Option<f64>, after: Option<f64>) {
        match (before, after) {
            (None, Some(at)) => {
                self.kept += 1;
                self.order.push_back((at, key.clone()));
            }
            (Some(_), None) => self.kept = self.kept.saturating_sub(1),
            // Deleted again: the older entry is now stale.
            (Some(was), Some(at)) if was != at => self.order.push_back((at, key.clone())),
            _ => {}
        }
    }

    /// Removes from `objects` the deleted ones older than
    /// [`DELETED_KEPT_MS`] at page time `now`, and the oldest beyond
    /// [`DELETED_KEPT`]. True when it removed any.
    pub fn forget(&mut self, objects: &mut BTreeMap<ObjectKey, ObjectHistory>, now: f64) -> bool {
        let mut removed = false;
        while let Some((at, key)) = self.order.front() {
            let at = *at;
            let current = objects.get(key).and_then(|h| h.deleted_at) == Some(at);
            if current && now - at < DELETED_KEPT_MS && self.kept <= DELETED_KEPT {
                break;
            }
            if let Some((_, key)) = self.order.pop_front()
                && current
            {
                objects.remove(&key);
                self.kept -= 1;
                removed = true;
            }
        }
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use watchlife_protocol::ObjectRef;

    fn key(name: &str) -> ObjectKey {
        ("pods".into(), format!("default/{name}"))
    }

    /// Sets the object's `deleted_at` as an event would, telling `d`.
    fn set(
        d: &mut Deletions,
        objects: &mut BTreeMap<ObjectKey, ObjectHistory>,
        name: &str,
        deleted_at: Option<f64>,
    ) {
        let h = objects.entry(key(name)).or_insert_with(|| {
            ObjectHistory::new(ObjectRef {
                resource: "pods".into(),
                kind: "Pod".into(),
                namespace: Some("default".into()),
                name: name.into(),
            })
        });
        let before = h.deleted_at;
        h.deleted = deleted_at.is_some();
        h.deleted_at = deleted_at;
        d.changed(&key(name), before, deleted_at);
    }

    #[test]
    fn a_deleted_object_is_forgotten_after_a_while() {
        let (mut d, mut objects) = (Deletions::default(), BTreeMap::new());
        set(&mut d, &mut objects, "a", None);
        set(&mut d, &mut objects, "b", Some(1_000.0));
        assert!(!d.forget(&mut objects, 1_000.0 + DELETED_KEPT_MS - 1.0));
        assert!(d.forget(&mut objects, 1_000.0 + DELETED_KEPT_MS));
        assert_eq!(objects.keys().collect::<Vec<_>>(), vec![&key("a")]);
    }

    #[test]
    fn only_the_newest_deletions_are_kept() {
        let (mut d, mut objects) = (Deletions::default(), BTreeMap::new());
        for i in 0..DELETED_KEPT + 5 {
            set(&mut d, &mut objects, &format!("p{i}"), Some(i as f64));
        }
        assert!(d.forget(&mut objects, 500.0));
        assert_eq!(objects.len(), DELETED_KEPT);
        assert!(!objects.contains_key(&key("p4")));
        assert!(objects.contains_key(&key("p5")));
    }

    #[test]
    fn a_name_used_again_is_not_forgotten_by_its_old_deletion() {
        let (mut d, mut objects) = (Deletions::default(), BTreeMap::new());
        set(&mut d, &mut objects, "a", Some(0.0));
        set(&mut d, &mut objects, "a", None);
        set(&mut d, &mut objects, "b", Some(10.0));
        set(&mut d, &mut objects, "b", Some(20.0));
        assert!(d.forget(&mut objects, DELETED_KEPT_MS + 20.0));
        assert!(objects.contains_key(&key("a")), "alive again");
        assert!(
            !objects.contains_key(&key("b")),
            "its second deletion expired"
        );
        assert_eq!(d.kept, 0);
        let again = Deletions::of(&objects);
        assert_eq!((again.kept, again.order.len()), (0, 0));
    }
}
