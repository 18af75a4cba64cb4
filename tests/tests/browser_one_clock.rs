//! The page's one clock, in headless Chromium: what the page shows (rates,
//! counters, notices, the fan-out, a replay's timeline) follows the
//! animation, not the arrival of frames.
//!
//! - A burst arrives while the page is paused: nothing it shows moves; one
//!   "N events behind · catch up" control says what waits. Resumed, the page
//!   catches up with the animation, never ahead of it; the control shows
//!   everything at once when asked.
//! - The `compaction-relist` replay shows its 410 only once the ERROR's token
//!   is drawn, and ends only once every event has been drawn.
//!
//! Every check compares states seen in the page, frame by frame, never a
//! wall-clock duration.

use serde_json::{Value, json};
use watchlife_protocol::{
    CacheState, ClosedWatcherState, EventType, FrameBody, ReflectorState, ReflectorUpdate,
    ServerFrame, Snapshot, Stage, StageMark, StageTimes, WatchCacheReport, WatchEvent,
};
use watchlife_tests::browser::{Browser, ScriptedBridge, scripted_hello, scripted_pod};
use watchlife_tests::static_files::StaticFiles;

/// A start time for the scripted events (µs), far from zero.
const T0: u64 = 1_795_338_904_000_000;
/// Events in the burst that arrives while paused: more than the animation
/// keeps tokens for, so that some are shown without one.
const BURST: u64 = 40;

/// Every stage read, 100 µs apart, from `start`.
fn stages(start: u64) -> StageTimes {
    Stage::ALL
        .iter()
        .enumerate()
        .map(|(i, s)| (*s, StageMark::at(start + 100 * i as u64)))
        .collect()
}

/// pod `web-{seq}` added at resourceVersion `100 + seq`.
fn added(seq: u64) -> ServerFrame {
    let name = format!("web-{seq}");
    let rv = 100 + seq;
    ServerFrame {
        seq,
        body: FrameBody::Event(WatchEvent {
            event_type: EventType::Added,
            target: scripted_pod(&name),
            resource_version: rv.to_string(),
            object: json!({"kind": "Pod", "metadata": {"name": name, "namespace": "default",
                   "resourceVersion": rv.to_string()}})
            .into(),
            stages: stages(T0 + seq * 1_000),
            initial: false,
            coalesced: false,
            handled: Default::default(),
            patch: None,
            server: None,
        }),
    }
}

fn gone(seq: u64) -> ServerFrame {
    ServerFrame {
        seq,
        body: FrameBody::Reflector(ReflectorUpdate {
            resource: "pods".into(),
            state: ReflectorState::Gone {
                resource_version: "101".into(),
                message: "too old resource version: 101 (140)".into(),
            },
        }),
    }
}

/// A watch cache that closed a slow watcher: what the fan-out panel draws.
fn watch_cache(seq: u64) -> ServerFrame {
    ServerFrame {
        seq,
        body: FrameBody::WatchCache(WatchCacheReport {
            caches: vec![CacheState {
                resource: "pods".into(),
                window_start: 100,
                window_end: 140,
                len: 40,
                capacity: 100,
                watchers: vec![],
                more_watchers: 0,
                closed_slow: 1,
                recently_closed: vec![ClosedWatcherState {
                    id: 4,
                    name: "slow-watcher".into(),
                    revision: 120,
                }],
                incoming: 0,
            }],
        }),
    }
}

fn snapshot() -> ServerFrame {
    ServerFrame {
        seq: 0,
        body: FrameBody::Snapshot(Snapshot::default()),
    }
}

/// What the page shows, read in one go: events counted by the log, the
/// rates on the stages, the notice, whether the fan-out is drawn, and how
/// many events the catch-up control says are behind.
const STATE: &str = "({
    rows: Number(document.querySelector('.event-log').dataset.received),
    rates: [...document.querySelectorAll('.stage-rate')].map(t => t.textContent).join(' | '),
    notice: document.querySelector('#notice').textContent,
    fanout: !!document.querySelector('#fanout'),
    behind: Number(document.querySelector('#catch-up').dataset.behind),
    control: document.querySelector('#catch-up').hidden ? '' : document.querySelector('#catch-up').textContent,
})";

/// Starts recording [`STATE`] at every animation frame into `window.samples`.
const SAMPLE_EVERY_FRAME: &str = "(() => {
    window.samples = [];
    const sample = () => { window.samples.push(STATE); requestAnimationFrame(sample); };
    requestAnimationFrame(sample);
    return true;
})()";

async fn state(browser: &Browser) -> Value {
    browser.eval(STATE).await
}

async fn samples(browser: &Browser) -> Vec<Value> {
    let v = browser.eval("window.samples").await;
    v.as_array().cloned().unwrap_or_default()
}

async fn start_sampling(browser: &Browser) {
    browser
        .eval(&SAMPLE_EVERY_FRAME.replace("STATE", STATE))
        .await;
}

fn n(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("{key} in {v}"))
}

async fn toggle_pause(browser: &Browser, paused: bool) {
    browser.click("#pause").await;
    browser
        .wait_until(
            "the pause button says so",
            &format!("document.querySelector('#pause[aria-pressed={paused}]')"),
        )
        .await;
}

#[tokio::test]
async fn a_paused_page_shows_what_the_animation_left_and_catches_up_with_it() {
    let bridge =
        ScriptedBridge::start(scripted_hello("one-clock", &["pods"]), vec![snapshot()]).await;
    let browser = Browser::open_connected(
        1920,
        1080,
        &format!("{}/?speed=3&captions=on", bridge.url()),
    )
    .await;
    bridge.send(&added(1));
    browser
        .wait_until(
            "the first event is shown",
            "document.querySelector('.event-log').dataset.received === '1' \
             && document.querySelector('#catch-up').dataset.behind === '0' \
             && ![...document.querySelectorAll('.stage-rate')].some(t => t.textContent.includes('no events'))",
        )
        .await;
    toggle_pause(&browser, true).await;
    let before = state(&browser).await;
    assert_eq!(before["control"], "", "nothing is behind yet: {before}");

    // A burst, a 410 and a slow watcher closed, all while paused.
    for seq in 2..2 + BURST {
        bridge.send(&added(seq));
    }
    bridge.send(&gone(2 + BURST));
    bridge.send(&watch_cache(3 + BURST));
    browser
        .wait_until(
            "the page has the whole burst",
            &format!("document.querySelector('#catch-up').dataset.behind === '{BURST}'"),
        )
        .await;
    // Time goes by on the wall; none on the page.
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    let paused = state(&browser).await;
    for key in ["rows", "rates", "notice", "fanout"] {
        assert_eq!(
            paused[key], before[key],
            "{key} moved while paused: {before} then {paused}"
        );
    }
    assert_eq!(
        paused["control"],
        format!("{BURST} events behind · catch up"),
        "one control says what waits: {paused}"
    );
    browser.screenshot_for_docs("catch-up.png").await;

    // Resumed: the page catches up as the tokens are launched, not before.
    start_sampling(&browser).await;
    toggle_pause(&browser, false).await;
    let total = 1 + BURST;
    browser
        .wait_until(
            "the page has caught up",
            &format!(
                "document.querySelector('.event-log').dataset.received === '{total}' \
                 && document.querySelector('#catch-up').dataset.behind === '0' \
                 && document.querySelector('#notice').textContent.includes('410') \
                 && document.querySelector('#fanout')"
            ),
        )
        .await;
    let seen = samples(&browser).await;
    assert!(!seen.is_empty(), "frames were sampled");
    for s in &seen {
        assert!(
            n(s, "rows") + n(s, "behind") <= total,
            "shown ahead of the animation: {s}"
        );
        let told = s["notice"].as_str().unwrap_or("").contains("410");
        assert!(
            !told || n(s, "behind") == 0,
            "the 410 told before the events before it were shown: {s}"
        );
        assert!(
            !s["fanout"].as_bool().unwrap_or(false) || n(s, "behind") == 0,
            "the fan-out drawn before the events before it were shown: {s}"
        );
    }
    assert!(
        seen.iter().any(|s| (1..BURST).contains(&n(s, "behind"))
            && !s["notice"].as_str().unwrap_or("").contains("410")),
        "the page caught up step by step, with the animation"
    );
    let after = state(&browser).await;
    assert_ne!(after["rates"], before["rates"], "the burst is counted");
    assert!(after["fanout"].as_bool().unwrap_or(false));
    assert_eq!(after["control"], "", "the control goes once caught up");

    // Paused again under a second burst, the control shows it all at once.
    toggle_pause(&browser, true).await;
    let first = total + 1;
    for seq in first..first + 20 {
        bridge.send(&added(seq + 2));
    }
    browser
        .wait_until(
            "the control offers to catch up",
            "document.querySelector('#catch-up').dataset.behind === '20' \
             && !document.querySelector('#catch-up').hidden",
        )
        .await;
    browser.click("#catch-up").await;
    browser
        .wait_until(
            "everything is shown, still paused",
            &format!(
                "document.querySelector('.event-log').dataset.received === '{}' \
                 && document.querySelector('#catch-up').hidden",
                total + 20
            ),
        )
        .await;
    assert_eq!(
        browser
            .eval("document.querySelector('#pause').getAttribute('aria-pressed')")
            .await,
        "true"
    );
    browser.close().await;
}

/// The replay page's folder as `make embed` writes it.
fn embed_dir() -> std::path::PathBuf {
    watchlife_tests::browser::embed_folder()
}

/// What the replay page shows at every frame: [`STATE`]'s notice and
/// backlog, the bar's status and time, and whether an ERROR token is drawn.
const REPLAY_STATE: &str = "({
    notice: document.querySelector('#notice').textContent,
    behind: Number(document.querySelector('#catch-up').dataset.behind),
    rows: Number(document.querySelector('.event-log').dataset.received),
    status: document.querySelector('#replay-status').dataset.status,
    time: document.querySelector('#replay-time').textContent,
    error_token: !!document.querySelector('#pipeline g[data-token][data-type=ERROR]'),
})";

#[tokio::test]
async fn a_replay_tells_its_410_when_its_token_is_drawn_and_ends_when_all_are() {
    let dir = embed_dir();
    let text = std::fs::read_to_string(dir.join("scenarios/compaction-relist.jsonl"))
        .expect("the scenario is in the replay page's folder");
    let recording = watchlife_protocol::parse_recording(&text).expect("a recording");
    let events = recording
        .frames
        .iter()
        .filter(|f| matches!(f.frame.body, FrameBody::Event(_)))
        .count() as u64;
    let server = StaticFiles::serve(&dir).await;
    let browser = Browser::open_replay(
        1920,
        1080,
        &server.url("embed.html?scenario=compaction-relist&paused=1&captions=on"),
    )
    .await;
    // At the fastest pace, so that the recording runs ahead of the tokens.
    browser.fill("#replay-rate", "4").await;
    browser
        .eval(&format!(
            "(() => {{ window.samples = []; const sample = () => {{ window.samples.push({REPLAY_STATE}); \
             requestAnimationFrame(sample); }}; requestAnimationFrame(sample); return true; }})()"
        ))
        .await;
    browser.click("#replay-play").await;
    // The bar may turn "ended" after that frame's sample was taken: wait
    // for a sample that has it.
    browser
        .wait_until(
            "the replay ends",
            "document.querySelector('#replay-status[data-status=ended]') \
             && window.samples.some(s => s.status === 'ended')",
        )
        .await;
    let seen = samples(&browser).await;
    let told = seen
        .iter()
        .position(|s| s["notice"].as_str().unwrap_or("").contains("410 Gone"))
        .unwrap_or_else(|| {
            let mut notices: Vec<&str> = seen.iter().filter_map(|s| s["notice"].as_str()).collect();
            notices.dedup();
            panic!(
                "the 410 is never told; told: {notices:?}; at the end: {:?}",
                seen.last()
            )
        });
    let drawn = seen
        .iter()
        .position(|s| s["error_token"].as_bool() == Some(true))
        .expect("the ERROR's token is drawn");
    assert!(
        drawn <= told,
        "the 410 was told (frame {told}: {}) before the ERROR's token was drawn (frame {drawn})",
        seen[told]
    );
    let ended = seen
        .iter()
        .position(|s| s["status"] == "ended")
        .expect("the end is sampled");
    assert!(
        ended > told,
        "the replay ended before its 410 was told: {}",
        seen[ended]
    );
    let end = &seen[ended];
    assert_eq!(
        n(end, "behind"),
        0,
        "ended with events still to draw: {end}"
    );
    assert_eq!(
        n(end, "rows"),
        events,
        "ended before every event was shown: {end}"
    );
    let time = end["time"].as_str().unwrap_or("");
    let (at, of) = time
        .split_once(" / ")
        .expect("the time reads `at / length`");
    assert_eq!(at, of, "the timeline ends at the end: {time}");
    // The timeline followed the animation: it never stood at the end while
    // events were still to be drawn.
    for s in &seen[..ended] {
        let time = s["time"].as_str().unwrap_or("");
        let at_end = time.split_once(" / ").is_some_and(|(at, of)| at == of);
        assert!(
            !at_end || n(s, "behind") == 0,
            "the timeline at its end while events wait: {s}"
        );
    }
    browser.close().await;
}
