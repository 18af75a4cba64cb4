//! axe-core (npm, as `scripts/setup-test.sh` installs it) in headless
//! Chromium on the pages a docs reader meets: the replay page as a player
//! shows it (minimal controls) and with all its controls, and the in-page
//! demo, each in the light and the dark theme. No violation of serious or
//! critical impact is allowed; each one found is named with its elements.
//! And with the keyboard alone: every control the replay page shows is
//! reached by Tab and draws its focus.

use std::path::PathBuf;
use watchlife_tests::browser::{Browser, embed_folder};
use watchlife_tests::static_files::StaticFiles;

/// The axe-core release `scripts/setup-test.sh` installs.
const AXE_VERSION: &str = "4.11.0";

/// axe-core's script, from the cache folder the set-up installs it into.
fn axe_source() -> String {
    let cache = std::env::var_os("WATCHLIFE_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache/watchlife")
        });
    let path = cache.join(format!(
        "axe-core-{AXE_VERSION}/node_modules/axe-core/axe.min.js"
    ));
    std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (scripts/setup-test.sh installs axe-core; make test runs it)",
            path.display()
        )
    })
}

/// The serious and critical violations axe finds on the page at `url` once
/// `ready` (a JavaScript expression) holds, as readable lines.
async fn violations(url: &str, ready: &str) -> Vec<String> {
    let browser = Browser::start(1280, 900).await;
    browser.goto(url).await;
    browser.wait_until("the page is ready", ready).await;
    browser.run(&axe_source()).await;
    browser
        .run(
            "window.axeFound = null;
             axe.run(document, { resultTypes: ['violations'] }).then((r) => {
               window.axeFound = r.violations
                 .filter((v) => v.impact === 'serious' || v.impact === 'critical')
                 .map((v) => `${v.impact} ${v.id}: ${v.help} — ` +
                   v.nodes.slice(0, 4).map((n) => n.target.join(' ')).join(', ') +
                   (v.nodes.length > 4 ? ` and ${v.nodes.length - 4} more` : ''));
             });",
        )
        .await;
    browser
        .wait_until("axe has run", "window.axeFound !== null")
        .await;
    let found = browser.eval("window.axeFound").await;
    browser.close().await;
    serde_json::from_value(found).expect("a list of strings")
}

/// Every page and theme, checked in turn; fails with all that was found.
#[tokio::test]
async fn the_player_the_replay_page_and_the_in_page_demo_have_no_serious_violations() {
    let server = StaticFiles::serve(&embed_folder()).await;
    let replay_ready = "document.querySelector('#replay-status[data-status=ready]') \
                        && document.querySelectorAll('tr.object-row').length > 0";
    let demo_ready = "document.querySelectorAll('tr.object-row').length > 0";
    let mut all = Vec::new();
    for theme in ["light", "dark"] {
        let pages = [
            (
                format!(
                    "embed.html?scenario=pod-lifecycle&controls=minimal&paused=1&start=3&theme={theme}"
                ),
                replay_ready,
            ),
            (
                format!("embed.html?scenario=pod-lifecycle&paused=1&start=3&theme={theme}"),
                replay_ready,
            ),
            (
                format!("demo.html?controls=minimal&theme={theme}"),
                demo_ready,
            ),
        ];
        for (page, ready) in pages {
            for violation in violations(&server.url(&page), ready).await {
                all.push(format!("{page}: {violation}"));
            }
        }
    }
    assert!(
        all.is_empty(),
        "{} violations:\n{}",
        all.len(),
        all.join("\n")
    );
}

/// Presses Tab as a person does (a trusted key event through DevTools, so
/// the browser moves the focus) and returns what has the focus then: its
/// id, or its tag and text, and whether its focus is drawn (an outline or
/// a ring).
async fn tab(browser: &Browser) -> (String, bool) {
    for kind in ["keyDown", "keyUp"] {
        browser
            .cdp(
                "Input.dispatchKeyEvent",
                serde_json::json!({ "type": kind, "key": "Tab", "code": "Tab", "windowsVirtualKeyCode": 9 }),
            )
            .await;
    }
    let focused = browser
        .eval(
            "(() => { const e = document.activeElement; const s = getComputedStyle(e);
               const drawn = (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0) || s.boxShadow !== 'none';
               return [e.id || (e.tagName + ':' + e.textContent.trim().slice(0, 20)), drawn]; })()",
        )
        .await;
    (
        focused[0].as_str().unwrap_or("").to_string(),
        focused[1].as_bool().unwrap_or(false),
    )
}

/// Every control a reader of the replay page can see is reached with Tab
/// alone, in both control sets, and shows that it has the focus.
#[tokio::test]
async fn every_visible_control_of_the_replay_page_is_reached_by_tab_with_its_focus_drawn() {
    let server = StaticFiles::serve(&embed_folder()).await;
    for controls in ["minimal", "full"] {
        let browser = Browser::start(1280, 900).await;
        browser
            .goto(&server.url(&format!(
                "embed.html?scenario=scale&paused=1&start=2&controls={controls}"
            )))
            .await;
        browser
            .wait_until(
                "the recording is loaded",
                "document.querySelector('#replay-status[data-status=ready]')",
            )
            .await;
        // The controls a reader can see and use.
        let controls_seen: Vec<String> = serde_json::from_value(
            browser
                .eval(
                    "[...document.querySelectorAll('button, select, input, a[href], [tabindex=\"0\"]')]
                       .filter(e => !e.disabled && e.getClientRects().length > 0
                                 && getComputedStyle(e).visibility !== 'hidden'
                                 && e.closest('.pipeline, .header, .controls, .replay-bar'))
                       .map(e => e.id || (e.tagName + ':' + e.textContent.trim().slice(0, 20)))",
                )
                .await,
        )
        .unwrap();
        assert!(controls_seen.len() > 4, "{controls}: {controls_seen:?}");
        let mut reached = std::collections::BTreeSet::new();
        let mut undrawn = Vec::new();
        // Enough presses to go round the page once, whatever else it holds.
        for _ in 0..400 {
            let (id, drawn) = tab(&browser).await;
            if !drawn && controls_seen.contains(&id) {
                undrawn.push(id.clone());
            }
            reached.insert(id);
            if controls_seen.iter().all(|c| reached.contains(c)) {
                break;
            }
        }
        let missed: Vec<_> = controls_seen
            .iter()
            .filter(|c| !reached.contains(*c))
            .collect();
        assert!(
            missed.is_empty(),
            "{controls}: not reached by Tab: {missed:?}"
        );
        assert!(
            undrawn.is_empty(),
            "{controls}: focused with no visible focus: {undrawn:?}"
        );
        browser.close().await;
    }
}
