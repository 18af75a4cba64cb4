//! The demo API is built from Kubernetes' source tree (its protobuf and
//! OpenAPI schemas, `demo-apiserver/build.rs`). On a fresh machine the tree
//! may appear only after a first build, when `scripts/setup-build.sh`
//! unpacked it late, or go away and come back: each build must use the
//! tree as it is then, and never keep a binary built without it once it is
//! there.
//!
//! The build here is `cargo check` of the demo API alone, in a target
//! folder of its own (so the suite's binaries are untouched), with
//! `WATCHLIFE_KUBE_SOURCE` pointing at a folder the test adds and removes
//! the tree from. What is checked is what the binary embeds: the build
//! script's `kube.fds` and `swagger.json`, which `src/protobuf.rs` and
//! `src/openapi.rs` include as they are.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The build script's warning when it finds no tree.
const NO_TREE: &str = "source tree was not found";

/// Fewer bytes than either schema file holds when built from the tree
/// (`kube.fds` is about 87 KB, the cut-down `swagger.json` larger): an
/// empty or truncated file is far below it.
const SCHEMA_BYTES: u64 = 20_000;

/// Whether one `cargo check` warned of a missing tree, and where its build
/// script left its files.
struct Built {
    warned: bool,
    out_dir: PathBuf,
}

impl Built {
    /// The size of a file the build script left for the binary to embed.
    fn size(&self, name: &str) -> u64 {
        std::fs::metadata(self.out_dir.join(name))
            .unwrap_or_else(|e| panic!("{name} in {}: {e}", self.out_dir.display()))
            .len()
    }
}

/// `cargo check -p watchlife-demo-apiserver` with the tree looked for at
/// `tree`.
fn check(tree: &Path, target_dir: &Path) -> Built {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .current_dir(watchlife_tests::workspace())
        .args(["check", "-p", "watchlife-demo-apiserver"])
        .args(["--message-format", "json"])
        .arg("--target-dir")
        .arg(target_dir)
        .env("WATCHLIFE_KUBE_SOURCE", tree)
        .output()
        .expect("cargo runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "cargo check failed:\n{stderr}");
    // A build script's warnings go to cargo's stderr, not its messages.
    let mut built = Built {
        warned: stderr.contains(NO_TREE),
        out_dir: PathBuf::new(),
    };
    for line in stdout.lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let ours = message["package_id"]
            .as_str()
            .is_some_and(|id| id.contains("demo-apiserver"));
        if !ours {
            continue;
        }
        if message["reason"] == "build-script-executed" {
            built.out_dir = message["out_dir"].as_str().unwrap_or_default().into();
        }
    }
    assert!(
        !built.out_dir.as_os_str().is_empty(),
        "cargo said nothing of the demo API's build script:\n{stdout}"
    );
    built
}

/// Kubernetes' source tree as `scripts/ensure-real-cluster.sh` keeps it
/// (unpacked by `make test`'s set-up).
fn real_tree() -> PathBuf {
    let output = Command::new(watchlife_tests::workspace().join("scripts/ensure-real-cluster.sh"))
        .arg("--source")
        .output()
        .expect("ensure-real-cluster.sh runs");
    assert!(
        output.status.success(),
        "ensure-real-cluster.sh --source failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("KUBE_SOURCE="))
        .map(PathBuf::from)
        .expect("ensure-real-cluster.sh --source prints KUBE_SOURCE=")
}

#[test]
fn the_demo_api_is_rebuilt_from_the_tree_when_it_appears_and_goes() {
    let real = real_tree();
    // Beside the suite's own builds (target/debug/deps/this-test), so that
    // its dependencies are checked once per machine.
    let exe = std::env::current_exe().unwrap();
    let target_dir = exe.ancestors().nth(3).unwrap().join("kube-source-check");
    let place = tempfile::tempdir().unwrap();
    let tree = place.path().join("kubernetes");

    // Built before the tree is there: it says so, and embeds empty schemas.
    let without = check(&tree, &target_dir);
    assert!(without.warned, "no warning without the tree");
    assert_eq!(without.size("kube.fds"), 0);
    assert_eq!(without.size("swagger.json"), 0);

    // The tree unpacked later: the next build reads it.
    std::os::unix::fs::symlink(&real, &tree).unwrap();
    let with = check(&tree, &target_dir);
    assert!(!with.warned, "a warning although the tree is there");
    assert!(
        with.size("kube.fds") > SCHEMA_BYTES,
        "kube.fds is {} bytes",
        with.size("kube.fds")
    );
    assert!(
        with.size("swagger.json") > SCHEMA_BYTES,
        "swagger.json is {} bytes",
        with.size("swagger.json")
    );

    // Removed again: the build says so again rather than keep stale schemas
    // quietly; restored: whole again.
    std::fs::remove_file(&tree).unwrap();
    let removed = check(&tree, &target_dir);
    assert!(removed.warned, "no warning once the tree was removed");
    assert_eq!(removed.size("kube.fds"), 0);
    std::os::unix::fs::symlink(&real, &tree).unwrap();
    let restored = check(&tree, &target_dir);
    assert!(!restored.warned);
    assert_eq!(restored.size("kube.fds"), with.size("kube.fds"));
    assert_eq!(restored.size("swagger.json"), with.size("swagger.json"));
}
