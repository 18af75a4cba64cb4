#!/usr/bin/env bash
# Installs what building the browser app needs, once per machine, and says so:
#   - the wasm32-unknown-unknown target (rustup),
#   - Trunk 0.21.14 (the newest that builds with Rust 1.95), unoptimised,
#   - wasm-bindgen-cli at exactly the version of the wasm-bindgen crate in Cargo.lock,
#   - wasm-opt from npm's binaryen package (Debian's wasm-opt 108 silently breaks
#     the wasm: the page stays blank), kept in the tool cache below.
#   - protoc, Debian's protobuf-compiler: the bridge's etcd-client crate
#     compiles etcd's .proto files when it is built (needs root or sudo).
#   - Kubernetes v1.20.2's source tree, unpacked from Debian's source package
#     (scripts/ensure-real-cluster.sh --source, about a minute once): the demo
#     API's build reads its protobuf and OpenAPI schemas, so that kubectl's
#     protobuf bodies, `kubectl explain` and `apply -f` work against the demo.
# Every step is skipped when its tool is already there, so a second run takes
# well under a second. Tools live outside the repository (cargo's bin folder and
# $WATCHLIFE_CACHE), so a fresh clone on the same machine reuses them.
set -euo pipefail

TRUNK_VERSION=0.21.14
BINARYEN_VERSION=132.0.0
CACHE="${WATCHLIFE_CACHE:-$HOME/.cache/watchlife}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CARGO_BIN="${CARGO_HOME:-$HOME/.cargo}/bin"
export PATH="$CARGO_BIN:$PATH"

say() { echo "[setup] $*"; }
. "$ROOT/scripts/lib/ensure.sh"
log_as setup

# `cargo build` of the bridge runs protoc (or the one $PROTOC names).
if [ -z "${PROTOC:-}" ] && ! command -v protoc >/dev/null; then
    if [ "$(id -u)" -eq 0 ]; then
        SUDO=
    elif command -v sudo >/dev/null; then
        SUDO=sudo
    else
        say "building the bridge needs protoc: install Debian's protobuf-compiler as root (apt-get install protobuf-compiler)" >&2
        exit 1
    fi
    say "installing Debian's protobuf-compiler (protoc, for the etcd-client crate; seconds)"
    apt_get update -qq || { say "apt-get update failed: see above" >&2; exit 1; }
    apt_get install -y -qq protobuf-compiler >/dev/null \
        || { say "could not install protobuf-compiler: see above" >&2; exit 1; }
fi

# The demo API's schemas, read when it is built (demo-apiserver/build.rs).
if [ -z "${WATCHLIFE_KUBE_SOURCE:-}" ]; then
    mkdir -p "$CACHE"
    # Required: a demo API built without them cannot serve kubectl, so a
    # failure stops the build here rather than leave a lesser binary.
    if ! "$ROOT/scripts/ensure-real-cluster.sh" --source >/dev/null 2>"$CACHE/kube-source.log"; then
        tail -n 5 "$CACHE/kube-source.log" >&2
        say "could not unpack Kubernetes' source tree, which the demo API's protobuf bodies and OpenAPI documents are built from (whole log: $CACHE/kube-source.log); run the command again once the cause is fixed" >&2
        exit 1
    fi
fi

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
    say "adding the wasm32-unknown-unknown target (a few seconds)"
    rustup target add wasm32-unknown-unknown
fi

if [ "$(trunk --version 2>/dev/null || true)" != "trunk $TRUNK_VERSION" ]; then
    say "installing Trunk $TRUNK_VERSION with cargo (once per machine: about 3 minutes on 2 cores)"
    # Unoptimised (--debug): Trunk mostly waits on cargo, wasm-bindgen and
    # wasm-opt, and its own work here (hashing, minifying a page and a
    # stylesheet) takes well under a second either way. It builds in about
    # 2.8 minutes instead of 5 (optimised without LTO; its own release profile
    # asks for fat LTO, longer still), and writes byte-identical files.
    # Without its default features: no TLS stack (rustls, ring) and no check
    # for a newer Trunk, as it builds offline and never downloads.
    cargo install trunk --version "$TRUNK_VERSION" --locked --debug --no-default-features
fi

bindgen_version="$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' "$ROOT/Cargo.lock")"
if [ -z "$bindgen_version" ]; then
    say "Cargo.lock names no wasm-bindgen version: run 'cargo fetch' in $ROOT first" >&2
    exit 1
fi
pinned="$(sed -n 's/^wasm_bindgen = "\(.*\)"/\1/p' "$ROOT/Trunk.toml")"
if [ "$pinned" != "$bindgen_version" ]; then
    say "Trunk.toml pins wasm-bindgen $pinned but Cargo.lock has $bindgen_version: set [tools] wasm_bindgen = \"$bindgen_version\" in Trunk.toml" >&2
    exit 1
fi
if [ "$(wasm-bindgen --version 2>/dev/null || true)" != "wasm-bindgen $bindgen_version" ]; then
    # Not --locked: its lock file pins a webpki-roots the registry here lacks.
    say "installing wasm-bindgen-cli $bindgen_version, the version in Cargo.lock (once: about 3 minutes)"
    # Without its default features: their TLS stack serves only the test
    # runner's downloads, which this build never makes.
    cargo install wasm-bindgen-cli --version "$bindgen_version" --force --bin wasm-bindgen --no-default-features
fi

WASM_OPT_DIR="$CACHE/binaryen-$BINARYEN_VERSION"
if [ ! -x "$WASM_OPT_DIR/node_modules/.bin/wasm-opt" ]; then
    command -v npm >/dev/null || { say "npm is needed for wasm-opt (binaryen from npm): install Node.js" >&2; exit 1; }
    say "installing wasm-opt from npm's binaryen@$BINARYEN_VERSION into $WASM_OPT_DIR (a few seconds)"
    mkdir -p "$WASM_OPT_DIR"
    npm install --silent --no-audit --no-fund --prefix "$WASM_OPT_DIR" "binaryen@$BINARYEN_VERSION"
fi
# Trunk looks for wasm-opt on PATH (and checks its version against Trunk.toml).
ln -sf "$WASM_OPT_DIR/node_modules/.bin/wasm-opt" "$CARGO_BIN/wasm-opt"

# Offline Trunk builds with `cargo build --offline`: fetch the crates now.
cargo fetch --manifest-path "$ROOT/Cargo.toml" --quiet
