//! Shared harness of the integration and browser tests.
//!
//! # Layout
//! - [`bridge`]: starts the real `watchlife` binary on a free loopback port and stops it on drop.
//! - [`chaos`]: fault rounds on a real cluster, one bridge and several viewers, and their invariants.
//! - [`browser`]: headless Chromium through chromedriver (fantoccini), stopped on drop.
//! - [`client_go`]: client-go v1.20.2's own informer, run as a reference.
//! - [`deploy`]: `deploy/` with a token, kubectl, and the image's root run read-only with chroot.
//! - [`differential`]: watchlife and that reference side by side on one real cluster, compared.
//! - [`ws`]: a real WebSocket client that reads protocol frames.
//! - [`http`]: a minimal HTTP/1.1 GET, enough for `/healthz` and the app.
//! - [`real_cluster`]: a real etcd and kube-apiserver on loopback, killed on drop.
//! - [`modern_cluster`]: etcd 3.5 and a v1.36 apiserver serving one custom
//!   resource, and client-go v0.36's informer run against it as a reference.
//! - [`service`]: a Service in front of bridge replicas, routing to the ready ones.
//! - [`static_files`]: a plain static file server, for the embed with no bridge.

pub mod bridge;
pub mod browser;
pub mod cdp;
pub mod chaos;
pub mod client_go;
pub mod deploy;
pub mod differential;
pub mod http;
pub mod mdbook;
pub mod modern_cluster;
pub mod player_page;
pub mod proxy;
pub mod real_cluster;
pub mod service;
pub mod static_files;
pub mod tls_proxy;
pub mod ws;

use std::path::{Path, PathBuf};

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

/// Ports handed out by [`free_port`], below the kernel's ephemeral range
/// (Linux: 32768–60999 by default). A port from that range, free a moment
/// ago, may meanwhile become the local end of some process's outgoing
/// connection (kube-apiserver's to etcd, say) and then cannot be listened
/// on; below it, only a listener can take it.
const FREE_PORTS: std::ops::Range<u16> = 20_000..32_000;

/// A loopback port that was free a moment ago, never the same twice in one
/// test process.
pub fn free_port() -> u16 {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicU32, Ordering};
    static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    // Each test process starts at its own place in the range, so that
    // processes running side by side rarely try the same ports.
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let span = u32::from(FREE_PORTS.end - FREE_PORTS.start);
    let _ = NEXT.compare_exchange(
        u32::MAX,
        std::process::id().wrapping_mul(7919) % span,
        Ordering::Relaxed,
        Ordering::Relaxed,
    );
    let mut given = GIVEN.lock().unwrap_or_else(|p| p.into_inner());
    for _ in 0..span {
        let port = FREE_PORTS.start + (NEXT.fetch_add(1, Ordering::Relaxed) % span) as u16;
        if !given.contains(&port) && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            given.push(port);
            return port;
        }
    }
    panic!("no free loopback port in {FREE_PORTS:?}");
}

/// The last `lines` lines of the file at `path` (empty when it cannot be
/// read): the end of a helper process's stderr, for failure messages.
pub fn tail(path: &std::path::Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
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

/// Writes, in `dir`, a kubeconfig whose cluster is a loopback port nothing
/// listens on, and returns its path.
pub fn unreachable_kubeconfig(dir: &Path) -> PathBuf {
    let server = format!("http://127.0.0.1:{}", free_port());
    plain_kubeconfig(&dir.join("kubeconfig"), &server)
}

/// Writes at `path` a kubeconfig for the plain-HTTP API at `server` (the
/// demo's, or a proxy in front of it), with no user; returns the path.
pub fn plain_kubeconfig(path: &Path, server: &str) -> PathBuf {
    std::fs::write(
        path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\nusers:\n- name: u\n  user: {{}}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n"
        ),
    )
    .expect("the kubeconfig is written");
    path.to_path_buf()
}

/// Runs the real kubectl with `kubeconfig` and `args`, and returns what it
/// printed; panics with its error when it fails.
pub fn kubectl(kubeconfig: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
