//! The controllers together, on a control plane with a clock the tests move.

use super::*;
use crate::actions;
use crate::api_error::ApiError;
use crate::control_plane::ControlPlane;
use crate::control_plane::Deletion;
use crate::resource::{DEPLOYMENTS, NODES, PODS, REPLICASETS};
use crate::story::{DEPLOYMENT, FIRST_IMAGE, NAMESPACE, SECOND_IMAGE};
use serde_json::Value;
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use watchlife_protocol::EventType;
use watchlife_protocol::Micros;

/// A demo with no story, and the handle of its clock.
fn demo() -> (Demo, Arc<AtomicU64>) {
    let now = Arc::new(AtomicU64::new(1_000_000_000));
    let clock_now = now.clone();
    let cp = ControlPlane::new(crate::Clock::new(move || clock_now.load(Ordering::SeqCst)));
    (Demo::new(cp, None), now)
}

/// Steps the demo, moving the clock as it asks, for `micros` of demo time;
/// `each` sees the control plane after every step.
fn run_for(
    demo: &mut Demo,
    clock: &AtomicU64,
    micros: Micros,
    mut each: impl FnMut(&ControlPlane),
) {
    let end = clock.load(Ordering::SeqCst) + micros;
    for _ in 0..100_000 {
        let now = clock.load(Ordering::SeqCst);
        if now >= end {
            return;
        }
        let wait = demo.step(now);
        each(demo.control_plane());
        clock.fetch_add(wait.as_micros() as u64, Ordering::SeqCst);
    }
    panic!("the demo never settled");
}

fn settle(demo: &mut Demo, clock: &AtomicU64) {
    run_for(demo, clock, 5_000_000, |_| {});
}

/// The story's Deployment with `replicas` replicas.
fn deployment(replicas: u64) -> serde_json::Value {
    let mut deployment = crate::story::deployment();
    deployment["spec"]["replicas"] = json!(replicas);
    deployment
}

fn pods(cp: &ControlPlane) -> Vec<Arc<Value>> {
    cp.list(PODS, None).0
}

fn names(pods: &[Arc<Value>]) -> BTreeSet<String> {
    pods.iter()
        .map(|p| crate::object::name(p).to_string())
        .collect()
}

fn active(cp: &ControlPlane) -> Vec<Arc<Value>> {
    pods(cp)
        .into_iter()
        .filter(|p| replicaset::is_active(p))
        .collect()
}

#[test]
fn the_demo_can_be_moved_into_a_task() {
    fn assert_send<T: Send + 'static>() {}
    assert_send::<Demo>();
}

#[test]
fn nodes_register_and_a_deployment_gets_running_pods_on_both() {
    let (mut demo, clock) = demo();
    let cp = demo.control_plane().clone();
    settle(&mut demo, &clock);
    assert_eq!(
        names(&cp.list(NODES, None).0),
        BTreeSet::from(["node-a".into(), "node-b".into()])
    );
    cp.create(DEPLOYMENTS, deployment(2)).unwrap();
    settle(&mut demo, &clock);
    let (replicasets, _) = cp.list(REPLICASETS, None);
    assert_eq!(replicasets.len(), 1);
    let rs = &replicasets[0];
    let rs_name = crate::object::name(rs);
    assert!(rs_name.starts_with("web-"));
    assert_eq!(rs["status"]["readyReplicas"], 2);
    let pods = pods(&cp);
    assert_eq!(pods.len(), 2);
    for pod in &pods {
        assert!(crate::object::name(pod).starts_with(&format!("{rs_name}-")));
        assert_eq!(pod["status"]["phase"], "Running");
        assert!(replicaset::is_ready(pod));
        assert_eq!(pod["metadata"]["ownerReferences"][0]["name"], rs_name);
    }
    let nodes: BTreeSet<_> = pods
        .iter()
        .map(|p| p["spec"]["nodeName"].as_str().unwrap())
        .collect();
    assert_eq!(nodes.len(), 2, "least-loaded spreads the pods: {nodes:?}");
    let d = cp.get(DEPLOYMENTS, Some(NAMESPACE), DEPLOYMENT).unwrap();
    assert_eq!(d["status"]["availableReplicas"], 2);
    assert_eq!(d["status"]["updatedReplicas"], 2);
}

#[test]
fn scaling_creates_and_deletes_exactly_the_difference() {
    let (mut demo, clock) = demo();
    let cp = demo.control_plane().clone();
    cp.create(DEPLOYMENTS, deployment(2)).unwrap();
    settle(&mut demo, &clock);
    let two = names(&pods(&cp));
    let mut watch = cp.watch(PODS, Some(cp.revision()), None).unwrap();
    actions::scale(&cp, DEPLOYMENTS, NAMESPACE, DEPLOYMENT, 4).unwrap();
    settle(&mut demo, &clock);
    let four = names(&pods(&cp));
    assert_eq!(four.len(), 4);
    assert!(two.is_subset(&four), "scaling up keeps the pods that run");
    actions::scale(&cp, DEPLOYMENTS, NAMESPACE, DEPLOYMENT, 2).unwrap();
    settle(&mut demo, &clock);
    let after = names(&pods(&cp));
    assert_eq!(after.len(), 2);
    assert!(after.is_subset(&four));
    let events: Vec<_> = std::iter::from_fn(|| watch.try_recv().ok()).collect();
    let count = |t: EventType| events.iter().filter(|d| d.event.event_type == t).count();
    assert_eq!((count(EventType::Added), count(EventType::Deleted)), (2, 2));
    assert!(
        active(&cp)
            .iter()
            .all(|p| p["status"]["phase"] == "Running")
    );
}

#[test]
fn a_deleted_pod_is_marked_then_deleted_and_replaced() {
    let (mut demo, clock) = demo();
    let cp = demo.control_plane().clone();
    cp.create(DEPLOYMENTS, deployment(2)).unwrap();
    settle(&mut demo, &clock);
    let before = names(&pods(&cp));
    let victim = before.first().unwrap().clone();
    let mut watch = cp.watch(PODS, Some(cp.revision()), None).unwrap();
    let deletion = actions::delete_pod(&cp, NAMESPACE, &victim).unwrap();
    assert!(
        matches!(deletion, Deletion::Pending(_)),
        "a running pod is marked first"
    );
    settle(&mut demo, &clock);
    let mine: Vec<_> = std::iter::from_fn(|| watch.try_recv().ok())
        .filter(|d| crate::object::name(&d.event.object) == victim)
        .map(|d| d.event.clone())
        .collect();
    assert_eq!(mine[0].event_type, EventType::Modified);
    assert!(
        mine[0]
            .object
            .pointer("/metadata/deletionTimestamp")
            .is_some()
    );
    assert_eq!(mine.last().unwrap().event_type, EventType::Deleted);
    let after = names(&pods(&cp));
    assert_eq!(after.len(), 2);
    assert!(!after.contains(&victim));
    assert_eq!(after.intersection(&before).count(), 1, "one replacement");
}

#[test]
fn an_image_change_rolls_out_a_new_replicaset_within_the_surge() {
    let (mut demo, clock) = demo();
    let cp = demo.control_plane().clone();
    cp.create(DEPLOYMENTS, deployment(2)).unwrap();
    settle(&mut demo, &clock);
    let old_rs = crate::object::name(&cp.list(REPLICASETS, None).0[0]).to_string();
    actions::set_image(&cp, NAMESPACE, DEPLOYMENT, None, SECOND_IMAGE).unwrap();
    let (mut most, mut fewest_ready) = (0, usize::MAX);
    run_for(&mut demo, &clock, 10_000_000, |cp| {
        let active = active(cp);
        most = most.max(active.len());
        fewest_ready = fewest_ready.min(active.iter().filter(|p| replicaset::is_ready(p)).count());
    });
    assert_eq!(most, 3, "two desired plus a surge of one");
    assert_eq!(fewest_ready, 2, "no unavailability allowed at two replicas");
    let (replicasets, _) = cp.list(REPLICASETS, None);
    assert_eq!(replicasets.len(), 2);
    for rs in &replicasets {
        let expected = if crate::object::name(rs) == old_rs {
            0
        } else {
            2
        };
        assert_eq!(rs["spec"]["replicas"], expected);
    }
    let new_rs = replicasets
        .iter()
        .find(|rs| crate::object::name(rs) != old_rs)
        .unwrap();
    assert_eq!(
        new_rs["spec"]["template"]["spec"]["containers"][0]["image"],
        SECOND_IMAGE
    );
    assert_eq!(
        new_rs["metadata"]["annotations"][deployment::REVISION_ANNOTATION],
        "2"
    );
    let pods = pods(&cp);
    assert_eq!(pods.len(), 2);
    assert!(
        pods.iter()
            .all(|p| p["spec"]["containers"][0]["image"] == SECOND_IMAGE)
    );
}

#[test]
fn the_scheduler_handlers_split_unscheduled_from_scheduled_pods() {
    let (mut demo, clock) = demo();
    let cp = demo.control_plane().clone();
    settle(&mut demo, &clock);
    cp.create(PODS, json!({"metadata": {"name": "loose"}}))
        .unwrap();
    cp.create(
        PODS,
        json!({"metadata": {"name": "placed"}, "spec": {"nodeName": "node-b"}}),
    )
    .unwrap();
    settle(&mut demo, &clock);
    let split = demo.scheduler.split();
    let trail = |pod: &str| -> Vec<(&str, scheduler::HandlerAction)> {
        split
            .recent
            .iter()
            .filter(|r| r.pod == format!("default/{pod}"))
            .map(|r| (r.handler, r.action))
            .collect()
    };
    use scheduler::HandlerAction::{Add, Delete, Update};
    let (queue, cache) = (scheduler::UNSCHEDULED.name, scheduler::SCHEDULED.name);
    // Unscheduled: queued; once bound, it leaves the queue's view and enters
    // the cache's; the kubelet's status updates stay in the cache's view.
    assert_eq!(
        &trail("loose")[..3],
        &[(queue, Add), (queue, Delete), (cache, Add)]
    );
    assert!(
        trail("loose")[3..]
            .iter()
            .all(|&(h, a)| h == cache && a == Update)
    );
    // Bound from the start: never queued.
    assert!(trail("placed").iter().all(|&(h, _)| h == cache));
    assert_eq!(trail("placed")[0], (cache, Add));
    assert_eq!(split.to_queue, 2);
    let per_node = demo.scheduler.pods_per_node();
    assert_eq!(per_node.values().sum::<usize>(), 2);
    assert_eq!(per_node["node-a"], 1, "least loaded: the free node");
}

#[test]
fn deleting_a_deployment_cascades_to_its_replicasets_and_pods() {
    let (mut demo, clock) = demo();
    let cp = demo.control_plane().clone();
    cp.create(DEPLOYMENTS, deployment(3)).unwrap();
    settle(&mut demo, &clock);
    assert_eq!(pods(&cp).len(), 3);
    cp.delete(DEPLOYMENTS, Some(NAMESPACE), DEPLOYMENT).unwrap();
    settle(&mut demo, &clock);
    assert!(cp.list(REPLICASETS, None).0.is_empty());
    assert!(pods(&cp).is_empty());
}

#[test]
fn controllers_recover_from_dropped_watches_compaction_and_a_slow_watcher() {
    let (mut demo, clock) = demo();
    let cp = demo.control_plane().clone();
    cp.create(DEPLOYMENTS, deployment(2)).unwrap();
    settle(&mut demo, &clock);
    cp.start_slow_watcher(PODS).unwrap();
    cp.drop_watchers();
    actions::scale(&cp, DEPLOYMENTS, NAMESPACE, DEPLOYMENT, 5).unwrap();
    cp.compact();
    settle(&mut demo, &clock);
    actions::scale(&cp, DEPLOYMENTS, NAMESPACE, DEPLOYMENT, 3).unwrap();
    settle(&mut demo, &clock);
    let running = active(&cp);
    assert_eq!(running.len(), 3);
    assert!(running.iter().all(|p| p["status"]["phase"] == "Running"));
    let lanes: Vec<String> = cp
        .watchers()
        .into_iter()
        .find(|w| w.resource == PODS)
        .unwrap()
        .watchers
        .into_iter()
        .map(|w| w.name)
        .collect();
    for name in [
        "replicaset-controller",
        "scheduler",
        "garbage-collector",
        "kubelet/node-a",
        "kubelet/node-b",
    ] {
        assert!(
            lanes.iter().any(|l| l == name),
            "{name} watches pods: {lanes:?}"
        );
    }
}

#[test]
fn the_story_plays_on_a_loop_with_the_controllers() {
    let (demo_without_story, clock) = demo();
    let cp = demo_without_story.control_plane().clone();
    let mut demo = Demo::new(cp.clone(), Some(Duration::from_millis(1_000)));
    let mut images = BTreeSet::new();
    let mut most_pods = 0;
    run_for(&mut demo, &clock, 60_000_000, |cp| {
        let pods = pods(cp);
        most_pods = most_pods.max(pods.len());
        for pod in pods {
            images.insert(
                pod["spec"]["containers"][0]["image"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            );
        }
    });
    assert!(demo.last_story_error().is_none());
    assert_eq!(demo.story().skipped(), 0, "nothing got in the story's way");
    assert!(most_pods >= 4, "scaled to four");
    assert_eq!(
        images,
        BTreeSet::from([FIRST_IMAGE.to_string(), SECOND_IMAGE.to_string()])
    );
}

#[test]
fn scaling_is_bounded_by_the_demos_nodes_and_its_pod_quota() {
    use crate::limits::{MAX_PODS, MAX_REPLICAS, NODE_MAX_PODS};
    let (mut demo, clock) = demo();
    let cp = demo.control_plane().clone();
    cp.create(DEPLOYMENTS, deployment(2)).unwrap();
    settle(&mut demo, &clock);

    // A billion replicas is refused before anything is written, naming the limit.
    let err = actions::scale(&cp, DEPLOYMENTS, NAMESPACE, DEPLOYMENT, 1_000_000_000).unwrap_err();
    assert!(matches!(err, ApiError::Invalid(_)), "{err:?}");
    assert!(
        err.to_string()
            .contains(&format!("less than or equal to {MAX_REPLICAS}")),
        "{err}"
    );

    // At the most, every node is full and no pod waits.
    actions::scale(&cp, DEPLOYMENTS, NAMESPACE, DEPLOYMENT, MAX_REPLICAS).unwrap();
    settle(&mut demo, &clock);
    let per_node = demo.scheduler.pods_per_node();
    assert!(
        per_node.values().all(|&n| n as u64 == NODE_MAX_PODS),
        "{per_node:?}"
    );

    // More Deployments make pods that no node takes (Pending), up to the
    // cluster's pod quota, and not one more.
    for name in ["more", "most"] {
        let mut d = deployment(MAX_REPLICAS);
        d["metadata"]["name"] = json!(name);
        d["spec"]["selector"]["matchLabels"]["app"] = json!(name);
        d["spec"]["template"]["metadata"]["labels"]["app"] = json!(name);
        cp.create(DEPLOYMENTS, d).unwrap();
    }
    run_for(&mut demo, &clock, 30_000_000, |_| {});
    assert_eq!(pods(&cp).len(), MAX_PODS);
    let unscheduled = pods(&cp)
        .iter()
        .filter(|p| p["spec"]["nodeName"].as_str().unwrap_or("").is_empty())
        .count();
    assert_eq!(unscheduled, MAX_PODS - 2 * NODE_MAX_PODS as usize);
    let refused = cp
        .create(PODS, json!({"metadata": {"name": "one-more"}}))
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .contains(&format!("at most {MAX_PODS} pods")),
        "{refused}"
    );
}

/// The Events a rollout leaves, by reason, as `kubectl get events` lists
/// them.
fn event_reasons(cp: &ControlPlane) -> Vec<(String, String, String)> {
    cp.list(crate::resource::EVENTS, None)
        .0
        .iter()
        .map(|e| {
            (
                e["involvedObject"]["kind"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                e["reason"].as_str().unwrap_or("").to_string(),
                e["source"]["component"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn controllers_record_the_events_real_ones_record() {
    let (mut demo, clock) = demo();
    settle(&mut demo, &clock);
    let cp = demo.control_plane().clone();
    cp.create(DEPLOYMENTS, deployment(2)).unwrap();
    settle(&mut demo, &clock);
    let events = event_reasons(&cp);
    for expected in [
        ("Deployment", "ScalingReplicaSet", "deployment-controller"),
        ("ReplicaSet", "SuccessfulCreate", "replicaset-controller"),
        ("Pod", "Scheduled", "default-scheduler"),
        ("Pod", "Pulled", "kubelet"),
        ("Pod", "Created", "kubelet"),
        ("Pod", "Started", "kubelet"),
    ] {
        let found = events
            .iter()
            .any(|(k, r, c)| (k.as_str(), r.as_str(), c.as_str()) == expected);
        assert!(found, "{expected:?} missing from {events:?}");
    }
    let scheduled = cp
        .list(crate::resource::EVENTS, None)
        .0
        .into_iter()
        .find(|e| e["reason"] == "Scheduled")
        .unwrap();
    let pod = scheduled["involvedObject"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        scheduled["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!("Successfully assigned {NAMESPACE}/{pod} to node-")),
        "{scheduled}"
    );
    assert_eq!(scheduled["metadata"]["namespace"], NAMESPACE);
    assert_eq!(scheduled["count"], 1);
    assert_eq!(scheduled["type"], "Normal");

    // Scaling down kills pods: the kubelet says so.
    let mut d = (*cp.get(DEPLOYMENTS, Some(NAMESPACE), DEPLOYMENT).unwrap()).clone();
    d["spec"]["replicas"] = json!(1);
    cp.update(DEPLOYMENTS, d).unwrap();
    settle(&mut demo, &clock);
    let events = event_reasons(&cp);
    for expected in [
        ("ReplicaSet", "SuccessfulDelete", "replicaset-controller"),
        ("Pod", "Killing", "kubelet"),
    ] {
        let found = events
            .iter()
            .any(|(k, r, c)| (k.as_str(), r.as_str(), c.as_str()) == expected);
        assert!(found, "{expected:?} missing from {events:?}");
    }
}

#[test]
fn events_stay_bounded_however_long_the_story_runs() {
    let (mut demo, clock) = demo();
    settle(&mut demo, &clock);
    let cp = demo.control_plane().clone();
    cp.create(DEPLOYMENTS, deployment(1)).unwrap();
    for round in 0..30u64 {
        let mut d = (*cp.get(DEPLOYMENTS, Some(NAMESPACE), DEPLOYMENT).unwrap()).clone();
        d["spec"]["replicas"] = json!(1 + round % 4);
        cp.update(DEPLOYMENTS, d).unwrap();
        settle(&mut demo, &clock);
    }
    let count = cp.list(crate::resource::EVENTS, None).0.len();
    // Six recorders (deployment, replicaset, scheduler, two kubelets; the
    // garbage collector records none) of at most MAX_EVENTS_PER_RECORDER.
    assert!(
        count <= 5 * events::MAX_EVENTS_PER_RECORDER,
        "{count} events"
    );
    assert!(count > events::MAX_EVENTS_PER_RECORDER, "{count} events");
}

#[test]
fn deployment_status_has_conditions_and_observed_generation() {
    let (mut demo, clock) = demo();
    settle(&mut demo, &clock);
    let cp = demo.control_plane().clone();
    // The generation the API layer gives a created object (cp.create does not).
    let mut created = deployment(3);
    created["metadata"]["generation"] = json!(1);
    cp.create(DEPLOYMENTS, created).unwrap();
    settle(&mut demo, &clock);
    let d = cp.get(DEPLOYMENTS, Some(NAMESPACE), DEPLOYMENT).unwrap();
    assert_eq!(d["status"]["observedGeneration"], 1);
    let condition = |d: &Value, kind: &str| {
        d["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == kind)
            .cloned()
            .unwrap()
    };
    let available = condition(&d, "Available");
    assert_eq!(
        (available["status"].as_str(), available["reason"].as_str()),
        (Some("True"), Some("MinimumReplicasAvailable"))
    );
    let progressing = condition(&d, "Progressing");
    assert_eq!(progressing["reason"], "NewReplicaSetAvailable");
    assert!(d["status"].get("unavailableReplicas").is_none());
    let rs = cp.list(REPLICASETS, None).0[0].clone();
    assert_eq!(
        rs["status"]["observedGeneration"],
        rs["metadata"]["generation"]
    );

    // A new image: a new generation, observed once the controller synced it.
    let mut changed = (*d).clone();
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = json!(SECOND_IMAGE);
    changed["metadata"]["generation"] = json!(2);
    cp.update(DEPLOYMENTS, changed).unwrap();
    let mut saw_progress = false;
    run_for(&mut demo, &clock, 10_000_000, |cp| {
        let d = cp.get(DEPLOYMENTS, Some(NAMESPACE), DEPLOYMENT).unwrap();
        saw_progress |= d["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["reason"] == "ReplicaSetUpdated");
    });
    assert!(saw_progress);
    let d = cp.get(DEPLOYMENTS, Some(NAMESPACE), DEPLOYMENT).unwrap();
    assert_eq!(d["metadata"]["generation"], 2);
    assert_eq!(d["status"]["observedGeneration"], 2);
    // The current revision, which `kubectl rollout undo` patches.
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "2"
    );
    assert_eq!(
        condition(&d, "Progressing")["reason"],
        "NewReplicaSetAvailable"
    );
    // The condition's times move only when it changes: a settled deployment
    // is not rewritten.
    let rv = crate::object::resource_version(&d).unwrap().to_string();
    settle(&mut demo, &clock);
    let again = cp.get(DEPLOYMENTS, Some(NAMESPACE), DEPLOYMENT).unwrap();
    assert_eq!(crate::object::resource_version(&again).unwrap(), rv);
}
