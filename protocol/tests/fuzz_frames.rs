//! What a bridge, a recording or a page sends the protocol's readers,
//! fuzzed: frames (protocol 2 and 1), batches, and recordings (truncated,
//! with huge lines, of other versions). Every input ends in a value or an
//! error, never a panic; what the protocol writes reads back the same.
//!
//! Cases per property: `WATCHLIFE_FUZZ_CASES`, else `PROPTEST_CASES`, else
//! each property's own number (`make fuzz CASES=100000` sets the first).

use proptest::prelude::*;
use watchlife_fuzzkit::{config, mutated_text};
use watchlife_protocol::connection::{plan_batches, split_batch};
use watchlife_protocol::recording::{frame_line, header_line};
use watchlife_protocol::v1::frame_from_v1;
use watchlife_protocol::{
    EventType, FrameBody, Heartbeat, ObjectJson, ObjectRef, RecordingHeader, ServerFrame, Snapshot,
    SnapshotObject, Source, StageTimes, WatchEvent, parse_recording,
};

fn name() -> impl Strategy<Value = String> {
    "[a-z0-9.\\-\"\\\\é/ ]{0,12}"
}

fn event() -> impl Strategy<Value = ServerFrame> {
    (
        any::<u64>(),
        name(),
        proptest::option::of(name()),
        any::<u32>(),
    )
        .prop_map(|(seq, n, ns, rv)| ServerFrame {
            seq,
            body: FrameBody::Event(WatchEvent {
                event_type: EventType::Modified,
                target: ObjectRef {
                    resource: "pods".into(),
                    kind: "Pod".into(),
                    namespace: ns,
                    name: n.clone(),
                },
                resource_version: rv.to_string(),
                object: ObjectJson::from_value(&serde_json::json!({"metadata": {"name": n}})),
                stages: StageTimes::new(),
                initial: false,
                coalesced: false,
                handled: Default::default(),
                patch: None,
                server: None,
            }),
        })
}

fn snapshot() -> impl Strategy<Value = ServerFrame> {
    proptest::collection::vec((name(), any::<bool>(), any::<bool>()), 0..6).prop_map(|objects| {
        ServerFrame {
            seq: 3,
            body: FrameBody::Snapshot(Snapshot {
                objects: objects
                    .into_iter()
                    .map(|(n, pod, body)| SnapshotObject {
                        // A body is an object (a JSON `null` would read as none).
                        object: body.then(|| {
                            ObjectJson::from_value(&serde_json::json!({"metadata": {"name": n}}))
                        }),
                        target: ObjectRef {
                            resource: if pod { "pods" } else { "configmaps" }.into(),
                            kind: if pod { "Pod" } else { "ConfigMap" }.into(),
                            namespace: pod.then(|| "default".to_string()),
                            name: n,
                        },
                        resource_version: "1".into(),
                        summary: Default::default(),
                    })
                    .collect(),
                reflectors: vec![],
                listed: vec![],
                taps: vec![],
            }),
        }
    })
}

fn frame() -> impl Strategy<Value = ServerFrame> {
    prop_oneof![
        event(),
        snapshot(),
        any::<u64>().prop_map(|at| ServerFrame {
            seq: at,
            body: FrameBody::Heartbeat(Heartbeat {
                at,
                watches_open: None,
            }),
        }),
    ]
}

fn header(format: u32, protocol: u32) -> String {
    header_line(&RecordingHeader {
        watchlife_recording: format,
        protocol,
        source: Source::InPage,
        resources: vec!["pods".into()],
        started_at: 1,
        title: String::new(),
    })
}

proptest! {
    #![proptest_config(config(3000))]

    /// Any text read as a frame is a frame or an error.
    #[test]
    fn any_text_is_a_frame_or_an_error(text in "\\PC{0,200}") {
        let _ = serde_json::from_str::<ServerFrame>(&text);
        let _ = frame_from_v1(&text);
    }

    /// A frame as written reads back the same; damaged, it reads or fails.
    #[test]
    fn frames_round_trip_and_damage_fails_cleanly(
        (f, damaged) in frame().prop_flat_map(|f| {
            let text = serde_json::to_string(&f).unwrap();
            (Just(f), mutated_text(text))
        })
    ) {
        let text = serde_json::to_string(&f).unwrap();
        prop_assert_eq!(serde_json::from_str::<ServerFrame>(&text).unwrap(), f);
        let _ = serde_json::from_str::<ServerFrame>(&damaged);
        let _ = frame_from_v1(&damaged);
    }

    /// Batches keep every frame, in order, within the limit.
    #[test]
    fn batches_keep_every_frame_in_order(
        frames in proptest::collection::vec(frame(), 0..20),
        max in 1usize..4096,
    ) {
        let texts: Vec<String> = frames.iter().map(|f| serde_json::to_string(f).unwrap()).collect();
        let lengths: Vec<usize> = texts.iter().map(String::len).collect();
        let plan = plan_batches(&lengths, max);
        let mut read = Vec::new();
        for range in plan {
            let message = texts[range.clone()].join("\n");
            prop_assert!(range.len() == 1 || message.len() <= max);
            read.extend(split_batch(&message).map(|t| serde_json::from_str::<ServerFrame>(t).unwrap()));
        }
        prop_assert_eq!(read, frames);
    }
}

proptest! {
    #![proptest_config(config(1000))]

    /// A recording, cut anywhere, damaged, of any format and protocol, with
    /// a huge line, reads or fails at line one; what reads keeps its order.
    #[test]
    fn recordings_read_whatever_is_done_to_them(
        frames in proptest::collection::vec(frame(), 0..8),
        format in 0u32..4,
        protocol in 0u32..4,
        cut in any::<prop::sample::Index>(),
        huge in any::<bool>(),
        garbage in "\\PC{0,40}",
    ) {
        let mut text = header(format, protocol) + "\n";
        for (t, f) in frames.iter().enumerate() {
            text.push_str(&frame_line(t as u64, &serde_json::to_string(f).unwrap()));
            text.push('\n');
        }
        if huge {
            text.push_str(&format!("{{\"t_ms\":1,\"seq\":1,\"type\":\"heartbeat\",\"data\":{{\"pad\":\"{}\"}}}}\n", "x".repeat(1 << 20)));
        }
        text.push_str(&garbage);
        let whole = parse_recording(&text).unwrap();
        if protocol >= 2 {
            prop_assert!(whole.frames.len() >= frames.len(), "{:?}", whole.problems);
        }
        for w in whole.frames.windows(2) {
            prop_assert!(w[0].t_ms <= w[1].t_ms);
        }
        let at = cut.index(text.len() + 1);
        let cut_text = &text[..text.floor_char_boundary(at)];
        let _ = parse_recording(cut_text);
    }
}
