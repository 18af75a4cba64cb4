//! Shared harness of the integration and browser tests.
//!
//! # Layout
//! - [`bridge`]: starts the real `watchlife` binary on a free loopback port and stops it on drop.
//! - [`browser`]: headless Chromium through chromedriver (fantoccini), stopped on drop.
//! - [`client_go`]: client-go v1.20.2's own informer, run as a reference.
//! - [`differential`]: watchlife and that reference side by side on one real cluster, compared.
//! - [`ws`]: a real WebSocket client that reads protocol frames.
//! - [`http`]: a minimal HTTP/1.1 GET, enough for `/healthz` and the app.
//! - [`real_cluster`]: a real etcd and kube-apiserver on loopback, killed on drop.
//! - [`static_files`]: a plain static file server, for the embed with no bridge.

pub mod bridge;
pub mod browser;
pub mod client_go;
pub mod differential;
pub mod http;
pub mod real_cluster;
pub mod static_files;
pub mod ws;

use std::path::PathBuf;

/// The workspace root.
pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .to_path_buf()
}

/// Where tests leave screenshots and logs worth keeping.
pub fn artifacts() -> PathBuf {
    let dir = workspace().join("tests/artifacts");
    std::fs::create_dir_all(&dir).expect("tests/artifacts is writable");
    dir
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("loopback is available")
        .port()
}

/// The one line a failed command printed on stderr, for errors that must fit
/// on one line; panics when the command succeeded or printed more.
pub fn one_line_error(out: &std::process::Output) -> String {
    assert!(!out.status.success(), "the command should have failed");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<_> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    lines[0].to_string()
}
