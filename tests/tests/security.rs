//! Who may connect, against the real binary: the token, the Origin and Host
//! checks at the handshake, the startup rule beyond loopback, and the
//! security headers of the app. And what no client can do: exhaust the
//! bridge's connections ([`connections`]), pass the demo's bounds or its
//! memory budget ([`demo_limits`]), or reach its API from elsewhere or from a
//! web page ([`demo_api_door`]). Nor is any test-only fault in the binary
//! that ships.

#[path = "security/connections.rs"]
mod connections;
#[path = "security/demo_api_door.rs"]
mod demo_api_door;
#[path = "security/demo_limits.rs"]
mod demo_limits;
mod fanout_support;

use fanout_support::{Client, Process, metric};
use std::process::Command;
use watchlife_tests::bridge::{Bridge, TEST_BREAK, binary};
use watchlife_tests::http;

#[tokio::test]
async fn without_the_token_the_handshake_is_refused_with_401() {
    let bridge = Bridge::start(&["--demo", "--demo-idle", "--token", "s3cret"]).await;
    let missing = Client::try_connect(&bridge.ws_url(), &[])
        .await
        .err()
        .expect("refused");
    assert_eq!(missing.status, 401);
    assert!(missing.body.contains("?token="), "{}", missing.body);
    let wrong = Client::try_connect(&format!("{}?token=guess", bridge.ws_url()), &[])
        .await
        .err()
        .expect("refused");
    assert_eq!(wrong.status, 401);
    // The page passes it on the URL; scripts may send a header.
    Client::connect(&format!("{}?token=s3cret", bridge.ws_url()))
        .await
        .greeting()
        .await;
    Client::try_connect(&bridge.ws_url(), &[("authorization", "Bearer s3cret")])
        .await
        .expect("a bearer token is accepted")
        .greeting()
        .await;
    // /metrics and /version hold the token too; /healthz does not.
    assert_eq!(
        http::get(bridge.addr, "/metrics").await.unwrap().status,
        401
    );
    assert_eq!(
        http::get(bridge.addr, "/version").await.unwrap().status,
        401
    );
    assert_eq!(
        http::get(bridge.addr, "/healthz").await.unwrap().status,
        200
    );
    let refused = metric_with_token(
        bridge.addr,
        "watchlife_viewers_refused_total{reason=\"unauthorized\"}",
    )
    .await;
    assert_eq!(refused, 2.0);
}

async fn metric_with_token(addr: std::net::SocketAddr, series: &str) -> f64 {
    fanout_support::metric_at(addr, "/metrics?token=s3cret", series)
        .await
        .expect("the series exists")
}

#[tokio::test]
async fn a_page_from_another_origin_is_refused_with_403() {
    let bridge = Bridge::start(&[
        "--demo",
        "--demo-idle",
        "--allow-origin",
        "https://slides.example.com",
    ])
    .await;
    let url = bridge.ws_url();
    let evil = Client::try_connect(&url, &[("origin", "http://evil.example")])
        .await
        .err()
        .expect("another site's page is refused");
    assert_eq!(evil.status, 403);
    assert!(evil.body.contains("--allow-origin"), "{}", evil.body);
    let other_port = Client::try_connect(&url, &[("origin", "http://127.0.0.1:1")])
        .await
        .err()
        .expect("another port is another origin");
    assert_eq!(other_port.status, 403);
    // The bridge's own page, and an allowed origin, get in.
    let own = format!("http://{}", bridge.addr);
    Client::try_connect(&url, &[("origin", &own)])
        .await
        .expect("same origin")
        .greeting()
        .await;
    Client::try_connect(&url, &[("origin", "https://slides.example.com")])
        .await
        .expect("allowed origin")
        .greeting()
        .await;
    assert_eq!(
        metric(
            bridge.addr,
            "watchlife_viewers_refused_total{reason=\"origin\"}"
        )
        .await,
        Some(2.0)
    );
}

/// Bodies on demand (`/objects/…`) are guarded as the stream is: the token,
/// and a browser page's Origin.
#[tokio::test]
async fn object_bodies_need_the_token_and_the_page_origin() {
    use watchlife_protocol::{EventType, FrameBody};
    let bridge = Bridge::start(&[
        "--demo",
        "--token",
        "s3cret",
        "--snapshot-bodies-limit",
        "0",
    ])
    .await;
    let mut viewer = Client::connect(&format!("{}?token=s3cret", bridge.ws_url())).await;
    // The first object the viewer hears of: from its (light) snapshot, or
    // from an event if it came before the first LIST.
    let target = loop {
        let (frame, _) = viewer.frame().await;
        match frame.body {
            FrameBody::Snapshot(s) if !s.objects.is_empty() => {
                assert!(
                    s.objects.iter().all(|o| o.object.is_none()),
                    "with a limit of 0 bytes, a viewer's snapshot is light"
                );
                break s.objects[0].target.clone();
            }
            FrameBody::Event(e)
                if matches!(e.event_type, EventType::Added | EventType::Modified) =>
            {
                break e.target;
            }
            _ => {}
        }
    };
    let path = format!("/objects/{}/{}", target.resource, target.key());
    let get = |path: String, origin: Option<&'static str>| {
        let addr = bridge.addr;
        async move {
            let origin = origin
                .map(|o| format!("Origin: {o}\r\n"))
                .unwrap_or_default();
            http::request(
                addr,
                &format!(
                    "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{origin}Connection: close\r\n\r\n"
                ),
            )
            .await
            .unwrap()
        }
    };
    assert_eq!(get(path.clone(), None).await.status, 401, "no token");
    assert_eq!(
        get(format!("{path}?token=guess"), None).await.status,
        401,
        "wrong token"
    );
    let foreign = get(format!("{path}?token=s3cret"), Some("http://evil.example")).await;
    assert_eq!(foreign.status, 403, "{}", foreign.text());
    let own = format!("http://{}", bridge.addr);
    let own: &'static str = Box::leak(own.into_boxed_str());
    let ok = get(format!("{path}?token=s3cret"), Some(own)).await;
    assert_eq!(ok.status, 200, "{}", ok.text());
    assert_eq!(ok.header("content-type"), Some("application/json"));
    let body: serde_json::Value = serde_json::from_str(&ok.text()).unwrap();
    assert_eq!(body["metadata"]["name"], target.name.as_str());
    let missing = get(
        format!("/objects/{}/no-such/object?token=s3cret", target.resource),
        None,
    )
    .await;
    assert_eq!(missing.status, 404, "{}", missing.text());
    assert_eq!(
        get("/objects/pods?token=s3cret".into(), None).await.status,
        404
    );
}

#[tokio::test]
async fn a_loopback_bridge_without_token_refuses_other_host_names() {
    let bridge = Bridge::start(&["--demo", "--demo-idle"]).await;
    // A page whose name was re-pointed at 127.0.0.1 (DNS rebinding) is
    // same-origin with itself, so the Origin check alone would let it in.
    let rebound = Client::try_connect(
        &bridge.ws_url(),
        &[
            ("host", "rebind.example:80"),
            ("origin", "http://rebind.example"),
        ],
    )
    .await
    .err()
    .expect("refused");
    assert_eq!(rebound.status, 403);
    let raw = "GET /version HTTP/1.1\r\nHost: rebind.example\r\nConnection: close\r\n\r\n";
    assert_eq!(http::request(bridge.addr, raw).await.unwrap().status, 403);
    let local = format!(
        "GET /version HTTP/1.1\r\nHost: localhost:{}\r\nConnection: close\r\n\r\n",
        bridge.addr.port()
    );
    assert_eq!(
        http::request(bridge.addr, &local).await.unwrap().status,
        200
    );
}

#[test]
fn beyond_loopback_without_a_token_startup_refuses_in_one_line() {
    let out = Command::new(binary())
        .args(["--demo", "--demo-idle", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    let line = watchlife_tests::one_line_error(&out);
    assert!(line.contains("--token"), "{line}");
    assert!(line.contains("--insecure-no-auth"), "{line}");
}

/// The test-only faults are compiled out of the binary under test (the
/// release build): neither the variable that turns them on nor any fault's
/// name is in it.
#[test]
fn the_shipped_binary_holds_no_test_fault() {
    let path = binary();
    let bytes = std::fs::read(&path).unwrap();
    for name in [
        TEST_BREAK,
        "drop-event",
        "skip-backoff",
        "skip-resync",
        "trust-silent-watch",
        "token-read-once",
        "vague-failures",
    ] {
        let found = bytes
            .windows(name.len())
            .any(|window| window == name.as_bytes());
        assert!(!found, "{} holds {name:?}", path.display());
    }
}

#[tokio::test]
async fn beyond_loopback_with_an_explicit_opt_out_it_serves() {
    let port = watchlife_tests::free_port();
    let any: std::net::SocketAddr = format!("0.0.0.0:{port}").parse().unwrap();
    let bridge = Process::start(any, &["--demo", "--demo-idle", "--insecure-no-auth"]).await;
    let _ = bridge.addr;
    let url = format!("ws://127.0.0.1:{port}/ws");
    Client::connect(&url).await.greeting().await;
}

#[tokio::test]
async fn the_app_is_served_with_security_headers_and_no_inline_script() {
    let bridge = Bridge::start(&[
        "--demo",
        "--demo-idle",
        "--frame-ancestors",
        "'self'",
        "--frame-ancestors",
        "https://slides.example.com",
    ])
    .await;
    let page = http::get(bridge.addr, "/").await.unwrap();
    let csp = page
        .header("content-security-policy")
        .expect("a CSP")
        .to_string();
    let script_src = csp
        .split(';')
        .map(str::trim)
        .find(|d| d.starts_with("script-src"))
        .expect("script-src");
    assert_eq!(script_src, "script-src 'self' 'wasm-unsafe-eval'");
    assert!(
        csp.contains("frame-ancestors 'self' https://slides.example.com"),
        "{csp}"
    );
    assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(page.header("referrer-policy"), Some("no-referrer"));
    if page.status == 200 {
        // The app is built in: every script of the page has a src, and the
        // loader it points to is served.
        let html = page.text();
        let mut rest = html.as_str();
        while let Some(at) = rest.find("<script") {
            let tag_end = rest[at..].find('>').unwrap() + at;
            let tag = &rest[at..=tag_end];
            assert!(tag.contains(" src="), "an inline script: {tag}");
            let src = tag
                .split("src=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            let script = http::get(bridge.addr, src).await.unwrap();
            assert_eq!(script.status, 200, "{src}");
            assert!(
                script
                    .header("content-type")
                    .unwrap()
                    .contains("javascript")
            );
            rest = &rest[tag_end..];
        }
    }
    let default = Bridge::start(&["--demo", "--demo-idle"]).await;
    let csp = http::get(default.addr, "/healthz").await.unwrap();
    assert!(
        csp.header("content-security-policy")
            .unwrap()
            .ends_with("frame-ancestors 'self'")
    );
}
