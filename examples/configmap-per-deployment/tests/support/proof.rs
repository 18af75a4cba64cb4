//! The proof every tap test makes: each reconcile the controller ran (its
//! own journal) was told by the tap, once, in order per object, with its
//! resourceVersion, reason and result, and of an object version the
//! watcher yielded. Nothing told is invented: the objects are the same.

use std::collections::BTreeMap;

use configmap_per_deployment::Reconciled;
use watchlife_protocol::tap::{Reason, ReconcileResult, Requeue, TapFrame, WatcherEventKind};

/// An object: namespace and name.
pub type Key = (String, String);

/// One reconcile as the tap told it: resourceVersion, reason, result.
type Told = (Option<String>, Option<Reason>, Option<ReconcileResult>);

/// The tap's reconciles per object, in the order it recorded them.
pub fn told(frames: &[TapFrame]) -> BTreeMap<Key, Vec<Told>> {
    let mut by_number = BTreeMap::new();
    let mut per_object: BTreeMap<Key, Vec<u64>> = BTreeMap::new();
    for frame in frames {
        match frame {
            TapFrame::ReconcileStart(s) => {
                let key = (
                    s.object.namespace.clone().unwrap_or_default(),
                    s.object.name.clone(),
                );
                per_object.entry(key).or_default().push(s.reconcile);
                by_number.insert(
                    s.reconcile,
                    (s.resource_version.clone(), s.reason.clone(), None),
                );
            }
            TapFrame::ReconcileEnd(e) => {
                by_number
                    .get_mut(&e.reconcile)
                    .expect("an end after its start")
                    .2 = Some(e.result.clone());
            }
            _ => {}
        }
    }
    per_object
        .into_iter()
        .map(|(key, numbers)| (key, numbers.iter().map(|n| by_number[n].clone()).collect()))
        .collect()
}

/// Checks `frames` (the tap's, in its order) against `journal` (the
/// controller's own), as the module says; returns the journal per object.
pub fn every_reconcile_told(
    frames: &[TapFrame],
    journal: &[Reconciled],
) -> BTreeMap<Key, Vec<Reconciled>> {
    let mut kept: BTreeMap<Key, Vec<_>> = BTreeMap::new();
    for entry in journal {
        kept.entry((entry.namespace.clone(), entry.name.clone()))
            .or_default()
            .push(entry.clone());
    }
    let mut told = told(frames);
    // The controller runs on while the frames are taken: an object's last
    // reconcile may be under way, its start told and its end not yet (nor
    // its journal entry, written as it ends). kube-runtime never reconciles
    // one object twice at once, so any other start without an end is an end
    // lost.
    for tells in told.values_mut() {
        if tells.last().is_some_and(|t| t.2.is_none()) {
            tells.pop();
        }
        assert!(
            tells.iter().all(|t| t.2.is_some()),
            "an end lost: {tells:?}"
        );
    }
    told.retain(|_, tells| !tells.is_empty());
    assert_eq!(
        told.keys().collect::<Vec<_>>(),
        kept.keys().collect::<Vec<_>>(),
        "the same objects"
    );
    let applied: Vec<_> = frames
        .iter()
        .filter_map(|f| match f {
            TapFrame::Watcher(w) if w.resource == "deployments.apps" => Some((
                w.event,
                w.object.as_ref()?.name.clone(),
                w.resource_version.clone()?,
            )),
            _ => None,
        })
        .collect();
    for (key, entries) in &kept {
        let tells = &told[key];
        assert_eq!(tells.len(), entries.len(), "{key:?}: every reconcile, once");
        for (n, (entry, (rv, reason, result))) in entries.iter().zip(tells).enumerate() {
            assert_eq!(rv, &entry.resource_version, "{key:?} #{n}: in order");
            let want = match &entry.result {
                Ok(Some(after)) => ReconcileResult::Action {
                    action: Requeue::After {
                        after_us: after.as_micros() as u64,
                    },
                },
                Ok(None) => ReconcileResult::Action {
                    action: Requeue::AwaitChange,
                },
                Err(message) => ReconcileResult::Error {
                    message: message.clone(),
                },
            };
            assert_eq!(result.as_ref(), Some(&want), "{key:?} #{n}: its result");
            let after_error = n > 0 && entries[n - 1].result.is_err();
            match reason {
                Some(Reason::ObjectUpdated) => {}
                Some(Reason::ErrorPolicyRequestedRetry) if after_error => {}
                Some(Reason::RelatedObjectUpdated { related }) => assert!(
                    related.contains(&configmap_per_deployment::configmap_name(&key.1)),
                    "{key:?} #{n}: related to its own ConfigMap, not {related}"
                ),
                other => panic!("{key:?} #{n}: reason {other:?}"),
            }
            // The object reconciled is one the watcher yielded.
            let rv = rv.clone().expect("a resourceVersion");
            assert!(
                applied.iter().any(|(event, name, v)| name == &key.1
                    && v == &rv
                    && matches!(event, WatcherEventKind::Apply | WatcherEventKind::InitApply)),
                "{key:?} #{n}: resourceVersion {rv} was watched"
            );
        }
        assert!(
            matches!(tells[0].1, Some(Reason::ObjectUpdated)),
            "{key:?}: first reconciled because it appeared"
        );
    }
    kept
}
