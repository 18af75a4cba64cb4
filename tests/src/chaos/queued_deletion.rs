//! The one phantom v1.20's rules allow, named.
//!
//! client-go v1.20.2's `DeltaFIFO.Replace`
//! (`staging/src/k8s.io/client-go/tools/cache/delta_fifo.go`, lines 581–601)
//! finds a relist's deletions among the Indexer's keys only. When a watch
//! ADDED is still queued as the relist is queued, and the object was deleted
//! before the list was taken (its DELETED lost with the watch that broke),
//! the relist queues no `DeletedFinalStateUnknown` for it; the ADDED is then
//! popped into the Indexer, and the object is kept until the next relist
//! finds it there and deletes it. The informer crate models this
//! faithfully (see `informer/tests/delta_fifo_queued_deletion.rs`);
//! client-go v0.36 fixed it, and the 1.36 rounds tolerate no phantom.
//!
//! A viewer's stream shows the case: the object's last event is a watch
//! ADDED, queued in the bridge's FIFO before a relist of its resource was
//! queued (the FIFO mark of the relist's listed objects) and applied to the
//! Indexer after it. The rounds of `--kubernetes 1.20` let a phantom pass
//! only when that holds, then force the next relist and require the object
//! gone after it.

use super::model::{LastEvent, Model};
use std::collections::{BTreeMap, BTreeSet};
use watchlife_protocol::Micros;

/// When the relist was queued that `key`'s ADDED waited through, if
/// `model`'s stream shows `key` as this case; `None` otherwise.
pub fn relist_passed(model: &Model, key: &str) -> Option<Micros> {
    let LastEvent {
        watch_added: true,
        fifo: Some(queued),
        indexer: Some(applied),
    } = *model.last_events.get(key)?
    else {
        return None;
    };
    let resource = key.split('/').next()?;
    model
        .relists_queued
        .get(resource)?
        .iter()
        .copied()
        .find(|&relist| queued < relist && relist < applied)
}

/// The phantoms of a set of viewers, sorted: those this case explains, and
/// the others. A viewer that holds a phantom from a snapshot (no event of
/// it) is explained when another viewer's stream shows the case for it.
pub fn sort_phantoms<'a>(
    truth: &BTreeMap<String, String>,
    models: impl Iterator<Item = &'a Model> + Clone,
) -> (BTreeSet<String>, BTreeSet<String>) {
    let phantoms = |m: &'a Model| {
        m.objects
            .keys()
            .filter(|k| !truth.contains_key(*k))
            .cloned()
            .collect::<Vec<_>>()
    };
    let shown: BTreeSet<String> = models
        .clone()
        .flat_map(|m| {
            phantoms(m)
                .into_iter()
                .filter(|k| relist_passed(m, k).is_some())
        })
        .collect();
    let mut explained = BTreeSet::new();
    let mut others = BTreeSet::new();
    for m in models {
        for key in phantoms(m) {
            let from_snapshot = !m.last_events.contains_key(&key);
            if shown.contains(&key) && (from_snapshot || relist_passed(m, &key).is_some()) {
                explained.insert(key);
            } else {
                others.insert(key);
            }
        }
    }
    (explained, others)
}

/// How `model` came to hold its phantoms (the first few): the event that
/// last set each, and the relists of its resource; empty without phantoms.
pub fn describe_phantoms(truth: &BTreeMap<String, String>, model: &Model) -> String {
    /// Phantoms described per viewer: enough to read a failure by.
    const DESCRIBED: usize = 3;
    let mut text = String::new();
    for key in model
        .objects
        .keys()
        .filter(|k| !truth.contains_key(*k))
        .take(DESCRIBED)
    {
        let relists = key
            .split('/')
            .next()
            .and_then(|resource| model.relists_queued.get(resource));
        let how = match model.last_events.get(key) {
            None => "from a snapshot".to_string(),
            Some(last) => format!(
                "last set by {} queued in the FIFO at {:?} µs, applied to the Indexer at {:?} µs",
                if last.watch_added {
                    "a watch ADDED"
                } else {
                    "another event"
                },
                last.fifo,
                last.indexer
            ),
        };
        text.push_str(&format!(
            "\n    phantom {key}: {how}; relists of its resource queued at {relists:?} µs"
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holding(key: &str, last: LastEvent, relists: &[Micros]) -> Model {
        let mut m = Model::holding([(key.to_string(), "7".to_string())].into());
        m.last_events.insert(key.to_string(), last);
        m.relists_queued
            .insert("pods".to_string(), relists.to_vec());
        m
    }

    const ADDED: LastEvent = LastEvent {
        watch_added: true,
        fifo: Some(100),
        indexer: Some(300),
    };

    #[test]
    fn an_added_queued_across_a_relist_is_the_case_and_nothing_else_is() {
        let key = "pods/shop/w1";
        assert_eq!(
            relist_passed(&holding(key, ADDED, &[50, 200]), key),
            Some(200)
        );
        // The relist came before it was queued, or after it was applied.
        assert_eq!(relist_passed(&holding(key, ADDED, &[50, 400]), key), None);
        // A MODIFIED or a listed object: the Indexer knew the key.
        let modified = LastEvent {
            watch_added: false,
            ..ADDED
        };
        assert_eq!(relist_passed(&holding(key, modified, &[200]), key), None);
        // Another resource's relist.
        assert_eq!(
            relist_passed(
                &holding("configmaps/shop/w1", ADDED, &[200]),
                "configmaps/shop/w1"
            ),
            None
        );
    }

    #[test]
    fn a_snapshot_holder_is_explained_only_by_another_viewers_stream() {
        let key = "pods/shop/w1";
        let truth = BTreeMap::new();
        let shows = holding(key, ADDED, &[200]);
        let from_snapshot = Model::holding([(key.to_string(), "7".to_string())].into());
        let (explained, others) = sort_phantoms(&truth, [&shows, &from_snapshot].into_iter());
        assert_eq!(explained, BTreeSet::from([key.to_string()]));
        assert!(others.is_empty());
        let (explained, others) = sort_phantoms(&truth, [&from_snapshot].into_iter());
        assert!(explained.is_empty());
        assert_eq!(others, BTreeSet::from([key.to_string()]));
    }
}
