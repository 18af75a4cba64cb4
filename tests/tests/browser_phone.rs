//! The page on a phone (360×800, the narrowest common screen): the pipeline
//! stacks its stages two to a row and draws them at their own size, tokens
//! still travel, nothing overlaps and nothing scrolls sideways (a mobile
//! viewport would otherwise widen itself to the widest content: the page is
//! as wide as the screen); presenter mode on a phone is the same arrangement.

use serde_json::json;
use watchlife_tests::bridge::Bridge;
use watchlife_tests::browser::Browser;

/// The phone's screen, in CSS pixels.
const PHONE: (u32, u32) = (360, 800);
/// Smallest scale the pipeline may be drawn at on the phone: its text at
/// the sizes of a desk (17 px names, 12 px explanations), not shrunk.
const MIN_SCALE: f64 = 0.99;

/// Checks what a phone shows of the pipeline at `url`: `rows` rows of
/// stages (and the inner hops, when open).
async fn check_phone(url: &str, rows: usize) -> Browser {
    let phone = Browser::start_phone(PHONE.0, PHONE.1).await;
    phone.goto(url).await;
    phone.wait_for("#pipeline[data-narrow] g.stage").await;
    let shape = phone
        .eval(
            "(() => { const svg = document.getElementById('pipeline'); \
               return { rows: svg.dataset.rows, \
                        scale: svg.getBoundingClientRect().width / svg.viewBox.baseVal.width, \
                        sideways: innerWidth > screen.width \
                          || document.documentElement.scrollWidth > screen.width }; })()",
        )
        .await;
    assert_eq!(shape["rows"], json!(rows.to_string()), "{shape}");
    assert_eq!(shape["sideways"], json!(false), "{shape}");
    let scale = shape["scale"].as_f64().unwrap_or(0.0);
    assert!(scale >= MIN_SCALE, "the pipeline is shrunk to {scale}");
    for css in [
        "#pipeline .stage-name",
        "#pipeline .side-label, #pipeline .server-toggle",
        "#pipeline g.stage .node",
    ] {
        phone.assert_no_overlap(css).await;
    }
    phone
        .wait_until(
            "a token travels",
            "[...document.querySelectorAll('#pipeline .token')].some(t => t.getAttribute('display') !== 'none')",
        )
        .await;
    phone
}

#[tokio::test]
async fn a_phone_shows_the_pipeline_two_stages_to_a_row_at_their_own_size() {
    let bridge = Bridge::start(&["--demo", "--demo-rate", "3"]).await;
    // Closed: the server side's three stages on two rows, the client's six on three.
    let phone = check_phone(&format!("{}/?speed=3", bridge.url()), 5).await;
    phone.screenshot_for_docs("phone.png").await;
    // Opened into the apiserver's inner hops, the rows wrap the same way.
    // An SVG text has no click(): the event a tap sends.
    phone
        .eval("document.querySelector('#pipeline .server-toggle').dispatchEvent(new MouseEvent('click', { bubbles: true }))")
        .await;
    phone.wait_for("#pipeline[data-open=true] g.hop").await;
    let sideways = phone
        .eval(
            "(() => { const svg = document.getElementById('pipeline'); \
               return innerWidth > screen.width \
                 || document.documentElement.scrollWidth > screen.width \
                 || svg.getBoundingClientRect().width / svg.viewBox.baseVal.width < 0.99; })()",
        )
        .await;
    assert_eq!(
        sideways,
        json!(false),
        "opened, still at its size and within the screen"
    );
    phone
        .assert_no_overlap("#pipeline .hop-name, #pipeline .stage-name")
        .await;
    phone.close().await;

    // Presenter mode opens the server side: its four inner hops take two more rows.
    let presenting = check_phone(&format!("{}/?presenter=1&speed=3", bridge.url()), 7).await;
    presenting.screenshot_for_docs("projector-phone.png").await;
    presenting.close().await;
}

/// A script for `eval_async`: how many times what `selector` holds changed
/// within `ms` milliseconds (a redraw changes it in one task, which one
/// MutationObserver call reports).
fn count_redraws(selector: &str, ms: u32) -> String {
    format!(
        "const done = arguments[arguments.length - 1]; \
         const rows = document.querySelector('{selector}'); let redraws = 0; \
         const seen = new MutationObserver(() => {{ redraws++; }}); \
         seen.observe(rows, {{ subtree: true, childList: true, attributes: true, characterData: true }}); \
         setTimeout(() => {{ seen.disconnect(); done(redraws); }}, {ms});"
    )
}

/// [`count_redraws`] of the event log's rows.
fn count_log_redraws(ms: u32) -> String {
    count_redraws("#events", ms)
}

/// How long redraws are counted, on screen and off.
const COUNT_MS: u32 = 4_000;

#[tokio::test]
async fn a_phone_leaves_the_event_log_below_the_screen_alone_and_redraws_it_in_view() {
    let bridge = Bridge::start(&["--demo", "--demo-rate", "200"]).await;
    let phone = Browser::start_phone(PHONE.0, PHONE.1).await;
    phone.goto(&format!("{}/", bridge.url())).await;
    // Events flow: their tokens cross the pipeline.
    phone.wait_for("#pipeline [data-token]").await;
    let far_below = phone
        .eval("document.querySelector('.event-log').getBoundingClientRect().top > 2 * innerHeight")
        .await;
    assert_eq!(
        far_below,
        json!(true),
        "the event log starts more than a screen below a phone's screen"
    );

    let off = phone.eval_async(&count_log_redraws(COUNT_MS)).await;
    assert_eq!(
        off,
        json!(0),
        "far off screen the log was redrawn {off} times in {COUNT_MS} ms"
    );

    // Scrolled to a screen above it: the log is drawn before it shows.
    phone
        .eval(
            "window.scrollTo(0, scrollY + document.querySelector('.event-log').getBoundingClientRect().top - 1.5 * innerHeight) || true",
        )
        .await;
    let near = phone.eval_async(&count_log_redraws(COUNT_MS)).await;
    let near = near.as_u64().unwrap_or(0);
    // Ten times a second where it can be seen: more than twice what even a
    // once-a-second pace would give, with room for a loaded machine.
    let once_a_second = u64::from(COUNT_MS / 1_000);
    assert!(
        near > 2 * once_a_second,
        "a screen before it shows, the log was redrawn {near} times in {COUNT_MS} ms"
    );

    let rows = phone
        .eval("document.querySelectorAll('#events tr.event-row').length")
        .await;
    assert!(rows.as_u64().unwrap_or(0) > 0, "the log holds rows: {rows}");
    phone
        .eval("document.querySelector('.event-log').scrollIntoView() || true")
        .await;
    let on = phone.eval_async(&count_log_redraws(COUNT_MS)).await;
    let on = on.as_u64().unwrap_or(0);
    assert!(
        on > 2 * once_a_second,
        "in view the log was redrawn {on} times in {COUNT_MS} ms"
    );
    phone.close().await;
}

#[tokio::test]
async fn a_phone_leaves_the_plots_below_the_screen_still_until_they_come_near() {
    let bridge = Bridge::start(&["--demo", "--demo-rate", "200"]).await;
    let phone = Browser::start_phone(PHONE.0, PHONE.1).await;
    phone.goto(&format!("{}/", bridge.url())).await;
    phone.wait_for("#pipeline [data-token]").await;
    let far_below = phone
        .eval("document.querySelector('.plots').getBoundingClientRect().top > 2 * innerHeight")
        .await;
    assert_eq!(
        far_below,
        json!(true),
        "the plots start far below the screen"
    );
    let off = phone.eval_async(&count_redraws(".plots", COUNT_MS)).await;
    assert_eq!(
        off,
        json!(0),
        "far off screen the plots were redrawn {off} times"
    );

    phone
        .eval("document.querySelector('.plots').scrollIntoView() || true")
        .await;
    // Once a second in view.
    let on = phone.eval_async(&count_redraws(".plots", COUNT_MS)).await;
    let on = on.as_u64().unwrap_or(0);
    assert!(
        on >= u64::from(COUNT_MS / 1_000) - 1,
        "in view the plots were redrawn {on} times in {COUNT_MS} ms"
    );
    phone.close().await;
}
