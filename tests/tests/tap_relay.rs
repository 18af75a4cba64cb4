//! `/tap` on the real binary, with real WebSocket clients on both sides: a
//! tap's frames reach every viewer in order as `tap` frames, its leaving is
//! told, a viewer who joins later finds them in its snapshot, and the bridge refuses what it should with a reason: taps not
//! enabled, no token, a foreign page, no hello, another wire version, a
//! frame that is not a tap frame, binary, oversized, and the rate (dropped
//! and counted, the connection kept).

mod fanout_support;

use fanout_support::{Client, metric, wait_for_metric};
use std::time::{Duration, Instant};
use watchlife_protocol::FrameBody;
use watchlife_protocol::tap::{
    Hello, Stats, TAP_PROTOCOL_VERSION, TapFrame, TapObjectRef, TapRelay, WatcherEventKind,
    WatcherFrame,
};
use watchlife_tests::bridge::Bridge;

const DEMO: [&str; 3] = ["--demo", "--demo-idle", "--accept-taps"];

fn hello(version: u32, controller: &str) -> String {
    serde_json::to_string(&TapFrame::Hello(Hello {
        version,
        controller: controller.into(),
        tap_version: "0.1.0".into(),
        kube_runtime: "5.x".into(),
        started_at_us: 1,
        unobserved: vec!["scheduler".into(), "runner".into()],
    }))
    .unwrap()
}

fn watcher(seq: u64, name: &str, rv: &str) -> String {
    serde_json::to_string(&TapFrame::Watcher(WatcherFrame {
        seq,
        at_us: 1_000 + seq,
        resource: "deployments.apps".into(),
        event: WatcherEventKind::Apply,
        object: Some(TapObjectRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("default".into()),
            name: name.into(),
        }),
        resource_version: Some(rv.into()),
        applied_to_store: Some(true),
    }))
    .unwrap()
}

fn tap_url(bridge: &Bridge) -> String {
    format!("ws://{}/tap", bridge.addr)
}

/// The next `tap` frame a viewer gets, skipping the bridge's own.
async fn next_relay(viewer: &mut Client) -> (u64, TapRelay) {
    loop {
        let (frame, _) = viewer.frame().await;
        if let FrameBody::Tap(relay) = frame.body {
            return (frame.seq, relay);
        }
    }
}

#[tokio::test]
async fn a_taps_frames_reach_every_viewer_in_order_and_its_leaving_is_told() {
    let bridge = Bridge::start(&DEMO).await;
    let mut first = Client::connect(&bridge.ws_url()).await;
    let mut second = Client::connect(&bridge.ws_url()).await;
    first.greeting().await;
    second.greeting().await;

    let mut tap = Client::connect(&tap_url(&bridge)).await;
    tap.send_text(&hello(TAP_PROTOCOL_VERSION, "  web-sync "))
        .await;
    tap.send_text(&watcher(1, "web", "812")).await;
    tap.send_text(&watcher(2, "api", "813")).await;
    let stats = TapFrame::Stats(Stats {
        seq: 5,
        at_us: 2_000,
        recorded: 5,
        dropped: 2,
    });
    tap.send_text(&serde_json::to_string(&stats).unwrap()).await;
    tap.close().await;

    for viewer in [&mut first, &mut second] {
        let mut seqs = Vec::new();
        let mut said = Vec::new();
        for _ in 0..3 {
            let (seq, relay) = next_relay(viewer).await;
            assert_eq!(relay.tap, 1);
            assert_eq!(relay.controller, "web-sync", "the name is trimmed");
            assert!(relay.received > 0, "stamped on the bridge's clock");
            seqs.push(seq);
            said.push(relay.frame.expect("a frame").seq());
        }
        assert_eq!(said, [1, 2, 5], "the tap's own numbers, gap and all");
        assert!(seqs.windows(2).all(|w| w[1] > w[0]), "{seqs:?}");
        let (_, left) = next_relay(viewer).await;
        assert!(left.frame.is_none());
        assert_eq!(left.left.as_deref(), Some("the tap closed its connection"));
    }
    let relayed = r#"watchlife_tap_frames_total{outcome="relayed"}"#;
    assert_eq!(metric(bridge.addr, relayed).await, Some(3.0));
    wait_for_metric(bridge.addr, "watchlife_taps", |n| n == 0.0).await;

    // A viewer who joins later finds the lane in its snapshot.
    let mut late = Client::connect(&bridge.ws_url()).await;
    late.frame().await;
    let (snapshot, _) = late.frame().await;
    let FrameBody::Snapshot(snapshot) = snapshot.body else {
        panic!("a snapshot after hello: {snapshot:?}")
    };
    let kept: Vec<Option<u64>> = snapshot
        .taps
        .iter()
        .map(|r| r.frame.as_ref().map(TapFrame::seq))
        .collect();
    assert_eq!(
        kept,
        [Some(1), Some(2), Some(5), None],
        "the frames, then the leaving"
    );

    // A tap that comes back is a new lane number with the same name.
    let mut again = Client::connect(&tap_url(&bridge)).await;
    again
        .send_text(&hello(TAP_PROTOCOL_VERSION, "web-sync"))
        .await;
    again.send_text(&watcher(6, "web", "820")).await;
    let (_, relay) = next_relay(&mut first).await;
    assert_eq!((relay.tap, relay.controller.as_str()), (2, "web-sync"));
}

#[tokio::test]
async fn taps_are_refused_at_the_door_with_a_reason() {
    let off = Bridge::start(&["--demo", "--demo-idle"]).await;
    let refused = Client::try_connect(&tap_url(&off), &[])
        .await
        .err()
        .unwrap();
    assert_eq!(refused.status, 404);
    assert!(refused.body.contains("--accept-taps"), "{}", refused.body);

    let guarded = Bridge::start(&[&DEMO[..], &["--token", "s3cret"]].concat()).await;
    let url = tap_url(&guarded);
    let no_token = Client::try_connect(&url, &[]).await.err().unwrap();
    assert_eq!(no_token.status, 401);
    let foreign = Client::try_connect(
        &format!("{url}?token=s3cret"),
        &[("Origin", "https://evil.example")],
    )
    .await
    .err()
    .unwrap();
    assert_eq!(foreign.status, 403);
    let bearer = [("Authorization", "Bearer s3cret")];
    assert!(Client::try_connect(&url, &bearer).await.is_ok());

    // At most MAX_TAPS at once.
    let open = Bridge::start(&DEMO).await;
    let mut taps = Vec::new();
    for _ in 0..16 {
        let mut tap = Client::connect(&tap_url(&open)).await;
        tap.send_text(&hello(TAP_PROTOCOL_VERSION, "many")).await;
        taps.push(tap);
    }
    wait_for_metric(open.addr, "watchlife_taps", |n| n == 16.0).await;
    let over = Client::try_connect(&tap_url(&open), &[])
        .await
        .err()
        .unwrap();
    assert_eq!(over.status, 503);
    assert!(over.body.contains("maximum of 16 taps"), "{}", over.body);
}

#[tokio::test]
async fn a_tap_that_breaks_the_wire_is_closed_with_the_reason_and_viewers_are_told() {
    let bridge = Bridge::start(&DEMO).await;
    let mut viewer = Client::connect(&bridge.ws_url()).await;
    viewer.greeting().await;
    let url = tap_url(&bridge);

    let mut no_hello = Client::connect(&url).await;
    no_hello.send_text(&watcher(1, "web", "1")).await;
    let (code, reason) = no_hello.until_closed().await.expect("a close frame");
    assert_eq!(
        (code, reason.as_str()),
        (1008, "a tap's first frame is its hello")
    );

    let mut newer = Client::connect(&url).await;
    newer
        .send_text(&hello(TAP_PROTOCOL_VERSION + 1, "future"))
        .await;
    let (code, reason) = newer.until_closed().await.expect("a close frame");
    assert_eq!(code, 1002);
    assert!(reason.contains("not known here"), "{reason}");

    let mut garbled = Client::connect(&url).await;
    garbled
        .send_text(&hello(TAP_PROTOCOL_VERSION, "garbled"))
        .await;
    garbled.send_text(r#"{"type":"watcher","seq":"#).await;
    let (code, reason) = garbled.until_closed().await.expect("a close frame");
    assert_eq!(code, 1007);
    assert!(reason.starts_with("not a tap frame"), "{reason}");
    let (_, left) = next_relay(&mut viewer).await;
    assert_eq!(left.controller, "garbled");
    assert!(
        left.left
            .unwrap()
            .starts_with("closed by watchlife: not a tap frame"),
        "viewers are told why the lane ended"
    );

    let mut oversized = Client::connect(&url).await;
    oversized
        .send_text(&hello(TAP_PROTOCOL_VERSION, "big"))
        .await;
    let huge = watcher(1, &"x".repeat(100 * 1024), "1");
    let _ = oversized.feed_text(&huge).await;
    let _ = oversized.flush().await;
    if let Some((code, _)) = oversized.until_closed().await {
        assert_eq!(code, 1009, "too big");
    }
    let (_, left) = next_relay(&mut viewer).await;
    assert_eq!(left.controller, "big");
    assert!(left.left.is_some());

    let refused = r#"watchlife_tap_frames_total{outcome="refused"}"#;
    assert_eq!(metric(bridge.addr, refused).await, Some(3.0));
    // Nothing a tap said broke the viewers' stream, nor the bridge.
    Client::connect(&bridge.ws_url()).await.greeting().await;
}

#[tokio::test]
async fn frames_over_the_rate_are_dropped_and_counted_and_the_tap_stays() {
    let bridge = Bridge::start(&DEMO).await;
    let mut tap = Client::connect(&tap_url(&bridge)).await;
    tap.send_text(&hello(TAP_PROTOCOL_VERSION, "busy")).await;
    let sent = 12_000u64;
    for seq in 1..=sent {
        assert!(tap.feed_text(&watcher(seq, "web", "1")).await);
    }
    assert!(tap.flush().await);
    let relayed = r#"watchlife_tap_frames_total{outcome="relayed"}"#;
    let over = r#"watchlife_tap_frames_total{outcome="over_rate"}"#;
    let deadline = Instant::now() + Duration::from_secs(60);
    let (total, dropped) = loop {
        let total = metric(bridge.addr, relayed).await.unwrap_or(0.0);
        let dropped = metric(bridge.addr, over).await.unwrap_or(0.0);
        if total + dropped >= sent as f64 {
            break (total, dropped);
        }
        assert!(
            Instant::now() < deadline,
            "{total} relayed, {dropped} dropped of {sent}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(dropped > 0.0, "12,000 frames at once are over the rate");
    assert!(
        total >= 4_096.0,
        "a burst of the tap's whole buffer goes through"
    );

    // The connection stays: a second later the tap is heard again.
    tokio::time::sleep(Duration::from_secs(1)).await;
    tap.send_text(&watcher(sent + 1, "web", "2")).await;
    wait_for_metric(bridge.addr, relayed, |r| r > total).await;
    assert_eq!(metric(bridge.addr, "watchlife_taps").await, Some(1.0));
}
