//! `<watchlife-player>` on a docs page, as a docs author embeds it: the
//! page at `docs/page.html` of a plain static site, the player's files
//! copied beside it into `docs/watchlife/` (`make embed`'s folder). Two
//! players on one page: the first stops at its author's marker and tells
//! it, `seek` lands on the object table that playing showed, and the script
//! API plays on; the second loads only when scrolled to, and plays on its
//! own. Nothing is fetched from outside the docs folder, and the frames
//! size themselves to their content, at a desk's width and a phone's.

use serde_json::Value;
use watchlife_tests::browser::{Browser, embed_folder};
use watchlife_tests::static_files::{StaticFiles, copy_folder};

/// The author's marker on the first player: early in the scenario, so the
/// test reaches it in a few seconds.
const MARKER_S: f64 = 1.5;
const MARKER_LABEL: &str = "The first objects are listed";

/// A docs page with two players, far apart, and a recorder of what they tell.
fn docs_page() -> String {
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>How informers work</title>
<link rel="icon" href="data:,">
<script src="watchlife/player.js"></script>
</head><body style="margin: 0 1rem; font-family: sans-serif">
<h1>How informers work</h1>
<p>Play the recording: it stops where the informer has listed.</p>
<watchlife-player id="first" scenario="pod-lifecycle" autoplay animation="fast"
    markers="{MARKER_S}:{MARKER_LABEL}" pause-at-markers></watchlife-player>
<div id="between" style="height: 4000px">Much more prose.</div>
<watchlife-player id="second" scenario="scale" autoplay loop theme="dark" controls="none">
  <a href="watchlife/embed.html?scenario=scale">watch the replay</a>
</watchlife-player>
<script>
  window.told = [];
  for (const id of ["first", "second"]) {{
    for (const type of ["ready", "play", "pause", "ended", "marker"]) {{
      document.getElementById(id).addEventListener(type, (e) =>
        window.told.push({{ id, type, detail: e.detail || null }}));
    }}
  }}
</script>
</body></html>"#
    )
}

/// A site with the docs page, and the player's files in `docs/watchlife/`.
async fn docs_site() -> (tempfile::TempDir, StaticFiles) {
    let site = tempfile::tempdir().expect("a temporary folder");
    let docs = site.path().join("docs");
    copy_folder(&embed_folder(), &docs.join("watchlife"));
    std::fs::write(docs.join("page.html"), docs_page()).expect("write the docs page");
    let server = StaticFiles::serve(site.path()).await;
    (site, server)
}

/// What the players told so far, as `id type` lines (and the marker's label).
async fn told(browser: &Browser) -> Vec<String> {
    let told = browser
        .eval("window.told.map(t => t.id + ' ' + t.type + (t.detail && t.detail.label ? ': ' + t.detail.label : ''))")
        .await;
    serde_json::from_value(told).expect("a list of strings")
}

/// The object table inside player `id`'s frame, as sorted lines.
async fn object_table(browser: &Browser, id: &str) -> Vec<String> {
    let rows = browser
        .eval(&format!(
            "[...document.getElementById('{id}').shadowRoot.querySelector('iframe').contentDocument\
             .querySelectorAll('tr.object-row')].map(r => [r.dataset.resource, r.dataset.key, \
             r.querySelector('.rv').textContent, r.dataset.deleted].join(' '))"
        ))
        .await;
    let mut rows: Vec<String> = serde_json::from_value(rows).expect("a list of strings");
    rows.sort();
    rows
}

async fn player(browser: &Browser, id: &str, property: &str) -> Value {
    browser
        .eval(&format!("document.getElementById('{id}').{property}"))
        .await
}

/// Fails unless player `id`'s frame is as tall as the page inside it, and
/// that page is no wider than the frame.
async fn assert_sized_to_content(browser: &Browser, id: &str) {
    let frame = format!("document.getElementById('{id}').shadowRoot.querySelector('iframe')");
    browser
        .wait_until(
            &format!("{id}'s frame is as tall as its page"),
            &format!(
                "Math.abs({frame}.getBoundingClientRect().height - \
                 {frame}.contentDocument.documentElement.getBoundingClientRect().height) <= 1"
            ),
        )
        .await;
    let overflow = browser
        .eval(&format!(
            "[{frame}.contentDocument.documentElement.scrollWidth, {frame}.clientWidth, \
             {frame}.contentDocument.documentElement.scrollHeight, {frame}.clientHeight]"
        ))
        .await;
    let [inner_w, frame_w, inner_h, frame_h] = [0, 1, 2, 3].map(|i| overflow[i].as_f64().unwrap());
    assert!(
        inner_w <= frame_w && inner_h <= frame_h + 1.0,
        "{id}: nothing is cut off or scrolls inside: page {inner_w}×{inner_h} in a {frame_w}×{frame_h} frame"
    );
}

/// Every URL the docs page and its players' frames fetched.
async fn fetched(browser: &Browser) -> Vec<String> {
    let urls = browser
        .eval(
            "[window, ...[...document.querySelectorAll('watchlife-player')]\
               .map(p => p.shadowRoot.querySelector('iframe')).filter(f => f).map(f => f.contentWindow)]\
             .flatMap(w => w.performance.getEntriesByType('resource').map(e => e.name))",
        )
        .await;
    serde_json::from_value(urls).expect("a list of strings")
}

#[tokio::test]
async fn two_players_on_a_docs_page_play_stop_at_a_marker_seek_and_load_when_scrolled_to() {
    let (_site, server) = docs_site().await;
    let browser = Browser::open(1280, 900, &server.url("docs/page.html")).await;

    // The first stops at its author's marker, and says so.
    browser
        .wait_until(
            "the first player stops at its marker",
            &format!("window.told.some(t => t.id === 'first' && t.type === 'marker' && t.detail.label === '{MARKER_LABEL}')"),
        )
        .await;
    browser
        .wait_until(
            "the first player is paused",
            "document.getElementById('first').paused",
        )
        .await;
    let at = player(&browser, "first", "currentTime")
        .await
        .as_f64()
        .unwrap();
    assert!(
        (MARKER_S..MARKER_S + 1.0).contains(&at),
        "paused at the marker, {MARKER_S} s: {at} s"
    );
    let told_so_far = told(&browser).await;
    assert_eq!(
        told_so_far
            .iter()
            .filter(|t| t.starts_with("first"))
            .cloned()
            .collect::<Vec<_>>(),
        [
            "first ready".to_string(),
            "first play".into(),
            format!("first marker: {MARKER_LABEL}"),
            "first pause".into(),
        ],
        "the first player's events, in order"
    );
    browser
        .eval("document.getElementById('first').scrollIntoView()")
        .await;
    browser.screenshot_for_docs("player-desk.png").await;
    let markers = player(&browser, "first", "markers").await;
    assert!(
        markers.as_array().unwrap().len() > 1,
        "the author's marker and those watchlife found: {markers}"
    );

    // The second, 4000 px below, has not been loaded.
    assert_eq!(
        player(&browser, "second", "shadowRoot.querySelector('iframe')").await,
        Value::Null,
        "a player out of view is not loaded"
    );
    assert!(
        told_so_far.iter().all(|t| !t.starts_with("second")),
        "{told_so_far:?}"
    );

    // Seeking away and back lands on the table playing to the marker showed.
    let played = object_table(&browser, "first").await;
    assert!(!played.is_empty(), "objects were listed by the marker");
    browser
        .eval("document.getElementById('first').seek(0)")
        .await;
    browser
        .wait_until(
            "the first player is back at the start",
            "document.getElementById('first').currentTime === 0",
        )
        .await;
    browser
        .eval(&format!("document.getElementById('first').seek({at})"))
        .await;
    browser
        .wait_until(
            "the first player is back at the marker",
            &format!("document.getElementById('first').currentTime === {at}"),
        )
        .await;
    assert_eq!(
        object_table(&browser, "first").await,
        played,
        "seek lands where playing did"
    );
    assert_sized_to_content(&browser, "first").await;

    // The script API plays on past the marker.
    browser
        .eval("document.getElementById('first').play()")
        .await;
    browser
        .wait_until(
            "the first player plays on",
            &format!("document.getElementById('first').currentTime > {at} + 0.5"),
        )
        .await;

    // Scrolled to, the second loads and plays on its own.
    browser
        .eval("document.getElementById('second').scrollIntoView()")
        .await;
    browser
        .wait_until(
            "the second player plays",
            "window.told.some(t => t.id === 'second' && t.type === 'play') \
             && document.getElementById('second').currentTime > 1",
        )
        .await;
    assert_sized_to_content(&browser, "second").await;

    let base = server.url("docs/");
    let outside: Vec<_> = fetched(&browser)
        .await
        .into_iter()
        .filter(|url| !url.starts_with(&base))
        .collect();
    assert!(
        outside.is_empty(),
        "nothing is fetched from outside {base}: {outside:?}"
    );
    browser.close().await;
}

#[tokio::test]
async fn on_a_phone_a_player_fits_the_width_and_shows_its_whole_page() {
    let (_site, server) = docs_site().await;
    let browser = Browser::start_phone(360, 800).await;
    browser.goto(&server.url("docs/page.html")).await;
    browser
        .wait_until(
            "the first player stops at its marker",
            "window.told.some(t => t.id === 'first' && t.type === 'marker')",
        )
        .await;
    assert_sized_to_content(&browser, "first").await;
    let widths = browser
        .eval(
            "[document.documentElement.scrollWidth, window.innerWidth, \
             document.getElementById('first').getBoundingClientRect().right]",
        )
        .await;
    let [page, viewport, right] = [0, 1, 2].map(|i| widths[i].as_f64().unwrap());
    assert!(
        page <= viewport && right <= viewport,
        "the docs page does not scroll sideways: page {page}, viewport {viewport}, player's right edge {right}"
    );
    browser
        .eval("document.getElementById('first').scrollIntoView()")
        .await;
    browser.screenshot_for_docs("player-phone.png").await;
    browser.close().await;
}
