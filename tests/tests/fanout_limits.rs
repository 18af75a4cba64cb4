//! The bridge's limits, against the real binary: the connection cap refuses
//! cleanly, bad messages are answered (or, past a limit, closed with a
//! reason) while everyone else is served, a viewer that answers no ping is
//! dropped, and shutdown closes every socket with a reason.

mod fanout_support;

use fanout_support::{Client, Process, Read, WAIT, free_addr, metric, wait_for_metric};
use std::time::Duration;
use watchlife_protocol::{ErrorCode, FrameBody};
use watchlife_tests::bridge::Bridge;

/// Close codes (RFC 6455).
const GOING_AWAY: u16 = 1001;
const POLICY: u16 = 1008;
const TOO_BIG: u16 = 1009;

/// The next `error` frame's code and message, skipping the stream.
async fn next_error(client: &mut Client) -> (ErrorCode, String) {
    loop {
        let (frame, _) = client.frame().await;
        if let FrameBody::Error(e) = frame.body {
            return (e.code, e.message);
        }
    }
}

#[tokio::test]
async fn the_connection_cap_refuses_the_next_viewer_with_503_and_a_reason() {
    let bridge = Bridge::start(&["--demo", "--demo-idle", "--max-viewers", "3"]).await;
    let mut admitted = Vec::new();
    for _ in 0..3 {
        let mut c = Client::connect(&bridge.ws_url()).await;
        c.greeting().await;
        admitted.push(c);
    }
    let refused = Client::try_connect(&bridge.ws_url(), &[])
        .await
        .err()
        .expect("a fourth viewer is refused");
    assert_eq!(refused.status, 503);
    assert!(
        refused.body.contains("maximum of 3 viewers"),
        "{}",
        refused.body
    );
    assert_eq!(
        metric(
            bridge.addr,
            "watchlife_viewers_refused_total{reason=\"capacity\"}"
        )
        .await,
        Some(1.0)
    );
    // The admitted ones are still served.
    for c in &mut admitted {
        c.send_text(r#"{"type":"subscribe"}"#).await;
    }
    // One leaves; its place is free again.
    admitted.pop().unwrap().close().await;
    wait_for_metric(bridge.addr, "watchlife_viewers", |v| v == 2.0).await;
    let mut again = Client::connect(&bridge.ws_url()).await;
    again.greeting().await;
}

#[tokio::test]
async fn malformed_oversized_and_flooding_viewers_are_answered_and_the_others_served() {
    let bridge = Bridge::start(&["--demo", "--demo-rate", "50"]).await;
    let mut bystander = Client::connect(&bridge.ws_url()).await;
    let (_, mut cursor) = bystander.greeting().await;

    // Malformed: an error frame, and the connection goes on.
    let mut sloppy = Client::connect(&bridge.ws_url()).await;
    sloppy.greeting().await;
    sloppy.send_text("{not json").await;
    assert_eq!(next_error(&mut sloppy).await.0, ErrorCode::Malformed);
    sloppy
        .send_text(r#"{"type":"subscribe","filter":{"resources":["Pods</script>"]}}"#)
        .await;
    assert_eq!(next_error(&mut sloppy).await.0, ErrorCode::Malformed);
    // Over the message limit but under the WebSocket one: an error frame.
    let big = format!(
        r#"{{"type":"subscribe","pad":"{}"}}"#,
        "x".repeat(20 * 1024)
    );
    sloppy.send_text(&big).await;
    let (code, message) = next_error(&mut sloppy).await;
    assert_eq!(code, ErrorCode::TooLarge, "{message}");
    // Still served.
    sloppy.send_text(r#"{"type":"subscribe"}"#).await;
    // Over the WebSocket limit: closed, with a reason.
    let huge = format!(
        r#"{{"type":"subscribe","pad":"{}"}}"#,
        "x".repeat(200 * 1024)
    );
    sloppy.send_text(&huge).await;
    let (close, reason) = sloppy.until_closed().await.expect("a close frame");
    assert_eq!(close, TOO_BIG, "{reason}");
    assert!(reason.contains("bytes"), "{reason}");

    // A flood: told it is rate limited, then closed with a reason.
    let mut flooder = Client::connect(&bridge.ws_url()).await;
    flooder.greeting().await;
    for _ in 0..500 {
        if !flooder.feed_text(r#"{"type":"subscribe"}"#).await {
            break;
        }
    }
    flooder.flush().await;
    let mut told = false;
    let closed = loop {
        match flooder.read(WAIT).await {
            Read::Frame(f, _) => {
                if let FrameBody::Error(e) = f.body {
                    assert_eq!(e.code, ErrorCode::RateLimited, "{}", e.message);
                    told = true;
                }
            }
            Read::Closed(frame) => break frame.expect("a close frame with a reason"),
        }
    };
    assert!(told, "a rate_limited error frame before the close");
    assert_eq!(u16::from(closed.code), POLICY);
    assert!(
        closed.reason.contains("too many messages"),
        "{}",
        closed.reason
    );

    // Meanwhile the bystander got every frame, in order.
    let until = cursor + 20;
    while cursor < until {
        let (frame, _) = bystander.frame().await;
        assert!(!matches!(frame.body, FrameBody::Resync(_)));
        if frame.body.is_stream() {
            assert_eq!(frame.seq, cursor + 1);
            cursor = frame.seq;
        }
    }
    assert_eq!(
        metric(
            bridge.addr,
            "watchlife_viewers_closed_total{reason=\"flood\"}"
        )
        .await,
        Some(1.0)
    );
    assert_eq!(
        metric(
            bridge.addr,
            "watchlife_viewers_closed_total{reason=\"too_large\"}"
        )
        .await,
        Some(1.0)
    );
}

#[tokio::test]
async fn a_viewer_that_answers_no_ping_is_dropped() {
    let bridge = Bridge::start(&["--demo", "--demo-idle"]).await;
    let mut silent = Client::connect(&bridge.ws_url()).await;
    silent.greeting().await;
    // It reads nothing from now on, so it answers no ping; the bridge calls
    // it gone after three heartbeats without an answer.
    wait_for_metric(
        bridge.addr,
        "watchlife_viewers_closed_total{reason=\"unresponsive\"}",
        |v| v == 1.0,
    )
    .await;
    wait_for_metric(bridge.addr, "watchlife_viewers", |v| v == 0.0).await;
    // Reading again, it finds its connection ended: with the close frame and
    // its reason when its own late pongs did not reset the socket first.
    if let Some((code, reason)) = silent.until_closed().await {
        assert_eq!(code, GOING_AWAY);
        assert!(reason.contains("no answer"), "{reason}");
    }
}

#[tokio::test]
async fn heartbeats_carry_the_cursor() {
    let bridge = Bridge::start(&["--demo", "--demo-idle"]).await;
    let mut viewer = Client::connect(&bridge.ws_url()).await;
    let (_, cursor) = viewer.greeting().await;
    let heartbeat = loop {
        let (frame, _) = viewer.frame().await;
        if matches!(frame.body, FrameBody::Heartbeat(_)) {
            break frame;
        }
    };
    // An idle demo may still publish (the watch cache report): the
    // heartbeat's seq is the newest frame's, never behind the cursor.
    assert!(heartbeat.seq >= cursor);
}

#[tokio::test]
async fn shutdown_closes_every_socket_with_a_reason() {
    let bridge = Process::start(free_addr(), &["--demo", "--demo-rate", "20"]).await;
    let url = format!("ws://{}/ws", bridge.addr);
    let mut viewers = Vec::new();
    for _ in 0..5 {
        let mut v = Client::connect(&url).await;
        v.greeting().await;
        viewers.push(v);
    }
    bridge.terminate();
    for mut v in viewers {
        let (code, reason) = v
            .until_closed()
            .await
            .expect("a close frame, not a dropped socket");
        assert_eq!(code, GOING_AWAY);
        assert!(reason.contains("shutting down"), "{reason}");
    }
    let mut bridge = bridge;
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        if let Some(status) = bridge.child.try_wait().unwrap() {
            assert!(status.success(), "a clean exit: {status}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the bridge never exited"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
