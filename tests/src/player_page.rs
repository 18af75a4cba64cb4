//! A docs page with `<watchlife-player>` elements, as a reader's browser
//! sees it: what the players tell, what their frames show, what the page
//! fetched. Players are named by their order on the page, as a docs
//! generator writes them with no id.
//!
//! [`prove_two_players`] is the whole check a docs site's page passes, for
//! a hand-written page and for each generator's.

use crate::browser::Browser;
use serde_json::Value;

/// The author's marker of the first player of a page under test: early in
/// its scenario, so that it is reached in a few seconds.
pub const MARKER_S: f64 = 1.5;
pub const MARKER_LABEL: &str = "The first objects are listed";

/// The first player of a page under test, as a docs author writes it in any
/// generator's syntax: one option per line.
pub fn first_player() -> Vec<String> {
    vec![
        "scenario: pod-lifecycle".into(),
        "autoplay".into(),
        "animation: fast".into(),
        format!("markers: {MARKER_S}:{MARKER_LABEL}"),
        "pause-at-markers".into(),
    ]
}

/// The second: another scenario, looping.
pub fn second_player() -> Vec<String> {
    ["scenario: scale", "autoplay", "loop"]
        .map(String::from)
        .to_vec()
}

/// A player's option lines as the element's attributes (`name="value"`,
/// or a bare `name`).
pub fn attributes(lines: &[String]) -> String {
    lines
        .iter()
        .map(|line| match line.split_once(": ") {
            Some((name, value)) => format!(" {name}=\"{value}\""),
            None => format!(" {line}"),
        })
        .collect()
}

/// Records every event the players of each page fire (in `window.told`), for
/// [`told`]: install before the page is opened.
pub async fn record_what_players_tell(browser: &Browser) {
    browser
        .before_every_page(
            "window.told = [];
             for (const type of ['ready', 'play', 'pause', 'ended', 'marker']) {
               window.addEventListener(type, (e) => {
                 if (e.target.tagName !== 'WATCHLIFE-PLAYER') return;
                 const index = [...document.querySelectorAll('watchlife-player')].indexOf(e.target);
                 window.told.push({ index, type, detail: e.detail || null });
               }, true);
             }",
        )
        .await;
}

/// Where a docs page is looked at: a desk's 1280 × 900 window, or a phone's
/// 360 × 800 screen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reader {
    Desk,
    Phone,
}

/// A browser as `reader` on the docs page at `url`, recording what its
/// players tell ([`record_what_players_tell`]).
pub async fn open(reader: Reader, url: &str) -> Browser {
    let browser = match reader {
        Reader::Desk => Browser::start(1280, 900).await,
        Reader::Phone => Browser::start_phone(360, 800).await,
    };
    record_what_players_tell(&browser).await;
    browser.goto(url).await;
    browser
}

/// The player at `index` on the page, as a JavaScript expression.
pub fn player(index: usize) -> String {
    format!("document.querySelectorAll('watchlife-player')[{index}]")
}

/// A property of the player at `index`.
pub async fn property(browser: &Browser, index: usize, name: &str) -> Value {
    browser.eval(&format!("{}.{name}", player(index))).await
}

/// What the players told so far, as `INDEX TYPE` lines (and a marker's label).
pub async fn told(browser: &Browser) -> Vec<String> {
    let told = browser
        .eval(
            "window.told.map(t => t.index + ' ' + t.type + \
             (t.detail && t.detail.label ? ': ' + t.detail.label : ''))",
        )
        .await;
    serde_json::from_value(told).expect("a list of strings")
}

/// The frame of the player at `index`, as a JavaScript expression.
fn frame(index: usize) -> String {
    format!("{}.shadowRoot.querySelector('iframe')", player(index))
}

/// The object table inside the player at `index`, as sorted lines.
pub async fn object_table(browser: &Browser, index: usize) -> Vec<String> {
    let rows = browser
        .eval(&format!(
            "[...{}.contentDocument.querySelectorAll('tr.object-row')].map(r => [r.dataset.resource, \
             r.dataset.key, r.querySelector('.rv').textContent, r.dataset.deleted].join(' '))",
            frame(index)
        ))
        .await;
    let mut rows: Vec<String> = serde_json::from_value(rows).expect("a list of strings");
    rows.sort();
    rows
}

/// Fails unless the frame of the player at `index` comes to be as tall as
/// the page inside it, with that page no taller and no wider than the frame
/// (nothing cut off, nothing scrolling inside), all read at one moment: the
/// page inside grows while it plays, and the frame follows it.
pub async fn assert_sized_to_content(browser: &Browser, index: usize) {
    let frame = frame(index);
    let root = format!("{frame}.contentDocument.documentElement");
    browser
        .wait_until(
            &format!("player {index}'s frame is as tall as its page, nothing cut off"),
            &format!(
                "Math.abs({frame}.getBoundingClientRect().height - {root}.getBoundingClientRect().height) <= 1 \
                 && {root}.scrollHeight <= {frame}.clientHeight + 1 \
                 && {root}.scrollWidth <= {frame}.clientWidth"
            ),
        )
        .await;
}

/// Every URL the page and its players' frames fetched.
pub async fn fetched(browser: &Browser) -> Vec<String> {
    let urls = browser
        .eval(
            "[window, ...[...document.querySelectorAll('watchlife-player')]\
               .map(p => p.shadowRoot.querySelector('iframe')).filter(f => f).map(f => f.contentWindow)]\
             .flatMap(w => w.performance.getEntriesByType('resource').map(e => e.name))",
        )
        .await;
    serde_json::from_value(urls).expect("a list of strings")
}

/// The check a docs page with [`first_player`] then [`second_player`] passes,
/// opened in `browser` (with [`record_what_players_tell`]) from `folder`
/// (a URL ending in `/`):
/// - the first plays, stops at its author's marker and tells it (`marker`,
///   then `pause`), and lists the markers watchlife found too;
/// - seeking away and back lands on the object table playing showed;
/// - `play()` plays on past the marker;
/// - the second, scrolled to, plays on its own;
/// - both frames are as tall as their content, nothing cut off;
/// - the app was downloaded once for both (the site served by
///   [`crate::static_files::StaticFiles::serve_as_host`]);
/// - nothing was fetched from outside `folder`.
pub async fn prove_two_players(browser: &Browser, folder: &str) {
    let first = player(0);
    browser
        .wait_until(
            "the first player stops at its marker",
            &format!(
                "window.told.some(t => t.index === 0 && t.type === 'marker' \
                 && t.detail.label === '{MARKER_LABEL}') && {first}.paused"
            ),
        )
        .await;
    let at = property(browser, 0, "currentTime").await.as_f64().unwrap();
    assert!(
        (MARKER_S..MARKER_S + 1.0).contains(&at),
        "paused at the marker, {MARKER_S} s: {at} s"
    );
    let firsts: Vec<String> = told(browser)
        .await
        .into_iter()
        .filter(|t| t.starts_with("0 "))
        .collect();
    assert_eq!(
        firsts,
        [
            "0 ready".to_string(),
            "0 play".into(),
            format!("0 marker: {MARKER_LABEL}"),
            "0 pause".into(),
        ],
        "the first player's events, in order"
    );
    let markers = property(browser, 0, "markers").await;
    assert!(
        markers.as_array().unwrap().len() > 1,
        "the author's marker and those watchlife found: {markers}"
    );

    let played = object_table(browser, 0).await;
    assert!(!played.is_empty(), "objects were listed by the marker");
    browser.eval(&format!("{first}.seek(0)")).await;
    browser
        .wait_until(
            "the first player is back at the start",
            &format!("{first}.currentTime === 0"),
        )
        .await;
    browser.eval(&format!("{first}.seek({at})")).await;
    browser
        .wait_until(
            "the first player is back at the marker",
            &format!("{first}.currentTime === {at}"),
        )
        .await;
    assert_eq!(
        object_table(browser, 0).await,
        played,
        "seek lands where playing did"
    );
    assert_sized_to_content(browser, 0).await;

    browser.eval(&format!("{first}.play()")).await;
    browser
        .wait_until(
            "the first player plays on",
            &format!("{first}.currentTime > {at} + 0.5"),
        )
        .await;

    let second = player(1);
    browser.eval(&format!("{second}.scrollIntoView()")).await;
    browser
        .wait_until(
            "the second player plays",
            &format!(
                "window.told.some(t => t.index === 1 && t.type === 'play') && {second}.currentTime > 1"
            ),
        )
        .await;
    assert_sized_to_content(browser, 1).await;

    // The page downloaded the app once: one frame fetched it, the other
    // took it from the browser's cache (transferred 0 bytes), whichever
    // loaded first (served as a docs host serves it).
    let transferred = browser
        .eval(&format!(
            "[{}, {}].flatMap(f => f.contentWindow.performance.getEntriesByType('resource')\
               .filter(e => e.name.endsWith('.wasm')).map(e => e.transferSize))",
            frame(0),
            frame(1)
        ))
        .await;
    let downloads = transferred
        .as_array()
        .expect("a list")
        .iter()
        .filter(|bytes| bytes.as_u64() != Some(0))
        .count();
    assert_eq!(
        downloads, 1,
        "the app was downloaded once for both players (bytes transferred per frame: {transferred})"
    );

    let outside: Vec<_> = fetched(browser)
        .await
        .into_iter()
        .filter(|url| !url.starts_with(folder))
        .collect();
    assert!(
        outside.is_empty(),
        "nothing is fetched from outside {folder}: {outside:?}"
    );
}

/// The check a docs page passes on a phone (a [`Browser::start_phone`]
/// session with [`record_what_players_tell`], on the page): the first
/// player reaches its marker, its frame shows its whole page, and the docs
/// page does not scroll sideways. The first player is then in view.
pub async fn prove_fits_a_phone(browser: &Browser) {
    browser
        .wait_until(
            "the first player stops at its marker",
            "window.told.some(t => t.index === 0 && t.type === 'marker')",
        )
        .await;
    assert_sized_to_content(browser, 0).await;
    let widths = browser
        .eval(&format!(
            "[document.documentElement.scrollWidth, window.innerWidth, \
             {}.getBoundingClientRect().right]",
            player(0)
        ))
        .await;
    let [page, viewport, right] = [0, 1, 2].map(|i| widths[i].as_f64().unwrap());
    assert!(
        page <= viewport && right <= viewport,
        "the docs page does not scroll sideways: page {page}, viewport {viewport}, player's right edge {right}"
    );
    browser
        .eval(&format!("{}.scrollIntoView()", player(0)))
        .await;
}
