//! Chooses the folder of built frontend assets to embed in the binary.
//!
//! Trunk writes the browser app to `<workspace>/dist`. When it has not been
//! built yet, the bridge still compiles (so `cargo test` works on a fresh
//! clone) but embeds nothing, and serves a page that says how to build it.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let dist = manifest.join("../dist");
    println!("cargo:rerun-if-changed={}", dist.display());
    let folder = if dist.join("index.html").is_file() {
        dist.canonicalize().expect("dist exists")
    } else {
        println!(
            "cargo:warning=the browser app is not built ({} has no index.html): the binary will serve a page saying so. Run `make run` (or `make frontend`) to build it first.",
            dist.display()
        );
        let empty =
            PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo")).join("no-frontend");
        std::fs::create_dir_all(&empty).expect("OUT_DIR is writable");
        empty
    };
    println!("cargo:rustc-env=WATCHLIFE_ASSETS={}", folder.display());
}
