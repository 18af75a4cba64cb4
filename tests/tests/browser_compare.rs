//! The replay page's compare view (`embed.html?scenario=NAME&compare=1.20`),
//! served from the static embed folder with no `watchlife` process: both
//! profiles play on one clock, each labelled from its recording, and the
//! strip under them shows each side's own way of listing.

use watchlife_protocol::{FrameBody, parse_recording};
use watchlife_tests::browser::{Browser, embed_folder};
use watchlife_tests::static_files::StaticFiles;

/// The scenario compared: it has a 410 and a relist, so each side's steps
/// go on after the first list.
const SCENARIO: &str = "compaction-relist";

/// The profile a shipped recording's `hello` names.
fn recorded_profile(name: &str) -> String {
    let text = std::fs::read_to_string(embed_folder().join(format!("scenarios/{name}.jsonl")))
        .expect("a shipped scenario");
    let recording = parse_recording(&text).expect("a recording");
    recording
        .frames
        .iter()
        .find_map(|f| match &f.frame.body {
            FrameBody::Hello(h) => Some(h.kubernetes.clone()),
            _ => None,
        })
        .expect("a hello naming its profile")
}

/// `browser` on the compare view of `scenario`, once both sides have
/// loaded or failed.
async fn open_compare(server: &StaticFiles, scenario: &str, browser: Browser) -> Browser {
    browser
        .goto(&server.url(&format!("embed.html?scenario={scenario}&compare=1.20")))
        .await;
    browser
        .wait_until(
            "both recordings are loaded",
            "document.querySelector('#compare-status:not([data-status=loading])')",
        )
        .await;
    browser
}

/// Each side's position in its recording, ms, as the page shows it.
async fn positions(browser: &Browser) -> Vec<f64> {
    let values = browser
        .eval("[...document.querySelectorAll('.compare-side')].map(s => Number(s.dataset.positionMs))")
        .await;
    values
        .as_array()
        .expect("a list")
        .iter()
        .map(|v| v.as_f64().expect("a number"))
        .collect()
}

/// The labels of a strip column's steps of one kind.
async fn step_labels(browser: &Browser, side: usize, kind: &str) -> Vec<String> {
    let values = browser
        .eval(&format!(
            "[...document.querySelectorAll('.strip-side[data-side=\"{side}\"] .step[data-kind=\"{kind}\"] .step-label')].map(l => l.textContent)"
        ))
        .await;
    values
        .as_array()
        .expect("a list")
        .iter()
        .map(|v| v.as_str().expect("text").to_string())
        .collect()
}

#[tokio::test]
async fn both_profiles_play_on_one_clock_and_the_strip_shows_how_each_lists() {
    let server = StaticFiles::serve(&embed_folder()).await;
    let browser = open_compare(&server, SCENARIO, Browser::start(1920, 1080).await).await;
    // Each side is labelled with the profile its own recording names.
    let own = recorded_profile(SCENARIO);
    let other = recorded_profile(&format!("{SCENARIO}-1.20"));
    assert_ne!(own, other, "the two recordings are of two profiles");
    let labels = browser
        .eval("[...document.querySelectorAll('.compare-side')].map(s => [s.dataset.profile, s.querySelector('.compare-profile-name').textContent])")
        .await;
    assert_eq!(
        labels,
        serde_json::json!([
            [own, format!("Kubernetes {own}")],
            [other, format!("Kubernetes {other}")]
        ])
    );
    // Both pipelines are drawn.
    assert_eq!(
        browser
            .eval("document.querySelectorAll('.compare-side[data-status=ready] svg').length")
            .await,
        serde_json::json!(2)
    );

    // The strip: 1.36 starts with a streaming WATCH and its closing
    // bookmark, marked as its own; 1.20 with a LIST, marked as its own.
    let streaming = step_labels(&browser, 0, "streaming-list").await;
    assert!(
        streaming
            .iter()
            .any(|l| l.starts_with("WATCH") && l.contains("sendInitialEvents=true")),
        "{streaming:?}"
    );
    assert!(
        !step_labels(&browser, 0, "initial-events-end")
            .await
            .is_empty()
    );
    assert!(
        step_labels(&browser, 0, "list").await.is_empty(),
        "1.36 streams its list"
    );
    let lists = step_labels(&browser, 1, "list").await;
    assert!(
        lists
            .iter()
            .any(|l| l.starts_with("LIST ?resourceVersion=0&limit=500")),
        "{lists:?}"
    );
    assert!(step_labels(&browser, 1, "streaming-list").await.is_empty());
    let marked = browser
        .eval("[...document.querySelectorAll('.strip-side .step.differs')].map(s => s.closest('.strip-side').dataset.side + ' ' + s.dataset.kind)")
        .await;
    let marked: Vec<&str> = marked
        .as_array()
        .expect("a list")
        .iter()
        .map(|v| v.as_str().expect("text"))
        .collect();
    for expected in ["0 streaming-list", "0 initial-events-end", "1 list"] {
        assert!(marked.contains(&expected), "{expected} in {marked:?}");
    }
    assert!(
        !marked.contains(&"0 gone") && !marked.contains(&"1 gone"),
        "both get 410 Gone"
    );

    // One clock: slowed down, both sides move; paused, neither does. From
    // the start, so that the pause lands well before either recording's end
    // however long the checks above took (at a quarter speed, the shorter
    // recording's 5.5 s last 22 s): at its end a side stops while the clock
    // goes on, and the two offsets differ.
    browser.fill("#compare-rate", "0").await;
    browser.fill("#compare-timeline", "0").await;
    browser
        .wait_until(
            "both sides move",
            "[...document.querySelectorAll('.compare-side')].every(s => Number(s.dataset.positionMs) > 0)",
        )
        .await;
    browser
        .wait_until(
            "the clock's first steps light up",
            "document.querySelectorAll('.strip-side .step.now').length === 2",
        )
        .await;
    browser.click("#compare-play").await;
    let paused_at = positions(&browser).await;
    let turns: u64 = browser
        .eval("Number(document.querySelector('#compare-status').dataset.turns)")
        .await
        .as_u64()
        .expect("a count");
    browser
        .wait_until(
            "the clock turned ten more times",
            &format!(
                "Number(document.querySelector('#compare-status').dataset.turns) >= {}",
                turns + 10
            ),
        )
        .await;
    assert_eq!(
        positions(&browser).await,
        paused_at,
        "paused, neither side moves"
    );
    assert_eq!(
        paused_at[0], paused_at[1],
        "both at the same offset from their starts"
    );
    assert_eq!(
        browser
            .eval("document.querySelector('#compare-status').dataset.status")
            .await,
        serde_json::json!("ready"),
        "paused before the end, not ended"
    );

    // Seeking moves both, and the strip's lit step follows the clock.
    browser.fill("#compare-timeline", "5000").await;
    assert_eq!(positions(&browser).await, vec![5000.0, 5000.0]);
    let lit = browser
        .eval("[...document.querySelectorAll('.strip-side .step.now')].map(s => Number(s.dataset.tMs) <= 5000)")
        .await;
    assert_eq!(lit, serde_json::json!([true, true]));
    let shots = watchlife_tests::workspace().join("target/screenshots");
    std::fs::create_dir_all(&shots).expect("a folder for the screenshots");
    browser.screenshot(&shots.join("compare-1920.png")).await;
    browser.close().await;

    let phone = open_compare(&server, SCENARIO, Browser::start_phone(375, 812).await).await;
    let stacked = phone
        .eval("(() => { const [a, b] = document.querySelectorAll('.compare-side'); return b.getBoundingClientRect().top >= a.getBoundingClientRect().bottom; })()")
        .await;
    assert_eq!(stacked, serde_json::json!(true), "stacked on a phone");
    assert_eq!(
        phone.eval("document.documentElement.clientWidth").await,
        serde_json::json!(375)
    );
    let overflow = phone
        .eval("document.documentElement.scrollWidth > document.documentElement.clientWidth")
        .await;
    assert_eq!(
        overflow,
        serde_json::json!(false),
        "nothing wider than the phone"
    );
    phone.screenshot(&shots.join("compare-375.png")).await;
    phone
        .eval("document.querySelector('#difference-strip').scrollIntoView() || true")
        .await;
    phone
        .screenshot(&shots.join("compare-375-differences.png"))
        .await;
    phone.close().await;
}

#[tokio::test]
async fn a_scenario_with_one_profile_says_so_and_plays_alone() {
    let server = StaticFiles::serve(&embed_folder()).await;
    let browser = open_compare(&server, "streaming-list", Browser::start(1280, 900).await).await;
    let missing = browser
        .text(".compare-side[data-status=failed] .compare-missing-title")
        .await;
    assert_eq!(missing, "No Kubernetes 1.20 recording of streaming-list");
    assert_eq!(
        browser
            .text(".compare-side[data-status=ready] .compare-profile-name")
            .await,
        format!("Kubernetes {}", recorded_profile("streaming-list"))
    );
    browser
        .wait_until(
            "the recorded side plays",
            "Number(document.querySelector('.compare-side[data-status=ready]').dataset.positionMs) > 0",
        )
        .await;
    assert!(
        !step_labels(&browser, 0, "streaming-list").await.is_empty(),
        "its steps are listed"
    );
    assert_eq!(
        browser
            .eval("document.querySelectorAll('.strip-side .step.differs').length")
            .await,
        serde_json::json!(0),
        "with nothing to compare, nothing is marked as differing"
    );
    browser.close().await;
}
