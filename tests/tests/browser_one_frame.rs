//! One frame from event to pixel: at live speed, each event's first visible
//! change (its token, or the line under the lanes that counts the events shown
//! without one) is drawn in the first animation frame after its message
//! arrives, bursts included, whatever the event log's redraw rate; and the
//! log draws its rows in place, not anew at each redraw, and holds them
//! still under a row the keyboard reached.
//!
//! A script that runs before the page's own counts animation frames (its
//! `requestAnimationFrame` callback is the first of every frame), notes the
//! frame count when each event's message arrives (a listener on every
//! WebSocket the page opens), and the frame count when each resourceVersion
//! first appears on an element (`data-rv`, or one of the names in `data-rvs`).

use serde_json::json;
use std::time::Duration;
use watchlife_protocol::{
    EventType, FrameBody, PROTOCOL_VERSION, ServerFrame, Snapshot, Stage, StageMark, StageTimes,
    WatchEvent,
};
use watchlife_tests::browser::{Browser, ScriptedBridge, scripted_hello, scripted_pod};

/// The page's clocks, installed before its scripts.
const CLOCKS: &str = r#"
window.__frames = 0;
(function tick() { window.__frames++; requestAnimationFrame(tick); })();
window.__arrived = {};
window.__drawn = {};
const Native = window.WebSocket;
window.WebSocket = class extends Native {
  constructor(...args) {
    super(...args);
    this.addEventListener('message', m => {
      if (typeof m.data !== 'string') return;
      const frame = JSON.parse(m.data);
      for (const f of Array.isArray(frame) ? frame : [frame]) {
        const rv = f.type === 'event' && f.data.resource_version;
        if (rv && !(rv in window.__arrived)) window.__arrived[rv] = window.__frames;
      }
    });
  }
};
const note = rv => { if (rv && !(rv in window.__drawn)) window.__drawn[rv] = window.__frames; };
const look = el => {
  if (el.nodeType !== 1) return;
  note(el.getAttribute('data-rv'));
  (el.getAttribute('data-rvs') || '').split(' ').forEach(note);
};
new MutationObserver(changes => {
  for (const c of changes) {
    if (c.type === 'attributes') { look(c.target); continue; }
    for (const n of c.addedNodes) {
      look(n);
      if (n.querySelectorAll) n.querySelectorAll('[data-rv],[data-rvs]').forEach(look);
    }
  }
}).observe(document, {subtree: true, childList: true, attributes: true,
                      attributeFilter: ['data-rv', 'data-rvs']});
"#;

/// The first resourceVersion the test writes; the snapshot holds one below.
const FIRST_RV: u64 = 100;
/// A start time for the events' stage marks (µs), far from zero.
const T0: u64 = 1_795_338_904_000_000;

/// A MODIFIED of `default/web-{rv % 5}` that passed every stage in 3 ms.
fn modified(seq: u64, rv: u64) -> ServerFrame {
    let mut stages = StageTimes::new();
    for (i, stage) in Stage::ALL.iter().enumerate() {
        stages.insert(*stage, StageMark::at(T0 + seq * 10_000 + i as u64 * 500));
    }
    let target = scripted_pod(&format!("web-{}", rv % 5));
    let object = json!({"kind": "Pod", "metadata": {"name": target.name, "namespace": "default",
                        "resourceVersion": rv.to_string()}});
    ServerFrame {
        seq,
        body: FrameBody::Event(WatchEvent {
            event_type: EventType::Modified,
            target,
            resource_version: rv.to_string(),
            object: object.into(),
            stages,
            initial: false,
            coalesced: false,
            handled: Default::default(),
            patch: None,
            server: None,
        }),
    }
}

/// A scripted bridge with no objects yet, and a page connected to it at
/// live speed, its clocks installed.
async fn connected() -> (ScriptedBridge, Browser) {
    let snapshot = ServerFrame {
        seq: 0,
        body: FrameBody::Snapshot(Snapshot {
            objects: vec![],
            reflectors: vec![],
            listed: vec![],
            taps: vec![],
        }),
    };
    let mut hello = scripted_hello("scripted", &["pods"]);
    hello.protocol = PROTOCOL_VERSION;
    let bridge = ScriptedBridge::start(hello, vec![snapshot]).await;
    let browser = Browser::start(1440, 1000).await;
    browser.before_every_page(CLOCKS).await;
    browser.goto(&format!("{}/?speed=4", bridge.url())).await;
    browser.wait_connected().await;
    (bridge, browser)
}

#[tokio::test]
async fn live_each_event_is_drawn_in_the_first_frame_after_it_arrives() {
    let (bridge, browser) = connected().await;

    // Singles a little apart, then bursts that arrive together: more
    // events at once than the lanes have room for.
    let mut rv = FIRST_RV;
    let mut sent = Vec::new();
    for burst in [1, 1, 1, 1, 1, 8, 1, 12, 1, 1, 20, 1] {
        for _ in 0..burst {
            bridge.send(&modified(rv - FIRST_RV + 1, rv));
            sent.push(rv.to_string());
            rv += 1;
        }
        tokio::time::sleep(Duration::from_millis(70)).await;
    }
    let count = sent.len();
    browser
        .wait_until(
            "every event is drawn",
            &format!(
                "Object.keys(window.__drawn).filter(rv => rv >= {FIRST_RV}).length >= {count}"
            ),
        )
        .await;
    let arrived = browser.eval("window.__arrived").await;
    let drawn = browser.eval("window.__drawn").await;
    let late: Vec<String> = sent
        .iter()
        .filter_map(|rv| {
            let a = arrived[rv]
                .as_u64()
                .unwrap_or_else(|| panic!("rv {rv} never arrived"));
            let d = drawn[rv]
                .as_u64()
                .unwrap_or_else(|| panic!("rv {rv} never drawn"));
            (d != a + 1).then(|| format!("rv {rv}: arrived after frame {a}, drawn in frame {d}"))
        })
        .collect();
    assert!(late.is_empty(), "{} of {count} late: {late:?}", late.len());

    // The bursts found the lanes taken: the line under them says so.
    let line = browser.text(".pipeline .untokened").await;
    assert!(line.contains("shown without a token"), "{line}");

    // The log draws its rows in place: the element that shows the newest
    // event now shows a newer one after the next events, rather than being
    // thrown away for a new one (rows drawn anew on every redraw cost a
    // busy page its frames, and a keyed list kept memory for every row it
    // ever drew).
    let newest = rv - 1;
    let first = "tr.event-row";
    browser
        .wait_until(
            "the newest row is in the log",
            &format!("document.querySelector('{first}').dataset.rv === '{newest}'"),
        )
        .await;
    browser
        .eval(&format!(
            "(document.querySelector('{first}').__kept = true)"
        ))
        .await;
    for _ in 0..3 {
        bridge.send(&modified(rv - FIRST_RV + 1, rv));
        rv += 1;
    }
    browser
        .wait_until(
            "the next events are in the log",
            &format!(
                "document.querySelector('{first}').dataset.rv === '{}'",
                rv - 1
            ),
        )
        .await;
    let kept = browser
        .eval(&format!(
            "document.querySelector('{first}').__kept === true"
        ))
        .await;
    assert_eq!(kept, json!(true), "the row was drawn anew, not in place");
    browser.close().await;
}

/// Presses `key` as a person does: a trusted key event through DevTools,
/// which moves the focus on Tab.
async fn press(browser: &Browser, key: &str, code: u32) {
    for kind in ["keyDown", "keyUp"] {
        browser
            .cdp(
                "Input.dispatchKeyEvent",
                json!({ "type": kind, "key": key, "code": key, "windowsVirtualKeyCode": code }),
            )
            .await;
    }
}

/// The `data-seq` of the element with the focus, if it is an event row.
async fn focused_seq(browser: &Browser) -> serde_json::Value {
    browser
        .eval(
            "(document.activeElement.closest('tr.event-row') || {dataset: {}}).dataset.seq || null",
        )
        .await
}

/// A row the keyboard reached holds the log still, so the row under the
/// focus, and the one Enter follows, stays the event the reader chose; the
/// heading counts what arrived meanwhile; the log moves on when the focus
/// leaves. A click's focus does not hold it.
#[tokio::test]
async fn a_row_the_keyboard_reached_holds_the_log_still() {
    let (bridge, browser) = connected().await;
    let mut rv = FIRST_RV;
    let mut send = |n: u64| {
        for _ in 0..n {
            bridge.send(&modified(rv - FIRST_RV + 1, rv));
            rv += 1;
        }
        rv - 1
    };
    let newest = send(5);
    let first_is =
        |rv: u64| format!("document.querySelector('tr.event-row').dataset.rv === '{rv}'");
    browser.wait_until("five rows", &first_is(newest)).await;

    // Tab from the second row to the third.
    browser
        .eval("document.querySelectorAll('tr.event-row')[1].focus(), true")
        .await;
    press(&browser, "Tab", 9).await;
    let chosen = focused_seq(&browser).await;
    assert_eq!(chosen, json!("3"), "Tab did not reach the third row");

    let newer = send(3);
    browser
        .wait_until(
            "the heading counts the events that arrived",
            "(document.querySelector('.event-log .held-note') || {textContent: ''}).textContent.includes('3 newer')",
        )
        .await;
    assert_eq!(
        browser.eval(&first_is(newest)).await,
        json!(true),
        "the held log moved"
    );
    assert_eq!(
        focused_seq(&browser).await,
        chosen,
        "the focus moved to another event"
    );

    // Enter follows the event under the focus.
    press(&browser, "Enter", 13).await;
    browser
        .wait_until(
            "the detail of the chosen event",
            &format!(
                "(document.querySelector('.event-detail') || {{textContent: ''}}).textContent.includes('{}')",
                FIRST_RV + 2
            ),
        )
        .await;

    // The focus leaves: the log shows the newest again.
    browser.eval("document.activeElement.blur(), true").await;
    browser
        .wait_until("the log moves on", &first_is(newer))
        .await;
    assert_eq!(
        browser
            .eval("!document.querySelector('.event-log .held-note')")
            .await,
        json!(true)
    );

    // A click's focus does not hold it.
    browser.click("tr.event-row:nth-child(3)").await;
    let latest = send(2);
    browser
        .wait_until("the clicked log moves on", &first_is(latest))
        .await;
    browser.close().await;
}
