//! `make run` on a tree that did not change: no Trunk run, no file of
//! `dist/` rewritten, no rebuild of the binary that embeds it, and serving
//! soon after the command starts.
//!
//! "Soon" is a ratio, never a wall time (the machine is shared): the time
//! from `make run` to the first `/healthz` answer against the time the
//! binary alone takes from its start to the same answer. The binary serves
//! the demo in 7 to 17 ms here and `make run` in 0.7 to 0.8 s (70 to 100
//! times as long), so [`MAX_RATIO`] of it is about 3 s; a rebuild of the page
//! and the binary (the old behaviour, about 30 s) is a ratio in the
//! thousands.

use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// How many times the binary's own start may fit in `make run`'s.
const MAX_RATIO: f64 = 300.0;

/// Starts of each kind measured, alternating; their medians are compared.
const RUNS: usize = 5;

/// A bound on any one start, so that a hang fails instead of blocking.
const WAIT: Duration = Duration::from_secs(300);

fn free_addr() -> SocketAddr {
    format!("127.0.0.1:{}", watchlife_tests::free_port())
        .parse()
        .unwrap()
}

/// A process group (make and the binary it runs), killed whole on drop.
struct Group(Child);

impl Drop for Group {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0.id())])
            .status();
        let _ = self.0.wait();
    }
}

/// Starts `command` in a process group of its own and returns how long it
/// took until `addr` answered `/healthz`.
async fn time_to_serve(mut command: Command, addr: SocketAddr) -> Duration {
    let cache = tempfile::tempdir().unwrap();
    command
        .env("XDG_CACHE_HOME", cache.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .process_group(0);
    let started = Instant::now();
    let mut group = Group(command.spawn().expect("the command starts"));
    loop {
        if let Ok(r) = watchlife_tests::http::get(addr, "/healthz").await
            && r.status == 200
        {
            return started.elapsed();
        }
        if let Ok(Some(status)) = group.0.try_wait() {
            panic!("{command:?} ended ({status}) before serving");
        }
        assert!(started.elapsed() < WAIT, "{command:?} did not serve");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// `make -s ARGS` in the workspace, in the environment of a shell: without
/// the variables cargo sets for this test (build scripts watch some of them,
/// ring's `CARGO_MANIFEST_DIR`, and a value from here would make cargo
/// rebuild half the graph, then again at the next `make` from a shell), and
/// without those of the `make test` this may run under (its jobserver is not
/// this make's).
fn make(args: &[&str]) -> Command {
    let mut command = Command::new("make");
    command
        .arg("-s")
        .args(args)
        .current_dir(watchlife_tests::workspace());
    for name in ["MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"] {
        command.env_remove(name);
    }
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let set_by_cargo = name == "CARGO"
            || name == "OUT_DIR"
            || [
                "MANIFEST_",
                "PKG_",
                "CRATE_",
                "BIN_",
                "TARGET_TMPDIR",
                "PRIMARY_PACKAGE",
                "RUSTC_CURRENT_DIR",
            ]
            .iter()
            .any(|p| name.starts_with(&format!("CARGO_{p}")));
        if set_by_cargo {
            command.env_remove(name.as_ref());
        }
    }
    command
}

/// The binary `make run` runs: the Makefile's own `$(WATCHLIFE)`.
fn makefile_binary() -> PathBuf {
    let out = make(&["-p", "-n", "-f", "Makefile", "--no-print-directory", "lint"])
        .stderr(Stdio::null())
        .output()
        .expect("make runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let target_dir = text
        .lines()
        .find_map(|l| l.strip_prefix("TARGET_DIR := "))
        .expect("the Makefile names its TARGET_DIR");
    PathBuf::from(target_dir).join("release/watchlife")
}

/// Every file of `dist/` with its modification time.
fn dist_times() -> Vec<(PathBuf, SystemTime)> {
    let dist = watchlife_tests::workspace().join("dist");
    let mut files: Vec<_> = std::fs::read_dir(&dist)
        .unwrap_or_else(|e| panic!("{}: {e}", dist.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let t = modified(&p);
            (p, t)
        })
        .collect();
    files.sort();
    files
}

fn modified(path: &Path) -> SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

#[tokio::test]
async fn make_run_on_an_unchanged_tree_rebuilds_nothing_and_serves_at_once() {
    // Whatever the tree holds, built once (in `make test`, already done).
    let built = make(&["build"]).status().expect("make runs");
    assert!(built.success(), "make build");
    let binary = makefile_binary();
    let (binary_before, dist_before) = (modified(&binary), dist_times());
    assert!(
        dist_before.iter().any(|(p, _)| p.ends_with("index.html")),
        "dist/ holds the app"
    );

    // Alternating, so that a busy moment weighs on both alike.
    let mut alone = Vec::new();
    let mut through_make = Vec::new();
    for _ in 0..RUNS {
        let addr = free_addr();
        let mut command = Command::new(&binary);
        command.args([
            "--demo",
            "--listen",
            &addr.to_string(),
            "--demo-api",
            &free_addr().to_string(),
        ]);
        alone.push(time_to_serve(command, addr).await);

        let addr = free_addr();
        let args = format!("ARGS=--demo --listen {addr} --demo-api {}", free_addr());
        through_make.push(time_to_serve(make(&["run", &args]), addr).await);
    }

    // Nothing was rebuilt: not a file of dist/, not the binary.
    assert_eq!(dist_times(), dist_before, "make run rewrote dist/");
    assert_eq!(
        modified(&binary),
        binary_before,
        "make run rebuilt the binary"
    );

    let (alone, through_make) = (median(alone), median(through_make));
    let ratio = through_make.as_secs_f64() / alone.as_secs_f64();
    eprintln!(
        "make run served after {through_make:?}, the binary alone after {alone:?}: {ratio:.0}×"
    );
    assert!(
        ratio <= MAX_RATIO,
        "make run took {ratio:.0}× the binary's own start ({through_make:?} against {alone:?}); at most {MAX_RATIO}×"
    );
}
