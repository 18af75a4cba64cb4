//! Scenarios: short scripted stories played on the demo control plane, each
//! showing one behaviour of list-watch, for `watchlife record --scenario`.
//!
//! A scenario acts as a user would (the same calls as the demo actions); the
//! controllers, kubelets and watch caches do the rest, so a recording of a
//! scenario is a measurement of the demo, not a drawing.

use serde_json::json;
use std::time::Duration;
use watchlife_controlplane::actions as act;
use watchlife_controlplane::resource::{CONFIGMAPS, DEPLOYMENTS, PODS};
use watchlife_controlplane::story::{self, CONFIGMAP, DEPLOYMENT, NAMESPACE, SECOND_IMAGE};
use watchlife_controlplane::{ApiError, ControlPlane};
use watchlife_informer::reflector::backoff;

/// Pause between two steps: long enough for the controllers, the scheduler
/// and a kubelet (which takes half a second to start a pod) to play out a
/// step, short enough that a recording stays small.
const STEP: Duration = Duration::from_millis(2500);

/// Pause between the writes and the compaction: shorter than
/// [`watchlife_controlplane::cacher::watcher::DEMO_BOOKMARK_FREQUENCY`] minus
/// [`STEP`], so the compaction comes before the first bookmark of the
/// watches.
const BEFORE_BOOKMARK: Duration = Duration::from_millis(1000);

/// Watchers the many-watchers scenario adds to the pods' watch cache: enough
/// to see one cache serving a crowd, few enough to draw a lane for each.
const EXTRA_WATCHERS: usize = 12;

/// Scale-ups and downs that fill the slow watcher's buffer.
const CHURN_ROUNDS: usize = 2;

/// The consistent-read scenario's `WatchListPageSize`: below the story's
/// pod count, so that a LIST of pods takes more than one page.
pub const CONSISTENT_READ_PAGE_SIZE: u64 = 2;

/// How long the consistent-read scenario keeps writing after it dropped the
/// watches: the longest first backoff of a Reflector whose watch got 410
/// ([`backoff::INITIAL`] with its full jitter: twice it), after which it
/// relists, is refused with 410 again and LISTs from "" at once, and
/// [`RELIST_MARGIN`] for that relist to arrive on a busy machine.
const WRITES_THROUGH_RELIST: Duration = backoff::INITIAL
    .saturating_mul(2)
    .saturating_add(RELIST_MARGIN);

/// Time allowed beyond the backoff for the relist and the LIST from "" to
/// reach the demo's apiserver.
const RELIST_MARGIN: Duration = Duration::from_millis(500);

/// Pause between two of those writes: often enough that the store keeps
/// moving while a LIST from "" waits for the watch cache, far fewer writes
/// than the ConfigMap's watch cache window holds.
const WRITE_EVERY: Duration = Duration::from_millis(50);

/// How a scenario needs the bridge's Reflectors to behave, over whatever the
/// user's flags chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClientSettings {
    /// The Reflectors LIST then WATCH: where the release's client streams
    /// its lists, client-go's `WatchListClient` gate is turned off.
    pub list_then_watch: bool,
    /// client-go's `WatchListPageSize` for every Reflector; 0 keeps the
    /// user's `--watch-list-page-size`.
    pub watch_list_page_size: u64,
}

/// The scenarios, by the name used on the command line and in `?scenario=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scenario {
    /// A Deployment's pods are created, scheduled, started; one is deleted
    /// (deletionTimestamp, then DELETED) and replaced.
    PodLifecycle,
    /// A Deployment scaled up, then down: its ReplicaSet creates and deletes pods.
    Scale,
    /// A label added to a Deployment, then a new image rolled out.
    LabelAndImage,
    /// The store compacted and every watch dropped: a Reflector whose
    /// resourceVersion was compacted away gets 410 Gone and lists again.
    CompactionRelist,
    /// A watcher that never reads fills its buffer: the dispatcher blocks on
    /// it for its time budget while the events behind wait in `incoming`,
    /// then closes it, and every other watcher goes on.
    SlowWatcher,
    /// One watch cache serving many watchers, each event serialized once.
    ManyWatchers,
    /// Kubernetes 1.36's start and relist: each Reflector opens a streaming
    /// list (the current objects as ADDED events, closed by the BOOKMARK
    /// annotated initial-events-end); then a compaction and dropped watches
    /// give a Reflector 410 Gone, and after its backoff it streams the list
    /// again from its last resourceVersion, a vanished object coming as
    /// DeletedFinalStateUnknown.
    StreamingList,
    /// A consistent read: with `WatchListPageSize` every LIST is paged, a
    /// relist from a resourceVersion too. After a compaction and dropped
    /// watches, a Reflector's WATCH gets 410, its paged relist from that
    /// compacted resourceVersion gets 410 again (1.36: the cache's snapshots
    /// no longer reach it, and the store has compacted it), and it LISTs at
    /// once from "": 1.36's apiserver asks the store for its revision and
    /// waits for the watch cache to reach it while the ConfigMap is still
    /// being written, 1.20's reads etcd.
    ConsistentRead,
}

impl Scenario {
    /// Every scenario, in the order a talk would show them.
    pub const ALL: [Scenario; 8] = [
        Scenario::PodLifecycle,
        Scenario::Scale,
        Scenario::LabelAndImage,
        Scenario::CompactionRelist,
        Scenario::SlowWatcher,
        Scenario::ManyWatchers,
        Scenario::StreamingList,
        Scenario::ConsistentRead,
    ];

    /// The scenario's name (`pod-lifecycle`).
    pub fn name(self) -> &'static str {
        match self {
            Scenario::PodLifecycle => "pod-lifecycle",
            Scenario::Scale => "scale",
            Scenario::LabelAndImage => "label-and-image",
            Scenario::CompactionRelist => "compaction-relist",
            Scenario::SlowWatcher => "slow-watcher",
            Scenario::ManyWatchers => "many-watchers",
            Scenario::StreamingList => "streaming-list",
            Scenario::ConsistentRead => "consistent-read",
        }
    }

    /// What the scenario needs of the Reflectors.
    pub fn client_settings(self) -> ClientSettings {
        match self {
            Scenario::ConsistentRead => ClientSettings {
                list_then_watch: true,
                watch_list_page_size: CONSISTENT_READ_PAGE_SIZE,
            },
            _ => ClientSettings::default(),
        }
    }

    /// Plays the scenario on `cp`, ending a step after its last change.
    pub async fn play(self, cp: &ControlPlane) -> Result<(), ApiError> {
        let pause = || tokio::time::sleep(STEP);
        // Every scenario starts from the story's Deployment and ConfigMap.
        cp.create(CONFIGMAPS, story::configmap())?;
        cp.create(DEPLOYMENTS, story::deployment())?;
        pause().await;
        match self {
            Scenario::PodLifecycle => {
                let pod = story::victim(cp).ok_or_else(|| ApiError::NotFound {
                    kind: PODS.plural.into(),
                    name: format!("{DEPLOYMENT}-*"),
                })?;
                act::delete_pod(cp, NAMESPACE, &pod)?;
                pause().await;
            }
            Scenario::Scale => {
                act::scale(cp, DEPLOYMENTS, NAMESPACE, DEPLOYMENT, 4)?;
                pause().await;
                act::scale(cp, DEPLOYMENTS, NAMESPACE, DEPLOYMENT, 1)?;
                pause().await;
            }
            Scenario::LabelAndImage => {
                act::label(cp, DEPLOYMENTS, NAMESPACE, DEPLOYMENT, "tier", "frontend")?;
                pause().await;
                act::set_image(cp, NAMESPACE, DEPLOYMENT, None, SECOND_IMAGE)?;
                // A rollout takes several rounds of the controllers.
                pause().await;
                pause().await;
            }
            Scenario::StreamingList => {
                // Writes the Reflectors follow on their streams, then a pod
                // deleted and the store compacted before the next bookmark:
                // the re-WATCHes from before the compaction get 410, and
                // the relists stream again.
                act::scale(cp, DEPLOYMENTS, NAMESPACE, DEPLOYMENT, 3)?;
                pause().await;
                act::scale(cp, DEPLOYMENTS, NAMESPACE, DEPLOYMENT, 2)?;
                compact_before_bookmark(cp).await;
                // The backoff before the relist (0.8–1.6 s), then the relist.
                pause().await;
                pause().await;
            }
            Scenario::CompactionRelist => {
                // The ConfigMap's Reflector last saw an old revision; the pods
                // moved on since. Compacting and dropping every watch sends
                // each Reflector back to WATCH from its last resourceVersion:
                // the ones older than the compaction get 410 and relist.
                act::scale(cp, DEPLOYMENTS, NAMESPACE, DEPLOYMENT, 3)?;
                compact_before_bookmark(cp).await;
                pause().await;
            }
            Scenario::ConsistentRead => {
                consistent_read(cp).await?;
                pause().await;
            }
            Scenario::SlowWatcher => {
                cp.start_slow_watcher(PODS)?;
                for _ in 0..CHURN_ROUNDS {
                    act::scale(cp, DEPLOYMENTS, NAMESPACE, DEPLOYMENT, 4)?;
                    pause().await;
                    act::scale(cp, DEPLOYMENTS, NAMESPACE, DEPLOYMENT, 2)?;
                    pause().await;
                }
            }
            Scenario::ManyWatchers => {
                for i in 1..=EXTRA_WATCHERS {
                    let mut rx = cp.watch_named(&format!("client-{i}"), PODS, None, None)?;
                    tokio::spawn(async move { while rx.recv().await.is_some() {} });
                }
                pause().await;
                act::scale(cp, DEPLOYMENTS, NAMESPACE, DEPLOYMENT, 4)?;
                pause().await;
                act::scale(cp, DEPLOYMENTS, NAMESPACE, DEPLOYMENT, 2)?;
                pause().await;
            }
        }
        Ok(())
    }
}

/// Compacts the store and drops every watch before the watches' first
/// BOOKMARK (which would move every Reflector to the newest revision and
/// spare it the 410): each Reflector goes back to WATCH from its last
/// resourceVersion, and the ones older than the compaction get 410.
async fn compact_before_bookmark(cp: &ControlPlane) {
    tokio::time::sleep(BEFORE_BOOKMARK).await;
    cp.compact();
    cp.drop_watchers();
}

/// As compaction-relist: the ConfigMap's Reflector last saw an old revision
/// when the store is compacted and every watch dropped. The ConfigMap then
/// keeps changing through the backoff and the relists, so the LIST from ""
/// finds a store that moves.
async fn consistent_read(cp: &ControlPlane) -> Result<(), ApiError> {
    act::scale(cp, DEPLOYMENTS, NAMESPACE, DEPLOYMENT, 3)?;
    compact_before_bookmark(cp).await;
    let until = tokio::time::Instant::now() + WRITES_THROUGH_RELIST;
    let mut edits = 0u64;
    while tokio::time::Instant::now() < until {
        edits += 1;
        cp.modify(CONFIGMAPS, Some(NAMESPACE), CONFIGMAP, |c| {
            c["data"]["edits"] = json!(edits.to_string());
        })?;
        tokio::time::sleep(WRITE_EVERY).await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn every_scenario_is_named_as_on_the_command_line() {
        for s in Scenario::ALL {
            let value = s.to_possible_value().expect("every scenario is offered");
            assert_eq!(value.get_name(), s.name());
        }
    }
}
