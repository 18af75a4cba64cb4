//! Who may use the demo API, over real sockets: loopback names only without
//! a token, no requests from web pages, a token beyond loopback (carried by
//! the written kubeconfig), and a clear refusal to serve beyond loopback
//! without one.

mod support;

use watchlife_controlplane::{Clock, ControlPlane};
use watchlife_demo_apiserver::ServeOptions;
use watchlife_testkit::client::Client;

const PODS: &str = "/api/v1/namespaces/default/pods";

fn get(host: &str, extra: &str) -> String {
    format!("GET {PODS} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n")
}

#[tokio::test]
async fn a_rebinding_host_gets_403_and_loopback_names_get_in() {
    let server = support::start().await;
    let port = server.base.rsplit(':').next().unwrap();
    let rebound = support::raw(&server.base, &get(&format!("evil.example:{port}"), "")).await;
    assert_eq!(rebound.code, 403, "{rebound:?}");
    assert_eq!(rebound.json()["reason"], "Forbidden");
    assert!(
        rebound.json()["message"]
            .as_str()
            .unwrap()
            .contains("evil.example")
    );
    for host in [format!("127.0.0.1:{port}"), format!("localhost:{port}")] {
        assert_eq!(
            support::raw(&server.base, &get(&host, "")).await.code,
            200,
            "{host}"
        );
    }
}

#[tokio::test]
async fn a_web_page_can_neither_write_nor_read() {
    let server = support::start().await;
    let port = server.base.rsplit(':').next().unwrap();
    let host = format!("127.0.0.1:{port}");
    // A "simple" cross-site POST needs no preflight, and with no
    // Content-Type it would otherwise pass as JSON.
    let body = r#"{"metadata":{"name":"planted"}}"#;
    let post = format!(
        "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: {host}\r\nOrigin: http://evil.example\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let refused = support::raw(&server.base, &post).await;
    assert_eq!(refused.code, 403, "{refused:?}");
    assert!(
        !refused
            .head
            .to_ascii_lowercase()
            .contains("access-control-allow")
    );
    let read = support::raw(&server.base, &get(&host, "Origin: http://evil.example\r\n")).await;
    assert_eq!(read.code, 403);
    let preflight = format!(
        "OPTIONS {PODS} HTTP/1.1\r\nHost: {host}\r\nOrigin: http://evil.example\r\nAccess-Control-Request-Method: DELETE\r\nConnection: close\r\n\r\n"
    );
    let answered = support::raw(&server.base, &preflight).await;
    assert!(
        !answered
            .head
            .to_ascii_lowercase()
            .contains("access-control-allow")
    );
    let stored = server.cp.get(
        watchlife_controlplane::resource::CONFIGMAPS,
        Some("default"),
        "planted",
    );
    assert!(stored.is_err(), "nothing was written");
}

#[tokio::test]
async fn beyond_loopback_without_a_token_it_refuses_to_serve() {
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let cp = ControlPlane::new(Clock::system());
    let err = watchlife_demo_apiserver::serve(cp, listener, std::future::pending())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied);
    let message = err.to_string();
    assert!(
        message.contains("0.0.0.0") && message.contains("token"),
        "{message}"
    );
}

#[tokio::test]
async fn with_a_token_every_request_needs_it_and_the_kubeconfig_carries_it() {
    let server = support::start_with(ServeOptions {
        token: Some("s3cret".into()),
        ..ServeOptions::default()
    })
    .await;
    let anonymous = Client::new(&server.base, None).get(PODS).await;
    assert_eq!(anonymous.code, 401, "{}", anonymous.text);
    assert_eq!(anonymous.body["reason"], "Unauthorized");
    let wrong = Client::new(&server.base, Some("guess".into()))
        .get(PODS)
        .await;
    assert_eq!(wrong.code, 401);
    let right = Client::new(&server.base, Some("s3cret".into()))
        .get(PODS)
        .await;
    assert_eq!(right.code, 200, "{}", right.text);
    // With a token, the name the client uses does not matter.
    let port = server.base.rsplit(':').next().unwrap();
    let named = support::raw(
        &server.base,
        &get(
            &format!("demo.example:{port}"),
            "Authorization: Bearer s3cret\r\n",
        ),
    )
    .await;
    assert_eq!(named.code, 200);

    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("demo.kubeconfig");
    watchlife_demo_apiserver::write_kubeconfig_with_token(
        &kubeconfig,
        &server.base,
        Some("s3cret"),
    )
    .unwrap();
    if std::path::Path::new("/usr/bin/kubectl").exists() {
        // Run beside the server, not in its place on the test's runtime.
        let out = tokio::process::Command::new("/usr/bin/kubectl")
            .args([
                "--kubeconfig",
                kubeconfig.to_str().unwrap(),
                "get",
                "namespaces",
                "-o",
                "name",
            ])
            .output()
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("namespace/default"));
    }
}
