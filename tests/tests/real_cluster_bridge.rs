//! watchlife against a real kube-apiserver and etcd: the Reflector's LIST and
//! WATCH, resourceVersions as kubectl sees them, Secret redaction, resuming
//! after the apiserver restarts, and 410 Gone → relist after compaction.

use base64::Engine;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use watchlife_protocol::{EventType, FrameBody, ReflectorState, ServerFrame, Source, Stage};
use watchlife_tests::bridge::Bridge;
use watchlife_tests::kubectl;
use watchlife_tests::real_cluster::RealCluster;
use watchlife_tests::ws::Viewer;

/// How long an expected frame may take on a busy machine.
const WAIT: Duration = Duration::from_secs(60);

/// A bridge on the cluster, watching `resources` in `default`, and a viewer
/// past its hello and snapshot.
async fn watch(cluster: &RealCluster, resources: &str, selector: Option<&str>) -> (Bridge, Viewer) {
    let kubeconfig = cluster.kubeconfig().to_str().unwrap().to_string();
    let mut args = vec![
        "--kubernetes",
        "1.20",
        "--kubeconfig",
        kubeconfig.as_str(),
        "--resources",
        resources,
        "--namespace",
        "default",
    ];
    if let Some(selector) = selector {
        args.extend(["--selector", selector]);
    }
    let bridge = Bridge::start(&args).await;
    let mut viewer = Viewer::connect(&bridge.ws_url()).await;
    let hello = match viewer.next_frame(WAIT).await.body {
        FrameBody::Hello(h) => h,
        other => panic!("hello first, got {other:?}"),
    };
    assert!(matches!(hello.source, Source::Cluster { .. }), "{hello:?}");
    assert!(!hello.observed_stages.contains(&Stage::Etcd));
    assert!(hello.observed_stages.contains(&Stage::Reflector));
    assert!(!hello.demo_actions);
    (bridge, viewer)
}

/// Waits for the Reflector of `resource` to be watching, as a live frame or
/// as its state in a snapshot (when it started before the viewer came).
async fn watching(viewer: &mut Viewer, resource: &str) -> String {
    let started = |r: &watchlife_protocol::ReflectorUpdate| match &r.state {
        ReflectorState::WatchStarted {
            resource_version, ..
        } if r.resource == resource => Some(resource_version.clone()),
        _ => None,
    };
    viewer
        .until(WAIT, |f| match &f.body {
            FrameBody::Reflector(r) => started(r),
            FrameBody::Snapshot(s) => s.reflectors.iter().find_map(started),
            _ => None,
        })
        .await
}

/// The next live event for `name`.
async fn event_for(viewer: &mut Viewer, name: &str) -> (EventType, String) {
    viewer
        .until(WAIT, |f| match &f.body {
            FrameBody::Event(e) if e.target.name == name && !e.initial => {
                Some((e.event_type, e.resource_version.clone()))
            }
            _ => None,
        })
        .await
}

#[tokio::test]
async fn events_match_what_kubectl_sees_and_secrets_never_leave() {
    let cluster = RealCluster::start().await;
    let kc = cluster.kubeconfig();
    kubectl(kc, &["create", "configmap", "before", "--from-literal=k=v"]);
    let (_bridge, mut viewer) = watch(&cluster, "configmaps,secrets", None).await;

    // The initial LIST: the object created before, with its resourceVersion.
    // Listed before or after the viewer came: in its snapshot, or as an event.
    let listed = viewer
        .until(WAIT, |f| match &f.body {
            FrameBody::Event(e) if e.initial && e.target.name == "before" => {
                Some(e.resource_version.clone())
            }
            FrameBody::Snapshot(s) => s
                .objects
                .iter()
                .find(|o| o.target.name == "before")
                .map(|o| o.resource_version.clone()),
            _ => None,
        })
        .await;
    let rv_of = |name: &str| {
        kubectl(
            kc,
            &[
                "get",
                "configmap",
                name,
                "-o",
                "jsonpath={.metadata.resourceVersion}",
            ],
        )
    };
    assert_eq!(listed, rv_of("before"));

    kubectl(kc, &["create", "configmap", "live", "--from-literal=k=v"]);
    let (t, rv) = event_for(&mut viewer, "live").await;
    assert_eq!((t, rv.clone()), (EventType::Added, rv_of("live")));
    kubectl(kc, &["label", "configmap", "live", "tier=web"]);
    let (t, rv) = event_for(&mut viewer, "live").await;
    assert_eq!((t, rv), (EventType::Modified, rv_of("live")));
    kubectl(kc, &["delete", "configmap", "live"]);
    let (t, _) = event_for(&mut viewer, "live").await;
    assert_eq!(t, EventType::Deleted);

    // A Secret created with kubectl, also through apply (which keeps the
    // whole object in an annotation): its value appears in no frame.
    const VALUE: &str = "correct-horse-battery-staple";
    kubectl(
        kc,
        &[
            "create",
            "secret",
            "generic",
            "db",
            &format!("--from-literal=password={VALUE}"),
        ],
    );
    let manifest = cluster.dir().join("secret.yaml");
    std::fs::write(
        &manifest,
        format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: applied\nstringData:\n  token: {VALUE}\n"),
    )
    .unwrap();
    kubectl(kc, &["apply", "-f", manifest.to_str().unwrap()]);
    let encoded = base64::engine::general_purpose::STANDARD.encode(VALUE);
    let mut seen = BTreeSet::new();
    while seen.len() < 2 {
        let text = viewer.next_text(WAIT).await;
        assert!(
            !text.contains(VALUE) && !text.contains(&encoded),
            "a Secret value left the bridge: {text}"
        );
        let frame: ServerFrame = serde_json::from_str(&text).unwrap();
        if let FrameBody::Event(e) = frame.body
            && e.target.kind == "Secret"
            && ["db", "applied"].contains(&e.target.name.as_str())
        {
            assert!(
                e.object.parse()["data"].is_object(),
                "the keys stay visible: {}",
                e.object
            );
            seen.insert(e.target.name);
        }
    }
    // A new viewer's snapshot carries none either.
    let mut late = Viewer::connect(&_bridge.ws_url()).await;
    for _ in 0..2 {
        let text = late.next_text(WAIT).await;
        assert!(!text.contains(VALUE) && !text.contains(&encoded), "{text}");
    }
    // Nor does a body fetched on demand: the same redacted object.
    let body = watchlife_tests::http::get(_bridge.addr, "/objects/secrets/default/db")
        .await
        .unwrap();
    assert_eq!(body.status, 200, "{}", body.text());
    let text = body.text();
    assert!(
        !text.contains(VALUE) && !text.contains(&encoded),
        "a Secret value left through /objects: {text}"
    );
    let object: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(object["metadata"]["name"], "db");
    assert!(
        object["data"]["password"]
            .as_str()
            .is_some_and(|v| v.starts_with("(redacted")),
        "{text}"
    );
}

#[tokio::test]
async fn a_restarted_apiserver_is_watched_again_from_the_last_resource_version() {
    let mut cluster = RealCluster::start().await;
    let kc = cluster.kubeconfig().to_path_buf();
    let (_bridge, mut viewer) = watch(&cluster, "configmaps", None).await;
    watching(&mut viewer, "configmaps").await;
    kubectl(&kc, &["create", "configmap", "one", "--from-literal=k=v"]);
    let (_, rv_one) = event_for(&mut viewer, "one").await;

    viewer.read_while(cluster.restart_apiserver()).await;
    // The Reflector watches again from where it was. If its dial is refused
    // it waits and re-watches; if the dying server resets it instead, the
    // cycle ends and, as client-go's, it relists from the last
    // resourceVersion, unpaged (served by the new watch cache), after the
    // backoff: never a paged LIST, never from "0" or "".
    kubectl(&kc, &["create", "configmap", "two", "--from-literal=k=v"]);
    let mut relisted = false;
    let mut events: BTreeMap<String, usize> = BTreeMap::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    while !events.contains_key("two") {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match viewer.next_frame(left).await.body {
            FrameBody::Reflector(r) => match r.state {
                ReflectorState::ListStarted {
                    resource_version,
                    limit,
                } => {
                    assert_eq!(
                        (resource_version.as_str(), limit),
                        (rv_one.as_str(), 0),
                        "a relist after a restart is from the last resourceVersion, unpaged"
                    );
                    relisted = true;
                }
                ReflectorState::WatchStarted {
                    resource_version, ..
                } if !relisted => assert_eq!(resource_version, rv_one),
                _ => {}
            },
            FrameBody::Event(e) if e.target.name == "one" => {
                // Only a relist may hand "one" on again, and then as a
                // resync: the same resourceVersion, never a change.
                assert!(relisted, "nothing is delivered twice on a re-watch: {e:?}");
                assert!(e.handled.resync && e.resource_version == rv_one, "{e:?}");
            }
            FrameBody::Event(e) if !e.target.name.is_empty() => {
                assert!(!e.initial, "nothing else is listed again: {e:?}");
                *events.entry(e.target.name).or_default() += 1;
            }
            _ => {}
        }
    }
    assert_eq!(events.get("two"), Some(&1), "{events:?}");
}

#[tokio::test]
async fn compaction_and_a_lost_watch_cache_give_410_then_a_relist_that_converges() {
    let mut cluster = RealCluster::start().await;
    let kc = cluster.kubeconfig().to_path_buf();
    kubectl(&kc, &["create", "configmap", "kept", "--from-literal=k=v"]);
    kubectl(&kc, &["label", "configmap", "kept", "watched=yes"]);
    // The bridge sees only labelled objects, so writes to others do not move
    // its resourceVersion on (bookmarks aside: they come about once a minute,
    // and a try that saw one is made again).
    let (bridge, mut viewer) = watch(&cluster, "configmaps", Some("watched=yes")).await;
    watching(&mut viewer, "configmaps").await;
    let mut relisted = false;
    for attempt in 0..3 {
        for i in 0..5 {
            kubectl(
                &kc,
                &["create", "configmap", &format!("noise-{attempt}-{i}")],
            );
        }
        // A restart takes longer than the bridge waits for a silent viewer:
        // keep reading meanwhile.
        viewer
            .read_while(async {
                cluster.compact_etcd().await;
                cluster.restart_apiserver().await;
            })
            .await;
        // Either the re-watch from the compacted revision meets 410 Gone,
        // or the watch ended another way (the dying server cut it within a
        // second) and the cycle ended: both relist.
        let outcome = viewer
            .until(WAIT, |f| match &f.body {
                FrameBody::Reflector(r) => match &r.state {
                    ReflectorState::Bookmark { .. } => Some(false),
                    ReflectorState::Gone { .. } | ReflectorState::Relist { .. } => Some(true),
                    _ => None,
                },
                _ => None,
            })
            .await;
        if outcome {
            relisted = true;
            break;
        }
    }
    assert!(
        relisted,
        "a watch from a compacted revision must end in 410 Gone and a relist"
    );
    viewer
        .until(WAIT, |f| match &f.body {
            FrameBody::Reflector(r) => {
                matches!(r.state, ReflectorState::ListFinished { .. }).then_some(())
            }
            _ => None,
        })
        .await;
    watching(&mut viewer, "configmaps").await;

    // The bridge's objects are the truth: a new viewer's snapshot holds
    // exactly what kubectl lists.
    let truth: BTreeSet<String> = kubectl(
        &kc,
        &["get", "configmaps", "-l", "watched=yes", "-o", "name"],
    )
    .lines()
    .map(|l| l.trim_start_matches("configmap/").to_string())
    .collect();
    let mut fresh = Viewer::connect(&bridge.ws_url()).await;
    let snapshot = fresh
        .until(WAIT, |f| match &f.body {
            FrameBody::Snapshot(s) => Some(s.clone()),
            _ => None,
        })
        .await;
    let held: BTreeSet<String> = snapshot
        .objects
        .iter()
        .map(|o| o.target.name.clone())
        .collect();
    assert_eq!(held, truth);
}

#[tokio::test]
async fn with_etcd_access_each_event_is_matched_to_its_etcd_write() {
    let cluster = RealCluster::start().await;
    let kc = cluster.kubeconfig();
    let bridge = Bridge::start(&[
        "--kubernetes",
        "1.20",
        "--kubeconfig",
        kc.to_str().unwrap(),
        "--resources",
        "configmaps",
        "--namespace",
        "default",
        "--etcd-endpoints",
        cluster.etcd_endpoint(),
    ])
    .await;
    let mut viewer = Viewer::connect(&bridge.ws_url()).await;
    let hello = match viewer.next_frame(WAIT).await.body {
        FrameBody::Hello(h) => h,
        other => panic!("hello first, got {other:?}"),
    };
    assert!(hello.observed_stages.contains(&Stage::Etcd), "{hello:?}");
    watching(&mut viewer, "configmaps").await;
    for i in 0..3 {
        let name = format!("matched-{i}");
        kubectl(kc, &["create", "configmap", &name, "--from-literal=k=v"]);
        let event = viewer
            .until(WAIT, |f| match &f.body {
                FrameBody::Event(e) if e.target.name == name => Some(e.clone()),
                _ => None,
            })
            .await;
        assert!(
            event.stages.contains_key(&Stage::Etcd),
            "the etcd write of resourceVersion {} was matched: {:?}",
            event.resource_version,
            event.stages
        );
    }
}
