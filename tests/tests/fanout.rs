//! The fan-out, against the real binary with real WebSocket clients: every
//! viewer gets every frame once and in order, a stalled viewer is resynced
//! without holding up the others, cursors resume exactly, and however many
//! viewers there are, the bridge holds one watch per resource upstream.
//!
//! No test measures time: the machine is shared. They assert on order,
//! counts and `resync`; [`WAIT`] only bounds how long a test may hang.

mod fanout_support;

use fanout_support::{Client, Read, WAIT, free_addr, metric, wait_for_metric};
use futures_util::future::join_all;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use watchlife_protocol::{ClientMessage, DemoAction, ErrorCode, FrameBody};
use watchlife_tests::bridge::Bridge;

/// Frames the bridge keeps for resuming viewers (`hub::WINDOW`).
const WINDOW: u64 = 4096;
/// Frames a viewer may fall behind before it is resynced (`hub::VIEWER_LAG`).
const VIEWER_LAG: u64 = 1024;

/// Just what ordering needs from a frame, without decoding its objects:
/// read from the front of the text when it starts as the bridge writes it
/// (`{"seq":N,"type":"…"`), from the whole JSON otherwise.
struct Head {
    seq: u64,
    kind: String,
}

fn head(text: &str) -> Head {
    let quick = text.strip_prefix("{\"seq\":").and_then(|rest| {
        let digits = rest.find(|c: char| !c.is_ascii_digit())?;
        let seq = rest[..digits].parse().ok()?;
        let kind = rest[digits..].strip_prefix(",\"type\":\"")?;
        let kind = &kind[..kind.find('"')?];
        Some(Head {
            seq,
            kind: kind.to_string(),
        })
    });
    quick.unwrap_or_else(|| {
        let v: serde_json::Value = serde_json::from_str(text).expect("a JSON frame");
        Head {
            seq: v["seq"].as_u64().expect("a seq"),
            kind: v["type"].as_str().expect("a type").to_string(),
        }
    })
}

fn is_stream(kind: &str) -> bool {
    matches!(kind, "event" | "reflector" | "watch_cache")
}

/// A cheap fingerprint of a frame's bytes.
fn fingerprint(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// A viewer that reads on its own task and records every stream frame.
struct Recorder {
    /// (seq, fingerprint) of each stream frame, in arrival order.
    frames: Vec<(u64, u64)>,
    resyncs: usize,
    /// Bytes received while recording, as they came on the wire.
    wire_bytes: usize,
}

/// Reads stream frames from `client` (greeted, at `cursor`) until one with
/// `seq >= until`, asserting they come one after the other with no gap.
async fn record(mut client: Client, cursor: u64, until: u64) -> Recorder {
    let mut rec = Recorder {
        frames: Vec::new(),
        resyncs: 0,
        wire_bytes: 0,
    };
    let mut last = cursor;
    client.wire_bytes = 0;
    while last < until {
        let text = client
            .read_text(WAIT)
            .await
            .unwrap_or_else(|close| panic!("the connection closed: {close:?}"));
        let head = head(&text);
        if head.kind == "resync" {
            rec.resyncs += 1;
        }
        if is_stream(&head.kind) {
            assert_eq!(head.seq, last + 1, "stream frames one after the other");
            last = head.seq;
            rec.frames.push((head.seq, fingerprint(&text)));
        }
    }
    rec.wire_bytes = client.wire_bytes;
    rec
}

/// Connects and reads the greeting; returns the client and the cursor.
async fn greeted(url: &str) -> (Client, u64) {
    let mut client = Client::connect(url).await;
    let mut cursor = None;
    while cursor.is_none() {
        let Ok(text) = client.read_text(WAIT).await else {
            panic!("closed before its greeting");
        };
        let head = head(&text);
        if head.kind == "snapshot" {
            cursor = Some(head.seq);
        }
    }
    (client, cursor.unwrap())
}

/// The query of a viewer that takes its frames compressed, as the page does.
const COMPRESSED: &str = "?batch=true&compress=deflate";

/// Keeps the demo busy: scales the story's Deployment up and down through
/// demo actions, one every [`DRIVE_EVERY`] (within the rate limit), reading
/// all the while so that this viewer never stalls itself, until stopped.
fn drive_load(ws_url: String, stop: Arc<AtomicBool>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut driver = Client::connect(&ws_url).await;
        driver.greeting().await;
        let mut up = true;
        while !stop.load(Ordering::Relaxed) {
            let replicas = if up { 150 } else { 0 };
            up = !up;
            let action = ClientMessage::Action {
                action: DemoAction::Scale {
                    namespace: "default".into(),
                    name: "web".into(),
                    replicas,
                },
            };
            driver
                .send_text(&serde_json::to_string(&action).unwrap())
                .await;
            let next = tokio::time::Instant::now() + DRIVE_EVERY;
            while let Ok(read) = tokio::time::timeout_at(next, driver.read(WAIT)).await {
                match read {
                    Read::Frame(f, _) => {
                        if let FrameBody::Error(e) = f.body {
                            assert_ne!(e.code, ErrorCode::RateLimited, "{}", e.message);
                        }
                    }
                    Read::Closed(c) => panic!("the load driver was closed: {c:?}"),
                }
            }
        }
    })
}

/// Pause between two actions of the load driver.
const DRIVE_EVERY: Duration = Duration::from_millis(250);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_viewers_each_receive_every_frame_once_in_order() {
    // Every other viewer takes its frames compressed, as the page does: all
    // must read the same bytes.
    const VIEWERS: usize = 300;
    const FRAMES: u64 = 200;
    // 100 changes/s: 300 viewers read some 33,000 frames a second in this
    // process. The bridge no longer slows its upstream for slow viewers, so
    // on a machine busy with other work a viewer that falls more than the
    // hub's lag bound (over 9 s at this rate) behind is rightly resynced.
    let bridge = Bridge::start(&["--demo", "--demo-rate", "100"]).await;
    let plain = bridge.ws_url();
    let compressed = format!("{plain}{COMPRESSED}");
    let mut connected = Vec::new();
    for _ in 0..VIEWERS / 50 {
        let urls = [&plain, &compressed];
        connected.extend(join_all((0..50).map(|i| greeted(urls[i % 2]))).await);
    }
    wait_for_metric(bridge.addr, "watchlife_viewers", |v| v == VIEWERS as f64).await;
    let newest = connected.iter().map(|(_, c)| *c).max().unwrap();
    let until = newest + FRAMES;
    let records: Vec<Recorder> = join_all(
        connected
            .into_iter()
            .map(|(ws, cursor)| tokio::spawn(record(ws, cursor, until))),
    )
    .await
    .into_iter()
    .map(|r| r.expect("a viewer task"))
    .collect();

    // Every viewer saw each frame after the newest join once, with the same
    // bytes, and nobody was resynced.
    let reference: BTreeMap<u64, u64> = records[0]
        .frames
        .iter()
        .copied()
        .filter(|(seq, _)| *seq > newest && *seq <= until)
        .collect();
    assert_eq!(reference.len() as u64, FRAMES);
    for (i, rec) in records.iter().enumerate() {
        assert_eq!(rec.resyncs, 0, "viewer {i} was resynced");
        let seen: BTreeMap<u64, u64> = rec
            .frames
            .iter()
            .copied()
            .filter(|(seq, _)| *seq > newest && *seq <= until)
            .collect();
        assert_eq!(seen, reference, "viewer {i} saw other frames");
    }
    let sent = metric(bridge.addr, "watchlife_frames_sent_total")
        .await
        .unwrap();
    assert!(
        sent >= (VIEWERS as u64 * FRAMES) as f64,
        "frames sent: {sent}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_viewer_is_resynced_and_never_holds_up_the_others() {
    stalled_viewer_is_resynced("").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_compressed_viewer_is_resynced_and_reads_on() {
    stalled_viewer_is_resynced(COMPRESSED).await;
}

/// A viewer connected with `query` stops reading: the others go on, and it
/// is resynced, then reads the stream on from the snapshot.
async fn stalled_viewer_is_resynced(query: &str) {
    let bridge = Bridge::start(&["--demo", "--demo-rate", "10000"]).await;
    let stop = Arc::new(AtomicBool::new(false));
    let load = drive_load(bridge.ws_url(), stop.clone());

    let mut stalled = Client::connect_small_buffer(bridge.addr, &format!("/ws{query}")).await;
    let (_, stalled_at) = stalled.greeting().await;
    // It now stops reading. The others must go on, frame after frame, well
    // past the point where the stalled one's queue overflows (its socket
    // buffers hold a few hundred frames more).
    let stalled_since = std::time::Instant::now();
    let until = stalled_at + 2 * VIEWER_LAG;
    let url = bridge.ws_url();
    let healthy: Vec<_> = join_all((0..3).map(|_| greeted(&url)))
        .await
        .into_iter()
        .map(|(ws, cursor)| tokio::spawn(record(ws, cursor, until)))
        .collect();
    for (i, h) in join_all(healthy).await.into_iter().enumerate() {
        let rec = h.expect("a healthy viewer");
        assert_eq!(rec.resyncs, 0, "healthy viewer {i} was resynced");
        assert_eq!(rec.frames.last().map(|f| f.0), Some(until));
    }
    // Not a measure of anything: the bridge drops a viewer whose writes
    // stall for 15 s, so a much longer stall here would end this test early.
    eprintln!("the viewer stalled for {:?}", stalled_since.elapsed());

    // Reading again, the stalled viewer gets what was still buffered, in
    // order, then `resync` and a snapshot, then the stream from there.
    let mut last = stalled_at;
    let resumed_at = loop {
        let (frame, _) = stalled.frame().await;
        match frame.body {
            FrameBody::Resync(r) => {
                assert!(r.reason.contains("behind"), "{}", r.reason);
                break frame.seq;
            }
            body if body.is_stream() => {
                assert_eq!(frame.seq, last + 1, "no gap before the resync");
                last = frame.seq;
            }
            _ => {}
        }
    };
    assert!(
        resumed_at > last + VIEWER_LAG,
        "it missed more than the lag allows"
    );
    let (snapshot, _) = stalled.frame().await;
    assert!(
        matches!(snapshot.body, FrameBody::Snapshot(_)),
        "{snapshot:?}"
    );
    assert_eq!(snapshot.seq, resumed_at);
    // And on from there (a compressed viewer: in a new stream), with no
    // silent gap; a small buffer at this rate may fall behind again, and
    // then it is told so again.
    let (mut last, mut read) = (resumed_at, 0);
    while read < 100 {
        let (frame, _) = stalled.frame().await;
        match frame.body {
            FrameBody::Snapshot(_) => last = frame.seq,
            body if body.is_stream() => {
                assert_eq!(frame.seq, last + 1, "no gap after the snapshot");
                (last, read) = (frame.seq, read + 1);
            }
            _ => {}
        }
    }
    stop.store(true, Ordering::Relaxed);
    load.await.expect("the load driver");
    assert!(
        metric(bridge.addr, "watchlife_resyncs_total{cause=\"lagged\"}")
            .await
            .unwrap()
            >= 1.0
    );
}

#[tokio::test]
async fn a_cursor_inside_the_window_resumes_with_exactly_the_missed_frames() {
    cursor_resumes_exactly("").await;
}

#[tokio::test]
async fn a_compressed_viewer_resumes_from_its_cursor_with_exactly_the_missed_frames() {
    cursor_resumes_exactly(COMPRESSED).await;
}

/// A viewer connected with `query` leaves and comes back with its cursor:
/// it gets the frames it missed, the same bytes as a viewer that stayed.
async fn cursor_resumes_exactly(query: &str) {
    let bridge = Bridge::start(&["--demo", "--demo-rate", "100"]).await;
    let (reference_ws, start) = greeted(&bridge.ws_url()).await;
    let reference = tokio::spawn(record(reference_ws, start, start + 150));

    let mut leaver = Client::connect(&format!("{}{query}", bridge.ws_url())).await;
    let (stream, mut cursor) = leaver.greeting().await;
    // Read a few stream frames, then leave.
    while cursor < start + 20 {
        let (f, _) = leaver.frame().await;
        if f.body.is_stream() {
            cursor = f.seq;
        }
    }
    leaver.close().await;
    // Come back later, with the cursor.
    wait_for_metric(bridge.addr, "watchlife_frames_published_total", |v| {
        v >= (cursor + 50) as f64
    })
    .await;
    let url = format!(
        "{}?stream={stream}&since={cursor}{}",
        bridge.ws_url(),
        query.replace('?', "&")
    );
    let mut back = Client::connect(&url).await;
    let (hello, _) = back.frame().await;
    assert!(matches!(hello.body, FrameBody::Hello(_)));
    let mut got = Vec::new();
    while got.last().map_or(cursor, |(s, _)| *s) < start + 150 {
        let (f, text) = back.frame().await;
        assert!(
            !matches!(f.body, FrameBody::Resync(_) | FrameBody::Snapshot(_)),
            "a cursor in the window resumes without a snapshot"
        );
        if f.body.is_stream() {
            got.push((f.seq, fingerprint(&text)));
        }
    }
    let expected: Vec<_> = reference
        .await
        .unwrap()
        .frames
        .into_iter()
        .filter(|(seq, _)| *seq > cursor)
        .collect();
    assert_eq!(
        got.first().map(|f| f.0),
        Some(cursor + 1),
        "starts right after the cursor"
    );
    assert_eq!(
        &got[..expected.len()],
        &expected[..],
        "exactly the frames it missed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compressed_viewer_reads_the_same_bytes_from_a_fraction_of_the_wire() {
    // Long enough for several of the hub's segments: a viewer that joins
    // mid-segment takes that segment's frames uncompressed.
    const FRAMES: u64 = 1_500;
    let bridge = Bridge::start(&["--demo", "--demo-rate", "300"]).await;
    let (plain, plain_at) = greeted(&bridge.ws_url()).await;
    let (compressed, compressed_at) = greeted(&format!("{}{COMPRESSED}", bridge.ws_url())).await;
    let from = plain_at.max(compressed_at);
    let until = from + FRAMES;
    let plain = tokio::spawn(record(plain, plain_at, until));
    let compressed = tokio::spawn(record(compressed, compressed_at, until));
    let (plain, compressed) = (plain.await.unwrap(), compressed.await.unwrap());
    let after = |r: &Recorder| -> Vec<(u64, u64)> {
        r.frames
            .iter()
            .copied()
            .filter(|(seq, _)| *seq > from)
            .collect()
    };
    assert_eq!(
        after(&compressed),
        after(&plain),
        "the same frames, byte for byte"
    );
    assert_eq!(after(&plain).len() as u64, FRAMES);
    assert!(
        compressed.wire_bytes * 2 < plain.wire_bytes,
        "compressed {} bytes, plain {}",
        compressed.wire_bytes,
        plain.wire_bytes
    );
    eprintln!(
        "on the wire: compressed {} bytes, plain {} ({:.1} %)",
        compressed.wire_bytes,
        plain.wire_bytes,
        100.0 * compressed.wire_bytes as f64 / plain.wire_bytes as f64
    );
}

#[tokio::test]
async fn a_viewer_that_asks_for_batches_gets_the_same_frames_several_to_a_message() {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    let bridge = Bridge::start(&["--demo", "--demo-rate", "100"]).await;
    let mut first = Client::connect(&bridge.ws_url()).await;
    let (stream, _) = first.greeting().await;
    first.close().await;
    let (reference_ws, start) = greeted(&bridge.ws_url()).await;
    let reference = tokio::spawn(record(reference_ws, start, start + 150));

    // Resume from the reference's cursor once frames have piled up: the
    // missed frames go out together, so they must share messages.
    wait_for_metric(bridge.addr, "watchlife_frames_published_total", |v| {
        v >= (start + 60) as f64
    })
    .await;
    let url = format!(
        "{}?batch=true&stream={stream}&since={start}",
        bridge.ws_url()
    );
    let (mut batched, _) = tokio_tungstenite::connect_async(&url)
        .await
        .expect("the bridge accepts the viewer");
    let mut got = Vec::new();
    let mut messages = Vec::new();
    while got.last().map_or(start, |(s, _)| *s) < start + 150 {
        let message = tokio::time::timeout(WAIT, batched.next())
            .await
            .expect("frames keep coming")
            .expect("the connection stays open")
            .expect("no WebSocket error");
        let Message::Text(text) = message else {
            continue;
        };
        let lines: Vec<&str> = text.split('\n').collect();
        if messages.is_empty() {
            assert_eq!(head(lines[0]).kind, "hello", "hello first");
        }
        messages.push(lines.len());
        for line in lines {
            let head = head(line);
            assert!(
                !matches!(head.kind.as_str(), "resync" | "snapshot"),
                "a cursor in the window resumes without a snapshot"
            );
            if is_stream(&head.kind) {
                got.push((head.seq, fingerprint(line)));
            }
        }
    }
    assert!(
        messages[0] > 10,
        "hello and the frames missed since the cursor share the first message: {messages:?}"
    );
    let expected: Vec<_> = reference.await.unwrap().frames;
    assert_eq!(
        &got[..expected.len()],
        &expected[..],
        "the same frames, in the same order, as a viewer without batches"
    );
    let frames = metric(bridge.addr, "watchlife_frames_sent_total")
        .await
        .unwrap();
    let sent = metric(bridge.addr, "watchlife_messages_sent_total")
        .await
        .unwrap();
    assert!(sent < frames, "{sent} messages for {frames} frames");
}

#[tokio::test]
async fn a_cursor_out_of_the_window_or_from_another_run_gets_resync_and_a_snapshot() {
    let bridge = Bridge::start(&["--demo", "--demo-rate", "10000"]).await;
    let mut first = Client::connect(&bridge.ws_url()).await;
    let (stream, _) = first.greeting().await;
    first.close().await;

    // A cursor from another run of the bridge.
    let url = format!("{}?stream=another-run&since=3", bridge.ws_url());
    let mut other = Client::connect(&url).await;
    assert!(matches!(other.frame().await.0.body, FrameBody::Hello(_)));
    assert!(matches!(other.frame().await.0.body, FrameBody::Resync(_)));
    assert!(matches!(other.frame().await.0.body, FrameBody::Snapshot(_)));
    other.close().await;

    // A cursor the window has moved past.
    let stop = Arc::new(AtomicBool::new(false));
    let load = drive_load(bridge.ws_url(), stop.clone());
    wait_for_metric(bridge.addr, "watchlife_frames_published_total", |v| {
        v > (WINDOW + 100) as f64
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    load.await.unwrap();
    let url = format!("{}?stream={stream}&since=1", bridge.ws_url());
    let mut late = Client::connect(&url).await;
    let (hello, _) = late.frame().await;
    assert!(matches!(hello.body, FrameBody::Hello(_)));
    let (resync, _) = late.frame().await;
    let FrameBody::Resync(r) = resync.body else {
        panic!("resync expected, got {resync:?}")
    };
    assert!(r.reason.contains("window"), "{}", r.reason);
    let (snapshot, _) = late.frame().await;
    assert!(matches!(snapshot.body, FrameBody::Snapshot(_)));
    assert_eq!(
        snapshot.seq, hello.seq,
        "the snapshot is at the cursor hello gave"
    );
    assert!(
        metric(bridge.addr, "watchlife_resyncs_total{cause=\"cursor\"}")
            .await
            .unwrap()
            >= 2.0
    );
}

/// Samples of the demo API's `/metrics` whose name is `name` and whose
/// labels contain `having`, as (labels, value), sorted by labels (the
/// exposition's order of series is not fixed).
async fn samples(api: std::net::SocketAddr, name: &str, having: &str) -> Vec<(String, f64)> {
    let text = watchlife_tests::http::get(api, "/metrics")
        .await
        .expect("the demo API answers /metrics")
        .text();
    let mut samples: Vec<(String, f64)> = text
        .lines()
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let labels = series.strip_prefix(name)?.strip_prefix('{')?;
            labels
                .contains(having)
                .then(|| (labels.to_string(), value.parse().expect("a number")))
        })
        .collect();
    samples.sort_by(|a, b| a.0.cmp(&b.0));
    samples
}

/// Watches held on the demo API by the bridge's Reflectors (each names its
/// requests `watchlife/<resource>`), by group, kind and name.
async fn http_watches(api: std::net::SocketAddr) -> Vec<(String, f64)> {
    samples(api, "watchlife_demo_watchers", "watcher=\"watchlife/").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_watches_stay_one_per_resource_with_one_and_with_three_hundred_viewers() {
    let api = free_addr();
    let api_flag = api.to_string();
    let bridge = Bridge::start(&["--demo", "--demo-idle", "--demo-api", &api_flag]).await;
    let mut one = Client::connect(&bridge.ws_url()).await;
    let FrameBody::Hello(hello) = one.frame().await.0.body else {
        panic!("hello first")
    };
    let resources = hello.resources.len();
    assert!(
        resources >= 2,
        "the demo watches several resources: {:?}",
        hello.resources
    );
    // One watch per resource, once every Reflector is watching.
    let deadline = std::time::Instant::now() + WAIT;
    let with_one = loop {
        let watches = http_watches(api).await;
        if watches.len() == resources {
            break watches;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "watches upstream: {watches:?} for {:?}",
            hello.resources
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(with_one.iter().all(|(_, n)| *n == 1.0), "{with_one:?}");
    let registered_with_one = samples(api, "apiserver_registered_watchers", "kind=").await;
    assert_eq!(
        metric(bridge.addr, "watchlife_upstream_watches").await,
        Some(resources as f64),
        "the bridge counts the same watches"
    );

    let url = bridge.ws_url();
    let mut viewers = Vec::new();
    for _ in 0..6 {
        viewers.extend(join_all((0..50).map(|_| greeted(&url))).await);
    }
    wait_for_metric(bridge.addr, "watchlife_viewers", |v| v == 301.0).await;
    assert_eq!(
        http_watches(api).await,
        with_one,
        "one watch per resource for 301 viewers"
    );
    assert_eq!(
        samples(api, "apiserver_registered_watchers", "kind=").await,
        registered_with_one
    );
    assert_eq!(
        metric(bridge.addr, "watchlife_upstream_watches").await,
        Some(resources as f64)
    );
    drop(viewers);
}
