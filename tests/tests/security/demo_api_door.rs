//! The demo API's door, against the real binary: `--demo-api` beyond
//! loopback without a token is refused in one line; with one, the API asks
//! every client for it and the written kubeconfig carries it; the loopback API
//! refuses a rebinding `Host` and web pages.

use super::demo_limits::demo_api;
use std::process::Command;
use watchlife_tests::bridge::{Bridge, binary};
use watchlife_tests::http;

#[test]
fn demo_api_beyond_loopback_without_a_token_is_refused_in_one_line() {
    for args in [
        vec!["--demo", "--demo-idle", "--demo-api", "0.0.0.0:0"],
        vec!["--demo", "--demo-api", "[::]:0"],
        vec![
            "record",
            "--demo",
            "--demo-api",
            "0.0.0.0:0",
            "--out",
            "/dev/null",
        ],
    ] {
        let out = Command::new(binary())
            .args(["--listen", "127.0.0.1:0"])
            .args(&args)
            .env("XDG_CACHE_HOME", std::env::temp_dir())
            .output()
            .unwrap();
        let line = watchlife_tests::one_line_error(&out);
        assert!(line.contains("--demo-api"), "{args:?}: {line}");
        assert!(line.contains("--token"), "{args:?}: {line}");
    }
}

#[tokio::test]
async fn beyond_loopback_the_demo_api_asks_for_the_token_that_its_kubeconfig_carries() {
    let port = watchlife_tests::free_port();
    let any = format!("0.0.0.0:{port}");
    let bridge = Bridge::start(&["--demo", "--demo-api", &any, "--token", "s3cret"]).await;
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let pods = |auth: &str| {
        format!(
            "GET /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Connection: close\r\n\r\n"
        )
    };
    let anonymous = http::request(addr, &pods("")).await.unwrap();
    assert_eq!(anonymous.status, 401, "{}", anonymous.text());
    let wrong = http::request(addr, &pods("Authorization: Bearer nope\r\n"))
        .await
        .unwrap();
    assert_eq!(wrong.status, 401, "{}", wrong.text());
    let right = http::request(addr, &pods("Authorization: Bearer s3cret\r\n"))
        .await
        .unwrap();
    assert_eq!(right.status, 200, "{}", right.text());
    // kubectl, with the kubeconfig the bridge wrote, gets in.
    let kubeconfig = bridge
        .cache_dir()
        .join("watchlife")
        .join(format!("{port}-demo.kubeconfig"));
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["get", "namespaces", "-o", "name"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("namespace/default"));
}

#[tokio::test]
async fn the_demo_api_refuses_a_rebinding_host_and_web_pages() {
    let bridge = Bridge::start(&["--demo", "--demo-idle"]).await;
    let api = demo_api(bridge.addr).await;
    let addr: std::net::SocketAddr = api.trim_start_matches("http://").parse().unwrap();
    let pods = |host: &str, extra: &str| {
        format!(
            "GET /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n"
        )
    };
    let port = addr.port();
    let rebound = http::request(addr, &pods(&format!("evil.example:{port}"), ""))
        .await
        .unwrap();
    assert_eq!(rebound.status, 403, "{}", rebound.text());
    assert!(
        rebound.text().contains("\"kind\":\"Status\""),
        "{}",
        rebound.text()
    );
    let page = http::request(
        addr,
        &pods(
            &format!("127.0.0.1:{port}"),
            "Origin: http://evil.example\r\n",
        ),
    )
    .await
    .unwrap();
    assert_eq!(page.status, 403, "{}", page.text());
    assert_eq!(page.header("access-control-allow-origin"), None);
    let own = http::request(addr, &pods(&format!("127.0.0.1:{port}"), ""))
        .await
        .unwrap();
    assert_eq!(own.status, 200, "{}", own.text());
}
