//! The command line: help, health, and a clear refusal when the port is taken.

use std::process::Command;
use watchlife_tests::bridge::{Bridge, binary};

#[test]
fn help_explains_every_flag() {
    let out = Command::new(binary()).arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for flag in ["--listen", "--demo", "--demo-rate", "--demo-idle"] {
        assert!(help.contains(flag), "--help mentions {flag}:\n{help}");
    }
}

#[tokio::test]
async fn a_port_in_use_is_a_one_line_error_naming_it() {
    let bridge = Bridge::start(&["--demo", "--demo-idle"]).await;
    let out = Command::new(binary())
        .args(["--demo", "--listen", &bridge.addr.to_string()])
        .output()
        .unwrap();
    let line = watchlife_tests::one_line_error(&out);
    assert!(line.contains(&bridge.addr.port().to_string()), "{line}");
    assert!(line.contains("in use"), "{line}");
}

#[tokio::test]
async fn healthz_and_version_answer() {
    let bridge = Bridge::start(&["--demo", "--demo-idle"]).await;
    let health = watchlife_tests::http::get(bridge.addr, "/healthz")
        .await
        .unwrap();
    assert_eq!((health.status, health.text().as_str()), (200, "ok"));
    let version = watchlife_tests::http::get(bridge.addr, "/version")
        .await
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&version.body).unwrap();
    assert_eq!(json["source"]["kind"], "demo");
}

#[tokio::test]
async fn the_demo_kubeconfig_is_written_at_start_and_removed_at_a_graceful_stop() {
    let mut bridge = Bridge::start(&["--demo"]).await;
    let folder = bridge.cache_dir().join("watchlife");
    let written: Vec<_> = std::fs::read_dir(&folder)
        .expect("the cache folder")
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with("-demo.kubeconfig"))
        .collect();
    assert_eq!(written.len(), 1, "{written:?}");
    let text = std::fs::read_to_string(&written[0]).unwrap();
    assert!(text.contains("server: http://127.0.0.1:"), "{text}");
    assert!(bridge.terminate().success());
    assert!(
        !written[0].exists(),
        "{} is left behind",
        written[0].display()
    );
}
