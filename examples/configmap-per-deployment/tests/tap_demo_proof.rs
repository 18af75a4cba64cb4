//! The first proof, against the demo control plane: every reconcile the
//! example controller ran was sent by its tap with its reason and result,
//! in order, per object; nothing the tap sent is invented (the controller's
//! own journal is the reference).

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use configmap_per_deployment::{Journal, RESYNC, run_tapped};
use kube::api::{Api, DeleteParams};
use tracing_subscriber::prelude::*;
use watchlife_protocol::tap::{
    Reason, ReconcileResult, RequestVerb, Requeue, TapFrame, WatcherEventKind,
};
use watchlife_tap::{Tap, TapConfig};

type Key = (String, String);

/// One reconcile as the tap told it: resourceVersion, reason, result.
type Told = (Option<String>, Option<Reason>, Option<ReconcileResult>);

/// The tap's reconciles per object, in the order it recorded them.
fn told(frames: &[TapFrame]) -> BTreeMap<Key, Vec<Told>> {
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

// One thread: the tap's layer is this thread's subscriber, and every task
// (the controller's, kube's) runs on it.
#[tokio::test(flavor = "current_thread")]
async fn every_reconcile_is_told_with_its_reason_and_result_in_order() {
    let (_bridge, client) = support::demo().await;
    let (url, frames) = support::receiver().await;
    let tap = Tap::connect(TapConfig::new(url, "configmap-per-deployment")).unwrap();
    let _subscriber =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(tap.layer()));
    let journal = Journal::keeping();
    let controller = tokio::spawn(run_tapped(client.clone(), journal.clone(), tap.clone()));

    support::create(&client, "web", 1).await;
    support::create(&client, "api", 2).await;
    support::await_configmap(&client, "web", 1).await;
    support::await_configmap(&client, "api", 2).await;
    support::scale(&client, "web", 3).await;
    support::await_configmap(&client, "web", 3).await;
    Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(client.clone(), "default")
        .delete("api", &DeleteParams::default())
        .await
        .unwrap();
    support::scale(&client, "web", 5).await;
    support::await_configmap(&client, "web", 5).await;

    // Every reconcile the journal holds has its end among the frames.
    let deadline = tokio::time::Instant::now() + support::PATIENCE;
    let frames = loop {
        let ends = |f: &Vec<TapFrame>| {
            f.iter()
                .filter(|f| matches!(f, TapFrame::ReconcileEnd(_)))
                .count()
        };
        let (got, want) = (frames.lock().unwrap().clone(), journal.entries().len());
        if ends(&got) >= want && got.iter().any(|f| matches!(f, TapFrame::Stats(_))) {
            break got;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} of {want} reconciles told",
            ends(&got)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    controller.abort();
    assert_eq!(tap.dropped(), 0, "nothing dropped with a reading peer");

    let journal = journal.entries();
    let mut kept: BTreeMap<Key, Vec<_>> = BTreeMap::new();
    for entry in &journal {
        kept.entry((entry.namespace.clone(), entry.name.clone()))
            .or_default()
            .push(entry.clone());
    }
    let told = told(&frames);
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
            match reason {
                Some(Reason::ObjectUpdated) => {}
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
    assert!(kept.contains_key(&("default".into(), "web".into())));
    assert!(journal.iter().all(|e| e.result == Ok(Some(RESYNC))));
    // The watcher's requests were seen: a LIST and a WATCH of Deployments.
    for verb in [RequestVerb::List, RequestVerb::Watch] {
        assert!(
            frames.iter().any(|f| matches!(f, TapFrame::Request(r)
                if r.verb == verb && r.url.contains("/deployments") && r.status == Some(200))),
            "a {verb:?} of deployments"
        );
    }
    // Sequence numbers: increasing, no gap (nothing dropped).
    let seqs: Vec<u64> = frames
        .iter()
        .map(TapFrame::seq)
        .filter(|s| *s > 0)
        .collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "no gap in seq");
}
