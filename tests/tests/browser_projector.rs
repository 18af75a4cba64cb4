//! Presenter mode on a projector's screens (1920×1080, 1280×720): the
//! pipeline's type is large enough for a room, and everything needed to
//! follow one event — the side panel, the PAUSED badge, the number waiting —
//! is on the screen without scrolling. The server side opens into the
//! apiserver's inner hops, tokens crossing them; the side panel's waterfall
//! labels every hop. Screenshots are kept in docs/screenshots/.

use watchlife_tests::bridge::Bridge;
use watchlife_tests::browser::Browser;

/// Smallest sizes on a 1080p screen, in CSS pixels as rendered (the SVG's
/// font size times the scale it is drawn at).
const NAME_PX_1080: f64 = 32.0;
const NUMBER_PX_1080: f64 = 22.0;

async fn open(bridge: &Bridge, width: u32, height: u32) -> Browser {
    let browser = Browser::open(width, height, &format!("{}/?presenter=1", bridge.url())).await;
    // The window's size includes the browser's own bars: grow it until the
    // page itself (the viewport) is `width`×`height`, as on a projector.
    let inner = browser.eval("[innerWidth, innerHeight]").await;
    let (w, h) = (
        inner[0].as_u64().unwrap_or(0),
        inner[1].as_u64().unwrap_or(0),
    );
    let (dw, dh) = (
        width as u64 - w.min(width as u64),
        height as u64 - h.min(height as u64),
    );
    if dw + dh > 0 {
        browser
            .client
            .set_window_size(width + dw as u32, height + dh as u32)
            .await
            .expect("resize the window");
    }
    // The window manager resizes when it gets to it.
    browser
        .wait_until(
            "the viewport is the screen's size",
            &format!("innerWidth === {width} && innerHeight === {height}"),
        )
        .await;
    browser
        .wait_until(
            "a token travels in presenter mode",
            "document.querySelector('#pipeline [data-token]:not(.arrived)')",
        )
        .await;
    browser
}

/// The smallest rendered font size (px) of the elements `css` selects
/// (inside the pipeline's SVG: their font size times the SVG's scale).
async fn smallest_px(browser: &Browser, css: &str) -> f64 {
    let css = serde_json::to_string(css).unwrap();
    let px = browser
        .eval(&format!(
            "Math.min(...[...document.querySelectorAll({css})]
                .filter(e => e.getBoundingClientRect().width > 0)
                .map(e => parseFloat(getComputedStyle(e).fontSize) * (e.getScreenCTM() ? e.getScreenCTM().a : 1)))"
        ))
        .await;
    px.as_f64()
        .unwrap_or_else(|| panic!("no visible {css}: {px}"))
}

/// Whether the element is laid out wholly inside the viewport (no scrolling needed).
async fn on_screen(browser: &Browser, css: &str) -> bool {
    let css = serde_json::to_string(css).unwrap();
    browser
        .eval(&format!(
            "(() => {{ const e = document.querySelector({css}); if (!e) return false;
                const r = e.getBoundingClientRect();
                return r.width > 0 && r.height > 0 && r.top >= 0 && r.left >= 0
                    && r.bottom <= innerHeight && r.right <= innerWidth; }})()"
        ))
        .await
        == serde_json::json!(true)
}

async fn check_screen(bridge: &Bridge, width: u32, height: u32, shot: &str) {
    let browser = open(bridge, width, height).await;
    // Sizes scale with the screen: a 720p projector fills the same wall.
    let scale = height as f64 / 1080.0;
    browser
        .wait_until(
            "the numbers are on the nodes",
            "['.stage-rate', '.stage-latency', '.stage-depth'].every(c => \
               [...document.querySelectorAll(`#pipeline ${c}`)].some(e => e.getBoundingClientRect().width > 0))",
        )
        .await;
    // Paused, the picture holds still while it is measured; a step lets a
    // token travel if none was on its way when the pause came.
    browser.press(" ").await;
    browser
        .wait_until(
            "the PAUSED badge shows",
            "document.querySelector('#paused-badge[data-paused=true] .paused-word:not([hidden])')",
        )
        .await;
    let token_shown = "[...document.querySelectorAll('#pipeline .token text.token-label')].some(e => e.getBoundingClientRect().width > 0)";
    if browser.eval(token_shown).await != serde_json::json!(true) {
        browser.press("ArrowRight").await;
    }
    browser
        .wait_until("a token is on screen", token_shown)
        .await;
    let names = smallest_px(&browser, "#pipeline .stage-name").await;
    assert!(
        names >= NAME_PX_1080 * scale - 0.5,
        "stage names {names} px at {width}×{height}"
    );
    for numbers in [
        "#pipeline .stage-rate",
        "#pipeline .stage-latency",
        "#pipeline .stage-depth",
    ] {
        let px = smallest_px(&browser, numbers).await;
        assert!(
            px >= NUMBER_PX_1080 * scale - 0.5,
            "{numbers} {px} px at {width}×{height}"
        );
    }
    let labels = smallest_px(&browser, "#pipeline .token text.token-label").await;
    assert!(
        labels >= NUMBER_PX_1080 * scale - 0.5,
        "token labels {labels} px"
    );
    // Tokens show the object's name, not its resourceVersion.
    let named = browser
        .eval("[...document.querySelectorAll('#pipeline .token')].some(t => t.querySelector('text').textContent !== t.dataset.rv)")
        .await;
    assert_eq!(
        named,
        serde_json::json!(true),
        "a token shows its object's name"
    );
    // Paused: the badge and the number waiting, beside the pipeline.
    for css in [
        "#pipeline",
        ".side-panel",
        "#paused-badge .paused-word",
        "#waiting-count",
        "#side-detail",
    ] {
        assert!(
            on_screen(&browser, css).await,
            "{css} is on the screen at {width}×{height}"
        );
    }
    let waiting = browser.text("#waiting-count").await;
    assert!(waiting.ends_with("waiting"), "{waiting}");
    let scrolls = browser
        .eval("document.documentElement.scrollHeight > innerHeight + 1 && document.querySelector('.stage-area').getBoundingClientRect().bottom > innerHeight")
        .await;
    assert_eq!(
        scrolls,
        serde_json::json!(false),
        "the pipeline and panel fit the screen"
    );
    browser.screenshot_for_docs(shot).await;
    browser.close().await;
}

#[tokio::test]
async fn presenter_mode_is_readable_and_needs_no_scrolling_at_1080p_and_720p() {
    let bridge = Bridge::start(&["--demo", "--demo-rate", "3"]).await;
    check_screen(&bridge, 1920, 1080, "projector-1080.png").await;
    check_screen(&bridge, 1280, 720, "projector-720.png").await;
}

#[tokio::test]
async fn the_server_side_opens_into_its_inner_hops_and_the_waterfall_labels_every_hop() {
    let bridge = Bridge::start(&["--demo", "--demo-rate", "3"]).await;
    let browser = open(&bridge, 1920, 1080).await;
    // Open by default in presenter mode: every inner hop is drawn.
    for hop in ["cacher_reflector", "incoming", "dispatcher", "buffer"] {
        browser
            .wait_for(&format!("#pipeline g.hop[data-hop={hop}]"))
            .await;
    }
    // Tokens cross the inner hops (the demo measures them).
    browser
        .wait_until(
            "a token crosses an inner hop",
            "document.querySelector('#pipeline .token[data-at=incoming], #pipeline .token[data-at=dispatcher], #pipeline .token[data-at=buffer], #pipeline .token[data-at=cacher_reflector]')",
        )
        .await;
    // The waterfall: a labelled row per hop, measured server hops with a bar.
    browser
        .wait_until(
            "the waterfall has the server's hops measured",
            "document.querySelector('#side-detail .hop.measured[data-hop=incoming] .hop-bar') \
             && ['cacher_reflector','watch_cache','incoming','buffer','watch_stream','reflector','reconcile'].every(h => document.querySelector(`#side-detail .hop[data-hop=${h}]`))",
        )
        .await;
    let labelled = browser
        .eval("[...document.querySelectorAll('#side-detail .hop')].every(h => h.querySelector('.hop-label').textContent.length > 0 && h.querySelector('.hop-time').textContent.length > 0)")
        .await;
    assert_eq!(labelled, serde_json::json!(true));
    browser.screenshot_for_docs("server-hops.png").await;
    // A click closes it.
    // An SVG element: a click event, as the pointer sends it.
    browser
        .eval("document.querySelector('#pipeline .server-toggle').dispatchEvent(new MouseEvent('click', { bubbles: true }))")
        .await;
    browser
        .wait_until(
            "closed, the inner hops are gone",
            "document.querySelector('#pipeline[data-open=false]') && !document.querySelector('#pipeline g.hop')",
        )
        .await;
    browser.close().await;
}

#[tokio::test]
async fn a_phone_still_shows_the_pipeline_in_presenter_mode() {
    let bridge = Bridge::start(&["--demo", "--demo-rate", "3"]).await;
    let browser = Browser::start_phone(375, 740).await;
    browser
        .goto(&format!("{}/?presenter=1", bridge.url()))
        .await;
    browser.wait_for("#pipeline g.stage").await;
    let wide = browser
        .eval(
            "document.documentElement.scrollWidth <= innerWidth + 1 \
             && document.querySelector('#pipeline').getBoundingClientRect().right <= innerWidth + 1",
        )
        .await;
    assert_eq!(
        wide,
        serde_json::json!(true),
        "no sideways scrolling on a phone"
    );
    browser.screenshot_for_docs("projector-phone.png").await;
    browser.close().await;
}
