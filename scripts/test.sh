#!/usr/bin/env bash
# `make test`, step by step:
#   1. the tests' own tools (scripts/setup-test.sh: Chromium, a real etcd, two
#      apiservers and two client-go informers compiled with Go...) are set up in
#      the background, their output kept in $TARGET_DIR/test-setup.log, while
#   2. the builds run: formatting and code written twice first (`make
#      lint-source`), then `make build embed image`, then the tests' own
#      build with clippy as its compiler (below): `make lint`'s clippy
#      without a second, check-only build of every dependency. That build
#      also makes the chaos tests' bridge with its test-only faults;
#   3. once both are done, the tests, every process they start marked with
#      WATCHLIFE_TEST_RUN: with cargo-nextest (each test its own process,
#      three at a time across all the binaries, those that time the
#      machine beside one other at most; .config/nextest.toml) where it is
#      installed, else with `cargo test`, one test binary at a time (25
#      minutes here against 17); then the doc tests;
#   4. scripts/check-leftovers.sh: a process a test left running fails the run.
#
# Environment (the Makefile sets it): MAKE, CARGO, TARGET_DIR, WATCHLIFE,
# IMAGE.
set -uo pipefail

: "${MAKE:=make}" "${CARGO:=cargo}" "${TARGET_DIR:?}" "${WATCHLIFE:?}" "${IMAGE:?}"
here=$(dirname "$0")
say() { echo "[test] $*"; }

# --- clippy as the compiler ----------------------------------------------------
# Clippy's driver compiles the workspace's own crates (cargo's
# build.rustc-workspace-wrapper; dependencies are compiled by rustc, as with
# `cargo clippy`), with `make lint`'s `-D warnings`: `cargo build
# --all-targets` then lints what `make lint`'s `cargo clippy --all-targets`
# does, and builds the tests on the way. The page's other two builds (the
# replay page's and the in-page demo's features) are linted the same way, as
# features of the whole workspace, so that only the page's crate is compiled
# again. Every cargo command below that builds the tests passes the wrapper,
# or cargo would build them again without it. It is not in the tests'
# environment: a test that runs `make build` must build what a shell's `make
# build` builds.
clippy_driver=$(command -v clippy-driver) || {
    say "clippy-driver is not installed: rustup component add clippy"
    exit 1
}
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
# The tests' build turns on the bridge's `test-break` feature, so that its
# debug `watchlife` is the chaos tests' broken bridge (`make test-break`'s,
# without a build of its own: that one unifies features for the bridge alone
# and so compiles a second set of debug dependencies). The faults stay off
# unless WATCHLIFE_TEST_BREAK names one, and the release binary the other
# tests run has none.
linted=(--config "build.rustc-workspace-wrapper=\"$clippy_driver\"" --features watchlife/test-break)
WATCHLIFE_TEST_BIN=$TARGET_DIR/debug/watchlife

# --- 1. the tests' tools, in the background ---------------------------------
mkdir -p "$TARGET_DIR"
setup_log=$TARGET_DIR/test-setup.log
# Its own process group (job control on for this one job), so that a failed
# build or ^C ends the Go builds it runs too.
set -m
"$here/setup-test.sh" >"$setup_log" 2>&1 &
setup_pid=$!
set +m
stop_setup() { kill -- "-$setup_pid" 2>/dev/null; }
trap 'stop_setup; exit 130' INT TERM
say "setting up the tests' tools in the background (its log: $setup_log)"

# --- 2. the builds -------------------------------------------------------------
built() {
    "$MAKE" --no-print-directory lint-source setup build embed image || return
    say "the tests' build, clippy compiling the workspace (its lints are errors)"
    "$CARGO" build "${linted[@]}" --workspace --all-targets || return
    local page_build
    for page_build in replay in-page; do
        "$CARGO" build "${linted[@]}" --workspace --all-targets --features "watchlife-frontend/$page_build" || return
    done
    # Every build above had the feature, so the debug `watchlife` left is
    # the broken bridge: it names the variable it reads.
    grep -qa WATCHLIFE_TEST_BREAK "$WATCHLIFE_TEST_BIN" || {
        say "$WATCHLIFE_TEST_BIN was built without the test-break feature"
        return 1
    }
}
if ! built; then
    stop_setup
    say "a build or a lint failed: see above"
    exit 1
fi

if kill -0 "$setup_pid" 2>/dev/null; then
    say "the builds are done; waiting for the tests' set-up"
fi
wait "$setup_pid"
setup_status=$?
cat "$setup_log"
if [ "$setup_status" -ne 0 ]; then
    say "the tests' set-up failed (exit $setup_status): see its log above"
    exit 1
fi

# --- 3. the tests ---------------------------------------------------------------
mark=watchlife-test-$$-$(date +%s)
export WATCHLIFE_TEST_RUN=$mark WATCHLIFE_BIN=$WATCHLIFE WATCHLIFE_TEST_BIN WATCHLIFE_IMAGE=$IMAGE
status=0
if "$CARGO" nextest --version >/dev/null 2>&1; then
    "$CARGO" nextest run "${linted[@]}" --workspace || status=$?
    "$CARGO" test "${linted[@]}" --workspace --doc || status=$?
else
    say "cargo-nextest is not installed: running one test binary at a time (about half as long again; 'cargo install cargo-nextest --locked' runs them across binaries)"
    "$CARGO" test "${linted[@]}" --workspace --no-fail-fast || status=$?
fi

# --- 4. nothing left behind -----------------------------------------------------
"$here/check-leftovers.sh" "$mark" || status=1
exit "$status"
