//! A real WebSocket client against the real binary: the frames parse as the
//! protocol says and carry live events from the embedded demo.

use std::time::Duration;
use watchlife_protocol::{
    EventType, FrameBody, Origin, ReflectorState, ServerAnswer, Source, Stage,
};
use watchlife_tests::bridge::Bridge;
use watchlife_tests::ws::Viewer;

const WAIT: Duration = Duration::from_secs(15);

#[tokio::test]
async fn frames_parse_and_carry_live_demo_events() {
    let bridge = Bridge::start(&["--demo", "--demo-rate", "20"]).await;
    let mut viewer = Viewer::connect(&bridge.ws_url()).await;

    let hello = match viewer.next_frame(WAIT).await.body {
        FrameBody::Hello(h) => h,
        other => panic!("the first frame must be hello, got {other:?}"),
    };
    assert_eq!(hello.protocol, watchlife_protocol::PROTOCOL_VERSION);
    assert!(matches!(hello.source, Source::Demo { .. }));
    assert!(hello.resources.contains(&"pods".to_string()));
    assert!(hello.observed_stages.contains(&Stage::Etcd));
    assert!(matches!(
        viewer.next_frame(WAIT).await.body,
        FrameBody::Snapshot(_)
    ));

    // Live watch events: numbered in order, with every stage measured and in
    // pipeline order, and each object's resourceVersions only growing. (Across
    // objects the order may differ from the watch's: each resource has its
    // own informer, and the workqueue hands out keys, not events.)
    let mut last_seq = 0;
    let mut last_rv: std::collections::HashMap<String, u64> = Default::default();
    let mut types = std::collections::HashSet::new();
    while types.len() < 3 {
        let frame = viewer.next_frame(WAIT).await;
        if frame.body.is_stream() {
            assert!(
                frame.seq > last_seq,
                "seq must increase: {} after {last_seq}",
                frame.seq
            );
            last_seq = frame.seq;
        }
        let FrameBody::Event(event) = frame.body else {
            continue;
        };
        if event.initial || event.target.name.is_empty() {
            continue; // listed objects, and BOOKMARK tokens
        }
        let rv: u64 = event
            .resource_version
            .parse()
            .expect("numeric resourceVersion");
        let key = format!("{}/{}", event.target.resource, event.target.key());
        let before = last_rv.insert(key.clone(), rv).unwrap_or(0);
        assert!(rv > before, "{key}: resourceVersion {rv} after {before}");
        assert!(
            hello.resources.contains(&event.target.resource),
            "{event:?}"
        );
        assert_eq!(
            event.object.parse()["metadata"]["resourceVersion"],
            event.resource_version
        );
        let times: Vec<u64> = event.stages.values().map(|m| m.at).collect();
        assert_eq!(
            event.stages.keys().copied().collect::<Vec<_>>(),
            Stage::ALL.to_vec(),
            "every stage measured, from etcd to reconcile"
        );
        assert!(
            times.windows(2).all(|w| w[0] <= w[1]),
            "stage times in order: {times:?}"
        );
        // Every server-side hop, as the demo's apiserver stamped it, in path
        // order: commit, the Cacher's Reflector, the watch cache, dispatch,
        // this watch's buffer, its stream.
        let path = event.server.as_deref().expect("the demo reports its hops");
        assert_eq!(path.origin, Origin::Live, "{event:?}");
        let hops = [
            event.stages[&Stage::Etcd].at,
            path.reflected.expect("reflected"),
            event.stages[&Stage::WatchCache].at,
            path.dispatched.expect("dispatched").at,
            path.buffered.at,
            path.written,
        ];
        assert!(
            hops.windows(2).all(|w| w[0] <= w[1]),
            "hops in order: {hops:?}"
        );
        assert_eq!(path.written, event.stages[&Stage::WatchStream].at);
        types.insert(event.event_type);
    }
    assert!(types.contains(&EventType::Added));
    assert!(types.contains(&EventType::Modified));
    assert!(types.contains(&EventType::Deleted));
}

/// The first `count` states of the pods Reflector of a demo bridge started
/// with `args`, and the release its hello names: resuming from 0 replays
/// the whole window, so what the Reflector did first is there.
async fn first_pods_states(args: &[&str], count: usize) -> (String, Vec<ReflectorState>) {
    let bridge = Bridge::start(args).await;
    let mut viewer = Viewer::connect(&bridge.ws_url()).await;
    let FrameBody::Hello(hello) = viewer.next_frame(WAIT).await.body else {
        panic!("hello first")
    };
    let mut resumed = Viewer::connect(&format!(
        "{}?stream={}&since=0",
        bridge.ws_url(),
        hello.stream
    ))
    .await;
    let mut states = Vec::new();
    while states.len() < count {
        if let FrameBody::Reflector(r) = resumed.next_frame(WAIT).await.body
            && r.resource == "pods"
        {
            states.push(r.state);
        }
    }
    (hello.kubernetes, states)
}

#[tokio::test]
async fn reflector_reports_list_then_watch() {
    let (_, states) =
        first_pods_states(&["--demo", "--demo-idle", "--kubernetes", "1.20"], 5).await;
    // client-go's first LIST, rv="0", answered by the watch cache at its
    // revision; then a WATCH from the LIST's revision, answered live with
    // nothing to replay.
    assert!(
        matches!(&states[0], ReflectorState::ListStarted { resource_version, .. } if resource_version == "0")
    );
    let ReflectorState::Answered {
        answer: ServerAnswer::ListFromWatchCache {
            asked, revision, ..
        },
    } = &states[1]
    else {
        panic!("the watch cache answers rv=\"0\": {states:?}")
    };
    assert_eq!(asked, "0");
    assert!(
        matches!(&states[2], ReflectorState::ListFinished { resource_version, .. } if resource_version == &revision.to_string())
    );
    assert!(matches!(states[3], ReflectorState::WatchStarted { .. }));
    assert!(
        matches!(&states[4], ReflectorState::Answered { answer: ServerAnswer::WatchReplayed { asked, .. } } if asked == &revision.to_string()),
        "{states:?}"
    );
}

/// Kubernetes 1.36's rules (the default): one WATCH with sendInitialEvents,
/// answered by the watch cache with the current objects, closed by the
/// initial-events-end bookmark; no LIST.
#[tokio::test]
async fn reflector_reports_a_streaming_list() {
    let (kubernetes, states) = first_pods_states(&["--demo", "--demo-idle"], 3).await;
    assert_eq!(kubernetes, "1.36");
    assert!(
        matches!(&states[0], ReflectorState::StreamingListStarted { resource_version, .. } if resource_version.is_empty()),
        "{states:?}"
    );
    assert!(
        matches!(
            &states[1],
            ReflectorState::Answered {
                answer: ServerAnswer::WatchSynthetic { .. }
            }
        ),
        "{states:?}"
    );
    assert!(
        matches!(&states[2], ReflectorState::InitialEventsEnd { .. }),
        "{states:?}"
    );
}

#[tokio::test]
async fn malformed_messages_get_an_error_frame_and_the_stream_goes_on() {
    let bridge = Bridge::start(&["--demo", "--demo-rate", "20"]).await;
    let mut viewer = Viewer::connect(&bridge.ws_url()).await;
    viewer.send_text("{not json").await;
    let message = viewer
        .until(WAIT, |f| match &f.body {
            FrameBody::Error(e) => Some(e.message.clone()),
            _ => None,
        })
        .await;
    assert!(message.contains("not a valid message"), "{message}");
    viewer
        .until(WAIT, |f| {
            matches!(f.body, FrameBody::Event(_)).then_some(())
        })
        .await;
}
