//! The app in headless Chromium against a scripted stream: stories the demo
//! tells only by chance, told on cue — a coalesced event merging into its
//! queued key, the watch cache's fan-out, a DELETED object's history, a
//! relist that is never sampled away, BOOKMARK and ERROR past a name search,
//! the informer's side of events (listeners' lanes, a resync, a deletion
//! found by relist, a stage read before the one before it, the Reflector's
//! requests), a newer protocol, the access token passed on to `/ws`,
//! objects listed so far never shown as the whole set, and the user's
//! controllers, a lane each, matched with the bridge's events.

use serde_json::json;
use watchlife_protocol::tap::{
    Reason, ReconcileEnd, ReconcileResult, ReconcileStart, RequestFrame, RequestVerb, Requeue,
    Stats as TapStats, TAP_PROTOCOL_VERSION, TapFrame, TapObjectRef, TapRelay, WatcherEventKind,
    WatcherFrame,
};
use watchlife_protocol::{
    CacheState, Callback, ClosedWatcherState, EventType, FrameBody, Handled, HandlerCall, Hello,
    ObjectRef, PROTOCOL_VERSION, ReconcileRun, ReflectorState, ReflectorUpdate, ServerFrame,
    Snapshot, Source, Stage, StageMark, StageTimes, WatchCacheReport, WatchEvent, WatcherState,
};
use watchlife_tests::browser::{Browser, ScriptedBridge, scripted_hello, scripted_pod};

/// A start time for the scripted events (µs), far from zero.
const T0: u64 = 1_795_338_904_000_000;

fn hello(protocol: u32) -> Hello {
    Hello {
        protocol,
        ..scripted_hello("scripted", &["pods", "configmaps"])
    }
}

/// Stage times from `etcd` at `start`, each later stage `gaps[i]` µs after
/// the one before (as many stages as gaps + 1).
fn stages(start: u64, gaps: &[u64]) -> StageTimes {
    let mut at = start;
    let mut times = StageTimes::from([(Stage::Etcd, StageMark::at(at))]);
    for (stage, gap) in Stage::ALL[1..].iter().zip(gaps) {
        at += gap;
        times.insert(*stage, StageMark::at(at));
    }
    times
}

fn event(
    seq: u64,
    event_type: EventType,
    target: ObjectRef,
    rv: u64,
    times: StageTimes,
) -> ServerFrame {
    let object = if target.name.is_empty() {
        serde_json::Value::Null
    } else {
        json!({"kind": target.kind, "metadata": {"name": target.name, "namespace": "default",
               "resourceVersion": rv.to_string(), "labels": {"app": "web"}}})
    };
    ServerFrame {
        seq,
        body: FrameBody::Event(WatchEvent {
            event_type,
            target,
            resource_version: rv.to_string(),
            object: object.into(),
            stages: times,
            initial: false,
            coalesced: false,
            handled: Default::default(),
            patch: None,
            server: None,
        }),
    }
}

fn snapshot_of(objects: &[(&str, u64)]) -> ServerFrame {
    ServerFrame {
        seq: 0,
        body: FrameBody::Snapshot(Snapshot {
            objects: objects
                .iter()
                .map(|(name, rv)| watchlife_protocol::frame::SnapshotObject {
                    target: scripted_pod(name),
                    resource_version: rv.to_string(),
                    summary: Default::default(),
                    object: Some(
                        json!({"kind": "Pod", "metadata": {"name": name, "namespace": "default",
                                   "resourceVersion": rv.to_string()}})
                        .into(),
                    ),
                })
                .collect(),
            reflectors: vec![],
            listed: vec![],
            taps: vec![],
        }),
    }
}

/// The app of `bridge` at `query`, once connected.
async fn open(bridge: &ScriptedBridge, query: &str) -> Browser {
    Browser::open_connected(1440, 1000, &format!("{}/{query}", bridge.url())).await
}

#[tokio::test]
async fn a_coalesced_event_merges_into_its_queued_key() {
    let bridge =
        ScriptedBridge::start(hello(PROTOCOL_VERSION), vec![snapshot_of(&[("web-1", 10)])]).await;
    let browser = open(&bridge, "?speed=0").await;
    // web-1 waits 0.9 s in the workqueue; a second change to it arrives
    // meanwhile and merges: both are reconciled at the same moment.
    let queued = [10, 5, 200, 50, 50, 20, 30];
    let first = stages(T0, &[10, 5, 200, 50, 50, 20, 30, 900_000]);
    let reconciled = first[&Stage::Reconcile].at;
    let mut second = stages(T0 + 100_000, &queued);
    second.insert(Stage::Reconcile, StageMark::at(reconciled));
    bridge.send(&event(
        1,
        EventType::Modified,
        scripted_pod("web-1"),
        11,
        first,
    ));
    let mut merged = event(2, EventType::Modified, scripted_pod("web-1"), 12, second);
    if let FrameBody::Event(e) = &mut merged.body {
        e.coalesced = true;
    }
    bridge.send(&merged);

    browser
        .wait_until(
            "the log marks the second event as merged",
            "document.querySelector('tr.event-row[data-rv=\"12\"][data-coalesced=true] .merged-note')",
        )
        .await;
    // All at one moment: the merging token at the workqueue, the queued
    // token wearing a +1, and the workqueue's node listing one key of two events.
    browser
        .wait_until(
            "the second token merges into the queued one, and the workqueue holds one key",
            "document.querySelector('#pipeline .token.merging[data-rv=\"12\"][data-at=workqueue]') \
             && document.querySelector('#pipeline .token.absorbing[data-rv=\"11\"] .merge-badge text')?.textContent === '+1' \
             && [...document.querySelectorAll('#pipeline .queued-key')].some(k => \
                  k.dataset.key === 'default/web-1' && k.dataset.events === '2')",
        )
        .await;
    browser.close().await;
}

/// The watch caches of pods (three watchers, one closed as too slow) and of
/// nodes (one watcher), as the bridge reports them.
fn pods_and_nodes_caches() -> ServerFrame {
    let watcher = |id, name: &str, buffered| WatcherState {
        id,
        name: name.into(),
        buffered,
        capacity: 100,
        blocking: false,
    };
    ServerFrame {
        seq: 1,
        body: FrameBody::WatchCache(WatchCacheReport {
            caches: vec![
                CacheState {
                    resource: "pods".into(),
                    window_start: 600,
                    window_end: 705,
                    len: 105,
                    capacity: 200,
                    watchers: vec![
                        watcher(1, "watchlife", 0),
                        watcher(2, "scheduler", 3),
                        watcher(5, "kubelet node-a", 80),
                    ],
                    more_watchers: 0,
                    closed_slow: 1,
                    recently_closed: vec![ClosedWatcherState {
                        id: 4,
                        name: "slow-watcher".into(),
                        revision: 702,
                    }],
                    incoming: 0,
                },
                CacheState {
                    resource: "nodes".into(),
                    window_start: 1,
                    window_end: 705,
                    len: 3,
                    capacity: 100,
                    watchers: vec![watcher(3, "scheduler", 0)],
                    more_watchers: 0,
                    closed_slow: 0,
                    recently_closed: vec![],
                    incoming: 0,
                },
            ],
        }),
    }
}

/// An event passing the watch cache for 400 ms.
fn passing_the_watch_cache() -> ServerFrame {
    event(
        2,
        EventType::Modified,
        scripted_pod("web-1"),
        706,
        stages(T0, &[10, 400_000, 300_000, 10, 10, 10, 10, 10]),
    )
}

#[tokio::test]
async fn the_fanout_draws_the_ring_the_lanes_and_the_copies() {
    let bridge =
        ScriptedBridge::start(hello(PROTOCOL_VERSION), vec![snapshot_of(&[("web-1", 10)])]).await;
    let browser = open(&bridge, "?speed=0").await;
    bridge.send(&pods_and_nodes_caches());
    browser
        .wait_for("#fanout g.cache[data-resource=pods]")
        .await;
    let lanes = browser
        .eval("[...document.querySelectorAll('#fanout .watcher')].map(w => w.dataset.name)")
        .await;
    assert_eq!(lanes, json!(["watchlife", "scheduler", "kubelet node-a"]));
    assert_eq!(browser.text("#fanout .ring-count").await, "105/200");
    assert_eq!(browser.text("#fanout .ring-window").await, "RV 600 → 705");
    let closed = browser.text("#fanout .closed-slow").await;
    assert!(closed.contains("slow-watcher at RV 702"), "{closed}");
    let filling = browser
        .eval("!!document.querySelector('#fanout .watcher.filling[data-name=\"kubelet node-a\"]')")
        .await;
    assert_eq!(
        filling,
        json!(true),
        "a buffer 80% full is drawn as filling"
    );
    let others = browser.text(".fanout-others").await;
    assert!(others.contains("nodes (1 watcher)"), "{others}");

    // An event passing the watch cache runs down every lane at once.
    bridge.send(&passing_the_watch_cache());
    browser
        .wait_until(
            "a copy of the event is on each of the three lanes",
            "document.querySelectorAll('#fanout circle.copy').length === 3",
        )
        .await;
    browser.close().await;
}

#[tokio::test]
async fn the_fanout_off_screen_moves_no_copies_until_it_is_scrolled_to() {
    let bridge =
        ScriptedBridge::start(hello(PROTOCOL_VERSION), vec![snapshot_of(&[("web-1", 10)])]).await;
    // A phone: the pipeline fills the screen, the fan-out is far below.
    let browser = Browser::start_phone(375, 800).await;
    browser.goto(&format!("{}/?speed=0", bridge.url())).await;
    browser.wait_connected().await;
    bridge.send(&pods_and_nodes_caches());
    browser
        .wait_for("#fanout g.cache[data-resource=pods]")
        .await;
    bridge.send(&passing_the_watch_cache());
    browser
        .wait_until(
            "the token is between the watch cache and the Reflector",
            "document.querySelector('#pipeline .token[data-at=watch_cache]')",
        )
        .await;
    let copies = browser
        .eval("document.querySelectorAll('#fanout circle.copy').length")
        .await;
    assert_eq!(copies, json!(0), "no copies are moved off screen");
    browser
        .eval("document.querySelector('#fanout').scrollIntoView() || true")
        .await;
    browser
        .wait_until(
            "a copy of the event is on each of the three lanes once the fan-out is seen",
            "document.querySelectorAll('#fanout circle.copy').length === 3",
        )
        .await;
    browser.close().await;
}

#[tokio::test]
async fn a_deleted_object_stays_greyed_with_its_history_ending_in_deleted() {
    let bridge = ScriptedBridge::start(
        hello(PROTOCOL_VERSION),
        vec![snapshot_of(&[("web-1", 10), ("web-2", 11)])],
    )
    .await;
    let browser = open(&bridge, "").await;
    bridge.send(&event(
        1,
        EventType::Modified,
        scripted_pod("web-1"),
        12,
        stages(T0, &[10, 10, 10]),
    ));
    bridge.send(&event(
        2,
        EventType::Deleted,
        scripted_pod("web-1"),
        13,
        stages(T0 + 10, &[10, 10, 10]),
    ));
    let row = "tr.object-row[data-key='default/web-1'][data-deleted=true]";
    browser
        .wait_until(
            "the deleted object is still listed, greyed",
            &format!("document.querySelector(\"{row}\")"),
        )
        .await;
    browser.click(row).await;
    let versions = browser
        .eval("[...document.querySelectorAll('#history .version')].map(v => v.dataset.type)")
        .await;
    assert_eq!(versions, json!(["ADDED", "MODIFIED", "DELETED"]));
    let last = browser.text("#history .version:last-child .change").await;
    assert!(last.starts_with("deleted"), "{last}");
    // The live one is not greyed.
    let live = browser
        .eval("document.querySelector(\"tr.object-row[data-key='default/web-2']\").dataset.deleted")
        .await;
    assert_eq!(live, json!("false"));
    browser.close().await;
}

#[tokio::test]
async fn hundreds_of_objects_draw_only_the_rows_in_view_and_offer_a_few_to_act_on() {
    let names: Vec<String> = (0..300).map(|i| format!("pod-{i:03}")).collect();
    let objects: Vec<(&str, u64)> = names.iter().map(|n| (n.as_str(), 10)).collect();
    let with_actions = Hello {
        demo_actions: true,
        ..hello(PROTOCOL_VERSION)
    };
    let bridge = ScriptedBridge::start(with_actions, vec![snapshot_of(&objects)]).await;
    let browser = open(&bridge, "").await;
    // The actions offer a few pods to pick from, not hundreds.
    browser
        .wait_until(
            "the pods to delete are offered, the first fifty",
            "document.querySelectorAll('#action-pod option').length === 50 \
             && document.querySelector('#action-pod option').value === 'default/pod-000'",
        )
        .await;
    browser
        .wait_until(
            "the table holds every object",
            "document.querySelector('section.objects').dataset.objects === '300'",
        )
        .await;
    let keys = "[...document.querySelectorAll('tr.object-row')].map(r => r.dataset.key)";
    let drawn = browser.eval(keys).await;
    let drawn = drawn.as_array().expect("rows");
    assert!(
        !drawn.is_empty() && drawn.len() < 40,
        "only the rows in view and a few more: {}",
        drawn.len()
    );
    assert_eq!(drawn[0], json!("default/pod-000"));
    // Scrolled to the end, the last objects are drawn, in order.
    browser
        .eval("((s) => { s.scrollTop = s.scrollHeight; return true; })(document.querySelector('.objects .scroll'))")
        .await;
    browser
        .wait_until(
            "the last object is drawn after scrolling",
            "document.querySelector(\"tr.object-row[data-key='default/pod-299']\")",
        )
        .await;
    let drawn = browser.eval(keys).await;
    let drawn: Vec<&str> = drawn
        .as_array()
        .expect("rows")
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert!(drawn.len() < 40, "{}", drawn.len());
    assert!(
        drawn.windows(2).all(|w| w[0] < w[1]),
        "in key order: {drawn:?}"
    );
    assert!(
        !drawn.contains(&"default/pod-000"),
        "the first rows left: {drawn:?}"
    );
    // A drawn row still opens its object's history.
    browser
        .click("tr.object-row[data-key='default/pod-299']")
        .await;
    browser
        .wait_until(
            "the history of the object clicked",
            "document.querySelector('#history .name')?.textContent === 'default/pod-299'",
        )
        .await;
    // The pod the viewer chose stays chosen as the list around it moves:
    // five pods offered before it are deleted.
    browser
        .eval(
            "((s) => { s.value = 'default/pod-010'; s.dispatchEvent(new Event('change')); return s.value; })(document.querySelector('#action-pod'))",
        )
        .await;
    for (i, name) in names.iter().take(5).enumerate() {
        let i = i as u64;
        bridge.send(&event(
            i + 1,
            EventType::Deleted,
            scripted_pod(name),
            20 + i,
            stages(T0 + i * 10, &[10, 10, 10]),
        ));
    }
    browser
        .wait_until(
            "the deleted pods are no longer offered",
            "document.querySelector('#action-pod option').value === 'default/pod-005'",
        )
        .await;
    assert_eq!(
        browser
            .eval("document.querySelector('#action-pod').value")
            .await,
        json!("default/pod-010"),
        "the choice moved with the options"
    );
    browser.close().await;
}

#[tokio::test]
async fn a_search_hides_objects_but_never_a_bookmark_or_an_error() {
    let bridge = ScriptedBridge::start(hello(PROTOCOL_VERSION), vec![snapshot_of(&[])]).await;
    let browser = open(&bridge, "?q=web&ns=default").await;
    let whole_watch = ObjectRef {
        resource: "pods".into(),
        kind: "Pod".into(),
        namespace: None,
        name: String::new(),
    };
    bridge.send(&event(
        1,
        EventType::Modified,
        scripted_pod("db-1"),
        20,
        stages(T0, &[10, 10, 10]),
    ));
    bridge.send(&event(
        2,
        EventType::Bookmark,
        whole_watch.clone(),
        21,
        stages(T0, &[10, 10, 10]),
    ));
    bridge.send(&event(
        3,
        EventType::Error,
        whole_watch,
        22,
        stages(T0, &[10, 10, 10]),
    ));
    bridge.send(&event(
        4,
        EventType::Modified,
        scripted_pod("web-1"),
        23,
        stages(T0, &[10, 10, 10]),
    ));
    browser
        .wait_until(
            "the last event is listed",
            "document.querySelector('tr.event-row[data-rv=\"23\"]')",
        )
        .await;
    let listed = browser
        .eval("[...document.querySelectorAll('tr.event-row')].map(r => r.dataset.type).sort()")
        .await;
    assert_eq!(listed, json!(["BOOKMARK", "ERROR", "MODIFIED"]));
    browser
        .wait_until(
            "the ERROR travels as a token",
            "document.querySelector('#pipeline [data-token][data-type=ERROR]')",
        )
        .await;
    browser.close().await;
}

#[tokio::test]
async fn a_relist_is_animated_whole_however_many_objects_it_lists() {
    let bridge = ScriptedBridge::start(hello(PROTOCOL_VERSION), vec![snapshot_of(&[])]).await;
    let browser = open(&bridge, "").await;
    const LISTED: u64 = 40;
    for i in 0..LISTED {
        let mut frame = event(
            i + 1,
            EventType::Added,
            scripted_pod(&format!("web-{i}")),
            100 + i,
            StageTimes::from([(Stage::Reflector, StageMark::at(T0))]),
        );
        if let FrameBody::Event(e) = &mut frame.body {
            e.initial = true;
        }
        bridge.send(&frame);
    }
    browser
        .wait_until(
            "every listed object is animated",
            &format!("Number(document.querySelector('#pipeline').dataset.launched) >= {LISTED}"),
        )
        .await;
    let skipped = browser
        .eval(
            "[...document.querySelectorAll('#pipeline .skipped')].map(s => s.textContent).join('')",
        )
        .await;
    assert_eq!(
        skipped,
        json!(""),
        "nothing of a relist is counted instead of drawn"
    );
    browser.close().await;
}

/// Stage times at the given offsets from `T0` (µs), in pipeline order.
fn marks(at: &[(Stage, u64)]) -> StageTimes {
    at.iter()
        .map(|(stage, us)| (*stage, StageMark::at(T0 + us)))
        .collect()
}

fn call(
    listener: &str,
    callback: Callback,
    depth: u32,
    dequeued: u64,
    returned: u64,
) -> HandlerCall {
    HandlerCall {
        listener: listener.into(),
        callback,
        depth,
        dequeued: T0 + dequeued,
        returned: T0 + returned,
    }
}

fn handled(frame: ServerFrame, handled: Handled) -> ServerFrame {
    match frame.body {
        FrameBody::Event(e) => ServerFrame {
            seq: frame.seq,
            body: FrameBody::Event(WatchEvent { handled, ..e }),
        },
        _ => frame,
    }
}

fn reflector(seq: u64, resource: &str, state: ReflectorState) -> ServerFrame {
    ServerFrame {
        seq,
        body: FrameBody::Reflector(ReflectorUpdate {
            resource: resource.into(),
            state,
        }),
    }
}

#[tokio::test]
async fn the_informer_side_listeners_a_resync_a_relist_deletion_and_a_stage_read_first() {
    // A cluster watched with its etcd: the etcd mark is etcd's notification.
    let cluster = cluster_hello();
    let bridge =
        ScriptedBridge::start(cluster, vec![snapshot_of(&[("web-1", 11), ("web-2", 9)])]).await;
    let browser = open(&bridge, "?speed=0").await;
    bridge.send(&reflector(
        1,
        "pods",
        ReflectorState::WatchStarted {
            resource_version: "11".into(),
            timeout_seconds: 417,
        },
    ));
    bridge.send(&reflector(
        2,
        "configmaps",
        ReflectorState::ListStarted {
            resource_version: "0".into(),
            limit: 500,
        },
    ));
    // web-1 changes: the Reflector decoded it 120 µs before etcd's watch
    // told watchlife of the write. Both listeners run; worker 1 reads RV 12.
    let changed = marks(&[
        (Stage::Etcd, 120),
        (Stage::Reflector, 0),
        (Stage::Fifo, 10),
        (Stage::Indexer, 30),
        (Stage::Handlers, 30),
        (Stage::Workqueue, 90),
        (Stage::Reconcile, 300),
    ]);
    bridge.send(&handled(
        event(3, EventType::Modified, scripted_pod("web-1"), 12, changed),
        Handled {
            in_initial_list: false,
            old_resource_version: Some("11".into()),
            calls: vec![
                call("scheduler: scheduled", Callback::OnUpdate, 2, 40, 55),
                call("controller", Callback::OnUpdate, 0, 35, 80),
            ],
            reconcile: Some(ReconcileRun {
                worker: 1,
                started: T0 + 300,
                finished: T0 + 1_500,
                seen_resource_version: Some("12".into()),
                requeued_after_ms: None,
            }),
            ..Handled::default()
        },
    ));
    // A resync of web-1: same resourceVersion; the scheduler's filter
    // turns it away, only the controller is called.
    let resynced = marks(&[
        (Stage::Fifo, 5_000),
        (Stage::Indexer, 5_010),
        (Stage::Handlers, 5_010),
        (Stage::Workqueue, 5_040),
    ]);
    bridge.send(&handled(
        event(4, EventType::Modified, scripted_pod("web-1"), 12, resynced),
        Handled {
            old_resource_version: Some("12".into()),
            resync: true,
            calls: vec![call("controller", Callback::OnUpdate, 1, 5_020, 5_030)],
            ..Handled::default()
        },
    ));
    // web-2 is gone, found by a relist: DeletedFinalStateUnknown.
    let relisted = marks(&[
        (Stage::Reflector, 9_000),
        (Stage::Fifo, 9_010),
        (Stage::Indexer, 9_020),
        (Stage::Handlers, 9_020),
    ]);
    bridge.send(&handled(
        event(5, EventType::Deleted, scripted_pod("web-2"), 9, relisted),
        Handled {
            final_state_unknown: true,
            calls: vec![
                call("scheduler: scheduled", Callback::OnDelete, 0, 9_030, 9_035),
                call("controller", Callback::OnDelete, 0, 9_025, 9_040),
            ],
            ..Handled::default()
        },
    ));

    // The log marks the resync and the deletion found by relist.
    browser
        .wait_until(
            "the log marks the resync and the relist's deletion",
            "document.querySelector('tr.event-row[data-seq=\"4\"][data-mark=resync] .delivery-note')?.textContent.trim() === 'resync' \
             && document.querySelector('tr.event-row[data-seq=\"5\"][data-mark=dfsu] .delivery-note')?.textContent.trim() \
                === 'DeletedFinalStateUnknown (found by relist)'",
        )
        .await;
    // The negative interval keeps its sign and says why; its bar is drawn backwards.
    let waterfall = browser
        .eval("document.querySelector('tr.event-row[data-seq=\"3\"] svg.waterfall').getAttribute('aria-label')")
        .await;
    let waterfall = waterfall.as_str().unwrap_or_default();
    assert!(
        waterfall.contains(
            "Reflector −120 µs (etcd's watch heard of it after the apiserver's watch did)"
        ),
        "{waterfall}"
    );
    assert!(
        waterfall.contains("event handlers ±0 (same instant: both read at once)"),
        "{waterfall}"
    );
    let backwards = browser
        .eval("document.querySelectorAll('tr.event-row[data-seq=\"3\"] svg.waterfall rect.negative').length")
        .await;
    assert_eq!(backwards, json!(1));

    // The event's detail: each listener's call and the reconcile's worker and read.
    browser.click("tr.event-row[data-seq=\"3\"]").await;
    browser
        .wait_until(
            "the detail of the event clicked",
            "document.querySelector('#event-detail')?.textContent.startsWith('Event 3:')",
        )
        .await;
    let detail = browser.text("#event-detail").await;
    for line in [
        "Event 3: MODIFIED Pod default/web-1 at RV 12",
        "the Indexer held RV 11 before",
        "Reflector −120 µs (etcd's watch heard of it after the apiserver's watch did)",
        "scheduler: scheduled: OnUpdate at buffer depth 2, dequeued +10 µs, returned +15 µs",
        "controller: OnUpdate at buffer depth 0, dequeued +5 µs, returned +45 µs",
        "reconcile by worker 1, started +210 µs, ran +1.20 ms, read RV 12",
    ] {
        assert!(detail.contains(line), "{line:?} in {detail}");
    }

    // One lane per listener on the handlers' node, in order of appearance:
    // depth at the latest call, calls by callback, p50 run time.
    browser
        .wait_until(
            "the handlers' node has a lane per listener",
            "[...document.querySelectorAll('#pipeline g.stage[data-stage=handlers] g.listener')].length === 2 \
             && document.querySelector('g.listener[data-key=controller] .line-words')?.textContent.startsWith('OnUpdate 2, OnDelete 1 · buffer 0 ·')",
        )
        .await;
    let lanes = browser
        .eval(
            "[...document.querySelectorAll('#pipeline g.listener')].map(g => \
             [g.dataset.key, g.querySelector('.line-lead').textContent.trim(), g.querySelector('.line-words').textContent])",
        )
        .await;
    assert_eq!(
        lanes,
        json!([
            [
                "scheduler: scheduled",
                "scheduled",
                "OnUpdate 1, OnDelete 1 · buffer 0 · 5 µs"
            ],
            [
                "controller",
                "controller",
                "OnUpdate 2, OnDelete 1 · buffer 0 · 15 µs"
            ]
        ])
    );
    // The Reflector's node shows the requests as asked.
    let requests = browser
        .eval(
            "Object.fromEntries([...document.querySelectorAll('#pipeline g.reflector')].map(g => \
             [g.dataset.key, g.querySelector('.line-words').textContent]))",
        )
        .await;
    assert_eq!(
        requests,
        json!({"pods": "WATCH rv=\"11\" timeout 417s", "configmaps": "LIST rv=\"0\" limit=500"})
    );
    // The Reflector's negative latency is kept and counted, not clamped.
    browser
        .wait_until(
            "the Reflector's node counts the negative interval",
            "document.querySelector('g.stage[data-stage=reflector] .stage-depth')?.textContent.startsWith('1 of 1 negative')",
        )
        .await;
    // Why, in the line's tooltip: an SVG title, which the browser shows.
    let why = browser
        .eval(
            "(t => t && t.namespaceURI === 'http://www.w3.org/2000/svg' && t.textContent)\
             (document.querySelector('g.stage[data-stage=reflector] .stage-depth title'))",
        )
        .await;
    assert!(
        why.as_str().is_some_and(
            |w| w.starts_with("1 of the last 1 intervals from the stage before are negative")
        ),
        "{why}"
    );

    browser
        .wait_until(
            "the Reflector's histogram counts the negative sample apart",
            "document.querySelector('#plot-latency g.histogram[data-stage=reflector]')?.dataset.negative === '1' \
             && document.querySelector('#plot-latency g.histogram[data-stage=reflector] .cell-negative').textContent === '1 negative'",
        )
        .await;

    // The objects' histories: a resync of web-1, and web-2 gone by relist.
    browser
        .click("tr.object-row[data-key='default/web-1']")
        .await;
    browser
        .wait_until(
            "web-1's history ends in a resync",
            "document.querySelector('#history .version:last-child')?.dataset.mark === 'resync'",
        )
        .await;
    let resync = browser.text("#history .version:last-child .change").await;
    assert!(resync.starts_with("resync"), "{resync}");
    let shot = watchlife_tests::workspace().join("target/screenshots");
    std::fs::create_dir_all(&shot).expect("a folder for the screenshot");
    browser.screenshot(&shot.join("informer-side.png")).await;
    browser
        .eval("document.querySelector('.panels').scrollIntoView() || true")
        .await;
    browser
        .screenshot(&shot.join("informer-side-panels.png"))
        .await;
    browser
        .click("tr.object-row[data-key='default/web-2']")
        .await;
    browser
        .wait_until(
            "web-2's history ends in DeletedFinalStateUnknown",
            "document.querySelector('#history .version:last-child')?.dataset.mark === 'dfsu'",
        )
        .await;
    let gone = browser.text("#history .version:last-child .change").await;
    assert!(
        gone.starts_with("DeletedFinalStateUnknown (found by relist)"),
        "{gone}"
    );
    browser.close().await;
}

#[tokio::test]
async fn a_bridge_with_a_newer_protocol_is_told_plainly() {
    let bridge = ScriptedBridge::start(hello(PROTOCOL_VERSION + 1), vec![]).await;
    let browser = Browser::open(1280, 800, &bridge.url()).await;
    browser
        .wait_until(
            "the link says incompatible",
            "document.querySelector('#link[data-link=incompatible]')",
        )
        .await;
    let notice = browser.text("#notice").await;
    assert!(
        notice.contains(&format!("protocol {}", PROTOCOL_VERSION + 1))
            && notice.contains("Reload the page"),
        "{notice}"
    );
    browser.close().await;
}

#[tokio::test]
async fn the_token_in_the_address_is_passed_on_to_the_stream() {
    let bridge = ScriptedBridge::start(hello(PROTOCOL_VERSION), vec![snapshot_of(&[])]).await;
    let browser = open(&bridge, "?token=s3cr%2Bt&theme=dark").await;
    let requests = bridge.ws_requests();
    // Chromium can decompress, so the page asks for its frames compressed
    // (this scripted bridge answers in text, which the page reads as well).
    assert_eq!(
        requests,
        vec!["/ws?batch=true&compress=deflate&bodies=patch&token=s3cr%2Bt".to_string()]
    );
    // The address keeps it, so a reload still gets in.
    let query = browser.eval("location.search").await;
    assert_eq!(query, json!("?theme=dark&token=s3cr%2Bt"));
    browser.close().await;
}

/// A streaming list as the page draws it: the Reflector's request (one WATCH
/// with sendInitialEvents, no LIST), the synthetic ADDEDs each handed to
/// OnAdd with isInInitialList, the BOOKMARK annotated initial-events-end
/// that closes the list, then a live event that is not in the initial list.
#[tokio::test]
async fn a_streaming_list_is_drawn_with_its_closing_bookmark() {
    let bridge = ScriptedBridge::start(hello(PROTOCOL_VERSION), vec![snapshot_of(&[])]).await;
    let browser = open(&bridge, "?captions=on").await;
    bridge.send(&reflector(
        1,
        "pods",
        ReflectorState::StreamingListStarted {
            resource_version: String::new(),
            timeout_seconds: 417,
        },
    ));
    let mut seq = 1;
    for (name, rv) in [("web-a", 41), ("web-b", 42)] {
        seq += 1;
        let mut frame = handled(
            event(
                seq,
                EventType::Added,
                scripted_pod(name),
                rv,
                marks(&[(Stage::Reflector, 10)]),
            ),
            Handled {
                in_initial_list: true,
                calls: vec![call("controller", Callback::OnAdd, 1, 20, 25)],
                ..Handled::default()
            },
        );
        if let FrameBody::Event(e) = &mut frame.body {
            e.initial = true;
        }
        bridge.send(&frame);
    }
    let mut bookmark = event(
        seq + 1,
        EventType::Bookmark,
        scripted_pod(""),
        43,
        marks(&[(Stage::Reflector, 30)]),
    );
    if let FrameBody::Event(e) = &mut bookmark.body {
        e.target.name = String::new();
        e.target.namespace = None;
    }
    bridge.send(&bookmark);
    bridge.send(&reflector(
        seq + 2,
        "pods",
        ReflectorState::InitialEventsEnd {
            count: 2,
            resource_version: "43".into(),
        },
    ));
    bridge.send(&handled(
        event(
            seq + 3,
            EventType::Added,
            scripted_pod("web-c"),
            44,
            marks(&[(Stage::Reflector, 50)]),
        ),
        Handled {
            calls: vec![call("controller", Callback::OnAdd, 1, 60, 65)],
            ..Handled::default()
        },
    ));
    browser
        .wait_until(
            "the Reflector node says the list was streamed",
            "[...document.querySelectorAll('.reflector[data-key=pods] .line-words')].some(e => /STREAMED 2/.test(e.textContent))",
        )
        .await;
    browser
        .wait_until(
            "both listed objects are marked isInInitialList, the live one is not",
            "document.querySelectorAll('tr.event-row[data-mark=initial-list]').length == 2 \
             && document.querySelectorAll('tr.event-row[data-type=ADDED]').length == 3",
        )
        .await;
    browser
        .wait_until(
            "the closing BOOKMARK passed through the log",
            "document.querySelectorAll('tr.event-row[data-type=BOOKMARK]').length == 1",
        )
        .await;
    let notes = browser
        .eval("[...document.querySelectorAll('tr.event-row .delivery-note')].map(e => e.textContent.trim()).join('|')")
        .await;
    assert_eq!(notes, json!("isInInitialList|isInInitialList"));
    browser.screenshot_for_docs("streaming-list.png").await;
    browser.close().await;
}

/// A cluster whose apiserver's stages cannot be observed (watched with its
/// etcd): etcd, then the client's stages.
fn cluster_hello() -> Hello {
    Hello {
        source: Source::Cluster {
            context: "kind".into(),
            server: "https://127.0.0.1:6443".into(),
        },
        observed_stages: Stage::ALL
            .into_iter()
            .filter(|s| *s == Stage::Etcd || !s.is_server_side())
            .collect(),
        ..hello(PROTOCOL_VERSION)
    }
}

#[tokio::test]
async fn a_token_jumps_the_unobserved_stages_and_bookmarks_can_be_hidden() {
    let bridge = ScriptedBridge::start(cluster_hello(), vec![snapshot_of(&[])]).await;
    // Slow motion: the jump lasts long enough to be seen.
    let browser = open(&bridge, "?speed=0").await;
    let client_side = marks(&[
        (Stage::Etcd, 0),
        (Stage::Reflector, 900),
        (Stage::Fifo, 910),
    ]);
    bridge.send(&event(
        1,
        EventType::Modified,
        scripted_pod("web-1"),
        20,
        client_side.clone(),
    ));
    // From etcd the token jumps over the watch cache and the stream, which
    // nothing measured: it is never drawn at either.
    browser
        .wait_until(
            "the token jumps from etcd",
            "document.querySelector('#pipeline .token.jumping[data-rv=\"20\"]')",
        )
        .await;
    let at_server = browser
        .eval("[...document.querySelectorAll('#pipeline .token')].map(t => t.dataset.at).filter(a => a === 'watch_cache' || a === 'watch_stream')")
        .await;
    assert_eq!(at_server, json!([]));
    // Bookmarks: how often they come, said beside the box that hides them.
    let whole_watch = ObjectRef {
        resource: "pods".into(),
        kind: "Pod".into(),
        namespace: None,
        name: String::new(),
    };
    bridge.send(&event(
        2,
        EventType::Bookmark,
        whole_watch,
        21,
        client_side.clone(),
    ));
    bridge.send(&event(
        3,
        EventType::Modified,
        scripted_pod("web-2"),
        22,
        client_side,
    ));
    browser
        .wait_until(
            "the bookmark is listed",
            "document.querySelector('tr.event-row[data-type=BOOKMARK]')",
        )
        .await;
    let interval = browser.text(".bookmark-interval").await;
    assert!(
        interval.contains("about once a minute per watch"),
        "{interval}"
    );
    browser.click("#hide-bookmarks").await;
    browser
        .wait_until(
            "the bookmark is hidden, the other events are not",
            "!document.querySelector('tr.event-row[data-type=BOOKMARK]') \
             && document.querySelectorAll('tr.event-row[data-type=MODIFIED]').length === 2 \
             && location.search.includes('bookmarks=0')",
        )
        .await;
    browser.close().await;
    // The address keeps the choice.
    let again = open(&bridge, "?bookmarks=0").await;
    let checked = again
        .eval("document.querySelector('#hide-bookmarks').checked")
        .await;
    assert_eq!(checked, json!(true));
    again.close().await;
}

/// A viewer that joins a bridge in the middle of its first lists (a new
/// replica in a rolling update) sees the objects listed so far, and is told
/// that they are not the whole set until each resource has listed.
#[tokio::test]
async fn objects_listed_so_far_are_never_shown_as_the_whole_set() {
    let bridge =
        ScriptedBridge::start(hello(PROTOCOL_VERSION), vec![snapshot_of(&[("web-1", 11)])]).await;
    let browser = open(&bridge, "").await;
    bridge.send(&reflector(
        1,
        "pods",
        ReflectorState::ListStarted {
            resource_version: "0".into(),
            limit: 500,
        },
    ));
    browser
        .wait_until(
            "the note names both resources",
            "document.querySelector('#listing-note[data-listing=true]')?.textContent.includes('pods and configmaps are being listed')",
        )
        .await;
    bridge.send(&reflector(
        2,
        "pods",
        ReflectorState::ListFinished {
            count: 1,
            resource_version: "11".into(),
        },
    ));
    browser
        .wait_until(
            "only configmaps is left",
            "document.querySelector('#listing-note').textContent.startsWith('Not the whole set yet: configmaps is being listed')",
        )
        .await;
    bridge.send(&reflector(
        3,
        "configmaps",
        ReflectorState::InitialEventsEnd {
            count: 0,
            resource_version: "12".into(),
        },
    ));
    browser
        .wait_until(
            "the note goes once every resource has listed",
            "document.querySelector('#listing-note[data-listing=false]')?.hidden",
        )
        .await;
    // A 410 makes the set stale again until the relist is done.
    bridge.send(&reflector(
        4,
        "pods",
        ReflectorState::Relist {
            reason: "410 Gone".into(),
        },
    ));
    browser
        .wait_until(
            "a relist is said too",
            "document.querySelector('#listing-note[data-listing=true]')?.textContent.includes('pods is being listed')",
        )
        .await;
    browser.close().await;
}

/// Deployment `default/web`, as the bridge's own watch names it.
fn deployment_web() -> ObjectRef {
    ObjectRef {
        resource: "deployments.apps".into(),
        kind: "Deployment".into(),
        namespace: Some("default".into()),
        name: "web".into(),
    }
}

/// What a controller's tap said, as the bridge relays it, at stream `seq`.
/// With no frame, it says the tap left.
fn tap(seq: u64, tap: u64, controller: &str, frame: Option<TapFrame>) -> ServerFrame {
    let left = frame.is_none().then(|| "closed by the tap".to_string());
    ServerFrame {
        seq,
        body: FrameBody::Tap(TapRelay {
            tap,
            controller: controller.into(),
            received: T0 + 5_000,
            frame,
            left,
        }),
    }
}

/// Two controllers' taps around one bridge event: `configmap-per-deployment`
/// sees Deployment default/web at RV 812 in its watcher, reconciles it and
/// asks for a requeue in 5 minutes, and says it dropped 3 frames;
/// `pod-janitor` fails a reconcile and leaves.
fn two_controllers() -> Vec<ServerFrame> {
    let web = TapObjectRef {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        namespace: Some("default".into()),
        name: "web".into(),
    };
    let hello = |controller: &str| {
        Some(TapFrame::Hello(watchlife_protocol::tap::Hello {
            version: TAP_PROTOCOL_VERSION,
            controller: controller.into(),
            tap_version: "0.1.0".into(),
            kube_runtime: "5.x".into(),
            started_at_us: T0 - 60_000_000,
            unobserved: vec!["scheduler".into(), "runner".into()],
        }))
    };
    let cm = "configmap-per-deployment";
    let janitor = "pod-janitor";
    // The bridge's event: committed at T0, in the watch cache at T0 + 10 µs.
    let bridge_event = event(
        1,
        EventType::Modified,
        deployment_web(),
        812,
        stages(T0, &[10, 5, 200, 50, 50, 20, 30, 900]),
    );
    vec![
        tap(0, 1, cm, hello(cm)),
        bridge_event,
        tap(
            2,
            1,
            cm,
            Some(TapFrame::Request(RequestFrame {
                seq: 1,
                at_us: T0 - 1_000_000,
                method: "GET".into(),
                url: "/apis/apps/v1/deployments?&watch=true&timeoutSeconds=290&allowWatchBookmarks=true&resourceVersion=811".into(),
                verb: RequestVerb::Watch,
                status: Some(200),
                duration_us: None,
            })),
        ),
        tap(
            3,
            1,
            cm,
            Some(TapFrame::Watcher(WatcherFrame {
                seq: 2,
                at_us: T0 + 400,
                resource: "deployments.apps".into(),
                event: WatcherEventKind::Apply,
                object: Some(web.clone()),
                resource_version: Some("812".into()),
                applied_to_store: Some(true),
            })),
        ),
        tap(
            4,
            1,
            cm,
            Some(TapFrame::ReconcileStart(ReconcileStart {
                seq: 3,
                at_us: T0 + 1_100,
                reconcile: 1,
                object: web.clone(),
                resource_version: Some("812".into()),
                reason: Some(Reason::ObjectUpdated),
                since_watcher_event_us: Some(700),
            })),
        ),
        tap(
            5,
            1,
            cm,
            Some(TapFrame::ReconcileEnd(ReconcileEnd {
                seq: 4,
                at_us: T0 + 3_100,
                reconcile: 1,
                object: web.clone(),
                duration_us: 2_000,
                result: ReconcileResult::Action {
                    action: Requeue::After {
                        after_us: 300_000_000,
                    },
                },
            })),
        ),
        tap(
            6,
            1,
            cm,
            Some(TapFrame::Stats(TapStats {
                seq: 8,
                at_us: T0 + 4_000,
                recorded: 8,
                dropped: 3,
            })),
        ),
        tap(7, 2, janitor, hello(janitor)),
        tap(
            8,
            2,
            janitor,
            Some(TapFrame::ReconcileStart(ReconcileStart {
                seq: 1,
                at_us: T0 + 2_000,
                reconcile: 1,
                object: web.clone(),
                resource_version: Some("812".into()),
                reason: Some(Reason::RelatedObjectUpdated {
                    related: "ConfigMap.v1./web.default".into(),
                }),
                since_watcher_event_us: None,
            })),
        ),
        tap(
            9,
            2,
            janitor,
            Some(TapFrame::ReconcileEnd(ReconcileEnd {
                seq: 2,
                at_us: T0 + 2_500,
                reconcile: 1,
                object: web,
                duration_us: 500,
                result: ReconcileResult::Error {
                    message: "pods is forbidden".into(),
                },
            })),
        ),
        tap(10, 2, janitor, None),
    ]
}

#[tokio::test]
async fn each_connected_controller_is_a_lane_matched_with_the_bridges_events() {
    let mut opening = vec![snapshot_of(&[])];
    opening.extend(two_controllers());
    let bridge = ScriptedBridge::start(
        scripted_hello("scripted", &["pods", "deployments.apps"]),
        opening,
    )
    .await;
    // Live speed: the event's token launches at once, and the tap frames
    // behind it are shown in their turn.
    let browser = Browser::open_connected(1920, 1080, &format!("{}/?speed=4", bridge.url())).await;
    browser
        .wait_until(
            "both lanes are drawn, the second one disconnected",
            "document.querySelectorAll('#controllers article.tap-lane').length == 2 \
             && document.querySelector('.tap-lane[data-tap=\"2\"] .tap-status.left')",
        )
        .await;
    let lanes = browser
        .eval("[...document.querySelectorAll('#controllers .tap-lane h3')].map(h => h.textContent)")
        .await;
    assert_eq!(lanes, json!(["configmap-per-deployment", "pod-janitor"]));
    let lane = ".tap-lane[data-controller=\"configmap-per-deployment\"]";
    let stage_names = browser
        .eval(&format!(
            "[...document.querySelectorAll('{lane} .tap-stage')].map(s => s.dataset.stage)"
        ))
        .await;
    assert_eq!(
        stage_names,
        json!([
            "watcher",
            "store",
            "trigger-scheduler-runner",
            "reconcile",
            "requeue"
        ])
    );
    let joined = browser
        .text(&format!(
            "{lane} .tap-stage[data-stage=trigger-scheduler-runner]"
        ))
        .await;
    assert!(
        joined.contains("not observed separately") && joined.contains("700 µs"),
        "{joined}"
    );
    let reconcile = format!("{lane} .tap-reconcile[data-rv=\"812\"]");
    assert_eq!(
        browser.text(&format!("{reconcile} .tap-reason")).await,
        "the object changed"
    );
    assert_eq!(
        browser.text(&format!("{reconcile} .tap-result")).await,
        "requeue after 5 min"
    );
    assert_eq!(
        browser.text(&format!("{reconcile} .tap-ran")).await,
        "ran 2.00 ms"
    );
    assert_eq!(
        browser
            .text(&format!("{lane} .tap-drops[data-dropped=\"3\"]"))
            .await,
        "3 frames dropped of 8 recorded"
    );
    assert!(
        browser
            .text(&format!("{lane} .tap-request"))
            .await
            .starts_with("WATCH /apis/apps/v1/deployments")
    );
    let janitor = ".tap-lane[data-controller=\"pod-janitor\"]";
    assert_eq!(
        browser.text(&format!("{janitor} .tap-status")).await,
        "disconnected: closed by the tap"
    );
    assert_eq!(
        browser.text(&format!("{janitor} .tap-reason")).await,
        "a related object changed (ConfigMap web.default)"
    );
    assert_eq!(
        browser.text(&format!("{janitor} .tap-result")).await,
        "error: pods is forbidden"
    );

    // The bridge's event, clicked: its waterfall goes on into each
    // controller that handled the same version of the object.
    browser.click("tr.event-row[data-rv=\"812\"]").await;
    browser
        .wait_until(
            "the event's detail heads both controllers' hops",
            "document.querySelectorAll('.event-detail-box .hop-controller').length == 2",
        )
        .await;
    let heads = browser
        .eval("[...document.querySelectorAll('.event-detail-box .hop-controller')].map(h => h.textContent)")
        .await;
    assert_eq!(
        heads,
        json!([
            "configmap-per-deployment, on its own clock",
            "pod-janitor, on its own clock"
        ])
    );
    let hops = browser
        .eval("[...document.querySelectorAll('.event-detail-box li.hop.tap')].map(h => [h.dataset.hop, h.dataset.micros ?? null])")
        .await;
    assert_eq!(
        hops,
        json!([
            ["tap_watcher", "390"],
            ["tap_wait", "700"],
            ["tap_reconcile", "2000"],
            // pod-janitor's watcher was not seen: its wait and hop are unknown.
            ["tap_watcher", null],
            ["tap_wait", null],
            ["tap_reconcile", "500"],
        ])
    );
    browser.assert_no_overlap("#controllers .tap-stage").await;
    browser
        .assert_no_overlap(&format!("{lane} .tap-reconcile > span"))
        .await;
    browser
        .eval("document.getElementById('controllers').scrollIntoView() || true")
        .await;
    browser.screenshot_for_docs("controllers.png").await;
    browser
        .eval("document.querySelector('.event-detail-box').scrollIntoView() || true")
        .await;
    browser.screenshot_for_docs("controller-hops.png").await;
    browser.close().await;

    // A phone (in presenter mode, the page's one-column layout there): the
    // stages stack, nothing overlaps, nothing scrolls sideways.
    let phone = Browser::start_phone(375, 812).await;
    phone
        .goto(&format!("{}/?presenter=1&speed=4", bridge.url()))
        .await;
    phone.wait_connected().await;
    phone
        .wait_for(".tap-lane[data-tap=\"2\"] .tap-status.left")
        .await;
    phone.assert_no_overlap("#controllers .tap-stage").await;
    phone
        .assert_no_overlap("#controllers .tap-reconcile > span")
        .await;
    phone.assert_no_overlap("#controllers .tap-head > *").await;
    let wide = phone
        .eval("[...document.querySelectorAll('#controllers *')].filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5).map(e => e.className)")
        .await;
    assert_eq!(
        wide,
        json!([]),
        "nothing of the lanes reaches past the screen"
    );
    phone
        .eval("document.getElementById('controllers').scrollIntoView() || true")
        .await;
    phone.screenshot_for_docs("controllers-phone.png").await;
    phone.close().await;
}

#[tokio::test]
async fn tap_frames_wait_their_turn_on_the_one_clock() {
    let mut opening = vec![snapshot_of(&[])];
    opening.extend(two_controllers());
    let bridge = ScriptedBridge::start(
        scripted_hello("scripted", &["pods", "deployments.apps"]),
        opening,
    )
    .await;
    let browser = open(&bridge, "?paused=1&speed=4").await;
    // Paused, nothing the stream brought is shown: not even the first
    // tap's hello, which came before the bridge's event. The frames came
    // with the greeting; the page is given time to take them.
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    let held = browser
        .eval("document.querySelectorAll('#controllers, .tap-lane').length")
        .await;
    assert_eq!(held, json!(0), "while paused, the tap frames wait");
    browser.click("#step").await;
    browser
        .wait_until(
            "once the event travels, the frames behind it are shown, none lost",
            "document.querySelectorAll('.tap-lane').length == 2 \
             && document.querySelectorAll('.tap-reconcile').length == 2 \
             && document.querySelector('.tap-drops[data-dropped=\"3\"]') \
             && document.querySelector('.tap-status.left')",
        )
        .await;
    browser.close().await;
}

#[tokio::test]
async fn a_recording_made_with_taps_connected_replays_their_lanes() {
    use watchlife_protocol::recording::{
        RECORDING_FORMAT, RecordingHeader, frame_line, header_line,
    };
    // The recording as the page's recorder writes it: the header, the
    // bridge's hello and a snapshot, then every stream frame as received.
    let hello = scripted_hello("scripted", &["pods", "deployments.apps"]);
    let mut lines = vec![header_line(&RecordingHeader {
        watchlife_recording: RECORDING_FORMAT,
        protocol: PROTOCOL_VERSION,
        source: hello.source.clone(),
        resources: hello.resources.clone(),
        started_at: T0,
        title: "two controllers".into(),
    })];
    let mut frames = vec![
        ServerFrame {
            seq: 0,
            body: FrameBody::Hello(hello),
        },
        snapshot_of(&[]),
    ];
    frames.extend(two_controllers());
    for (i, frame) in frames.iter().enumerate() {
        let json = serde_json::to_string(frame).expect("frames serialize");
        lines.push(frame_line(i as u64 * 100, &json));
    }
    let dir = tempfile::tempdir().expect("a temp dir");
    watchlife_tests::static_files::copy_folder(
        &watchlife_tests::browser::embed_folder(),
        dir.path(),
    );
    std::fs::write(dir.path().join("taps.jsonl"), lines.join("\n") + "\n").expect("written");
    let server = watchlife_tests::static_files::StaticFiles::serve(dir.path()).await;
    let browser = Browser::open_replay(
        1440,
        1000,
        &server.url("embed.html?replay=taps.jsonl&speed=4"),
    )
    .await;
    browser
        .wait_until(
            "the replay draws both lanes, the reconcile, the drops and the leaving",
            "document.querySelectorAll('#controllers .tap-lane').length == 2 \
             && document.querySelector('.tap-reconcile[data-rv=\"812\"] .tap-result')?.textContent === 'requeue after 5 min' \
             && document.querySelector('.tap-drops[data-dropped=\"3\"]') \
             && document.querySelector('.tap-lane[data-controller=\"pod-janitor\"] .tap-status.left')",
        )
        .await;
    let marks = browser
        .eval("[...document.querySelectorAll('#replay-markers .replay-marker')].map(o => o.textContent)")
        .await;
    assert!(
        marks.as_array().is_some_and(|m| m.iter().any(|t| t
            .as_str()
            .is_some_and(|t| t.contains("pod-janitor disconnected")))),
        "{marks}"
    );
    browser.close().await;
}
