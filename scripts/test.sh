#!/usr/bin/env bash
# `make test`, step by step:
#   1. the tests' own tools (scripts/setup-test.sh: Chromium, a real etcd, two
#      apiservers and two client-go informers compiled with Go...) are set up in
#      the background, their output kept in $TARGET_DIR/test-setup.log. On a
#      fresh machine that is about a quarter of the run, and the Rust builds
#      leave one of two cores idle for minutes (linking, the page's one-unit
#      LTO), which the Go builds take;
#   2. meanwhile, every build the tests use (`make build embed lint image
#      test-break`) and the tests themselves (`cargo test --no-run`);
#   3. once both are done, the tests, every process they start marked with
#      WATCHLIFE_TEST_RUN: with cargo-nextest (each test its own process,
#      several at a time; .config/nextest.toml) where it is installed, else
#      with `cargo test`, one test binary at a time (about twice as long);
#      then the doc tests;
#   4. scripts/check-leftovers.sh: a process a test left running fails the run.
#
# Environment (the Makefile sets it): MAKE, CARGO, TARGET_DIR, WATCHLIFE,
# WATCHLIFE_TEST_BIN, IMAGE.
set -uo pipefail

: "${MAKE:=make}" "${CARGO:=cargo}" "${TARGET_DIR:?}" "${WATCHLIFE:?}" "${WATCHLIFE_TEST_BIN:?}" "${IMAGE:?}"
say() { echo "[test] $*"; }

# --- 1. the tests' tools, in the background ---------------------------------
mkdir -p "$TARGET_DIR"
setup_log=$TARGET_DIR/test-setup.log
# Its own process group (job control on for this one job), so that a failed
# build or ^C ends the Go builds it runs too.
set -m
"$(dirname "$0")/setup-test.sh" >"$setup_log" 2>&1 &
setup_pid=$!
set +m
stop_setup() { kill -- "-$setup_pid" 2>/dev/null; }
trap 'stop_setup; exit 130' INT TERM
say "setting up the tests' tools in the background (its log: $setup_log)"

# --- 2. the builds -------------------------------------------------------------
if ! "$MAKE" --no-print-directory setup build embed lint image test-break \
    || ! "$CARGO" test --workspace --no-run --quiet; then
    stop_setup
    say "a build failed: see above"
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
    "$CARGO" nextest run --workspace || status=$?
    "$CARGO" test --workspace --doc || status=$?
else
    say "cargo-nextest is not installed: running one test binary at a time (about twice as long; 'cargo install cargo-nextest --locked' makes them parallel)"
    "$CARGO" test --workspace --no-fail-fast || status=$?
fi

# --- 4. nothing left behind -----------------------------------------------------
"$(dirname "$0")/check-leftovers.sh" "$mark" || status=1
exit "$status"
