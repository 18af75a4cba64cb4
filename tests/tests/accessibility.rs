//! axe-core (npm, as `scripts/setup-test.sh` installs it) in headless
//! Chromium on the pages a docs reader meets: the replay page as a player
//! shows it (minimal controls) and with all its controls, and the in-page
//! demo, each in the light and the dark theme. No violation of serious or
//! critical impact is allowed; each one found is named with its elements.

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
