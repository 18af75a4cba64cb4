//! `<watchlife-player>` on a hand-written docs page: the page at
//! `docs/page.html` of a plain static site, the player's files copied beside
//! it into `docs/watchlife/` (`make embed`'s folder). Two players on one
//! page pass [`prove_two_players`]; the second, far below, is loaded only
//! when scrolled to. On a phone the player fits the width.

use watchlife_tests::browser::embed_folder;
use watchlife_tests::player_page::{
    Reader, assert_sized_to_content, attributes, first_player, open, player, prove_fits_a_phone,
    prove_two_players, second_player, told,
};
use watchlife_tests::static_files::{StaticFiles, copy_folder};

/// A docs page with two players, far apart.
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
<watchlife-player{}></watchlife-player>
<div style="height: 4000px">Much more prose.</div>
<watchlife-player{} theme="dark" controls="none">
  <a href="watchlife/embed.html?scenario=scale">watch the replay</a>
</watchlife-player>
</body></html>"#,
        attributes(&first_player()),
        attributes(&second_player()),
    )
}

/// A page whose one player runs the in-page demo.
const DEMO_PAGE: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">
<title>The demo</title></head><body>
<script src="watchlife/player.js" data-demo data-captions="on"></script>
</body></html>"#;

/// A site with the docs pages, and the player's files in `docs/watchlife/`.
async fn docs_site() -> (tempfile::TempDir, StaticFiles) {
    let site = tempfile::tempdir().expect("a temporary folder");
    let docs = site.path().join("docs");
    copy_folder(&embed_folder(), &docs.join("watchlife"));
    std::fs::write(docs.join("page.html"), docs_page()).expect("write the docs page");
    std::fs::write(docs.join("demo.html"), DEMO_PAGE).expect("write the demo page");
    let server = StaticFiles::serve_as_host(site.path()).await;
    (site, server)
}

#[tokio::test]
async fn two_players_on_a_docs_page_play_stop_at_a_marker_seek_and_load_when_scrolled_to() {
    let (_site, server) = docs_site().await;
    let browser = open(Reader::Desk, &server.url("docs/page.html")).await;
    browser
        .wait_until(
            "the first player is ready",
            "window.told.some(t => t.index === 0 && t.type === 'ready')",
        )
        .await;
    assert!(
        browser
            .eval(&format!("{}.shadowRoot.querySelector('iframe')", player(1)))
            .await
            .is_null(),
        "a player out of view is not loaded"
    );
    let so_far = told(&browser).await;
    assert!(so_far.iter().all(|t| !t.starts_with("1 ")), "{so_far:?}");
    prove_two_players(&browser, &server.url("docs/")).await;
    browser
        .eval(&format!("{}.scrollIntoView()", player(0)))
        .await;
    browser.screenshot_for_docs("player-desk.png").await;
    browser.close().await;
}

/// The one-line embed of the in-page demo: the script places the player,
/// whose frame then takes the demo page's height.
#[tokio::test]
async fn the_in_page_demo_placed_by_its_script_tag_sizes_itself() {
    let (_site, server) = docs_site().await;
    let browser = open(Reader::Desk, &server.url("docs/demo.html")).await;
    browser
        .wait_until(
            "the demo's player is ready",
            "window.told.some(t => t.index === 0 && t.type === 'ready')",
        )
        .await;
    let source = browser
        .eval(&format!(
            "{}.shadowRoot.querySelector('iframe').src",
            player(0)
        ))
        .await;
    assert!(
        source
            .as_str()
            .is_some_and(|s| s.contains("/docs/watchlife/demo.html?")),
        "{source}"
    );
    assert_sized_to_content(&browser, 0).await;
    browser.close().await;
}

#[tokio::test]
async fn on_a_phone_a_player_fits_the_width_and_shows_its_whole_page() {
    let (_site, server) = docs_site().await;
    let browser = open(Reader::Phone, &server.url("docs/page.html")).await;
    prove_fits_a_phone(&browser).await;
    browser.screenshot_for_docs("player-phone.png").await;
    browser.close().await;
}
