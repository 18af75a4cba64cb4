#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# ensure-client-go-reference-modern.sh: build the client-go v0.36 reference
# informer (tests/client-go-reference-modern/main.go, a dynamic informer
# that prints its requests, watch events and handler calls), then print
# where it is.
#
# It is built with the Go and the Kubernetes library sources that
# ensure-modern-cluster.sh unpacks from Debian sid, in GOPATH mode, with that
# script's Go build cache: nothing else is downloaded.
#
# The binary lives outside the repository, in
#   ${WATCHLIFE_CACHE:-$HOME/.cache/watchlife}/client-go-reference-modern/
# named by a hash of main.go, of this build's recipe and of the package
# versions it is built from: an edit of main.go builds again, an unchanged
# file returns at once (no lock, no Go, no apt).
#
# Output: progress goes to stderr, prefixed "[client-go-reference-modern]".
# On success stdout carries exactly one NAME=PATH line that a caller can
# parse (or `eval`):
#   CLIENT_GO_REFERENCE_MODERN=<cache>/client-go-reference-modern/client-go-reference-0123456789abcdef
#
# With --check it only tells, by its exit status, whether the binary for the
# current main.go is in place (0) or a run would build it (1).
#
# Environment knobs (all optional), as for ensure-modern-cluster.sh:
#   WATCHLIFE_CACHE  cache root (default $HOME/.cache/watchlife)
#
# Safe to run many times and from several processes at once (a flock guards
# the build); an interrupted run never leaves a partial binary behind.
#
# Time on 2 cores: whatever ensure-modern-cluster.sh needs first (nothing
# once it has run on this machine), then about half a minute for the first
# build of main.go, and seconds for an edited one.

set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/ensure.sh"

parse_check_option "$@"

# Part of the binary's name: changing how it is built must build it again.
readonly RECIPE="gopath GO111MODULE=off CGO_ENABLED=0 v1"
# The program's import path, in a GOPATH of its own in front of the packages'.
readonly PKG=watchlife.example/client-go-reference-modern

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly HERE
SRC=$(cd "$HERE/.." && pwd)/tests/client-go-reference-modern/main.go
readonly SRC
set_cache_root
readonly DEST=$CACHE/client-go-reference-modern
# ensure-modern-cluster.sh's record of what it unpacked.
readonly VERSIONS=$CACHE/modern-cluster/VERSIONS

log_as client-go-reference-modern

[[ -f $SRC ]] || die "$SRC is missing"
# Without the packages there is nothing to hash them by: then no binary can
# be current, and the slow path makes them first.
binary_name() {
  local hash
  hash=$({ printf '%s\n' "$RECIPE"; cat "$VERSIONS" 2>/dev/null || true; cat "$SRC"; } | sha256sum | cut -c1-16)
  printf '%s/client-go-reference-%s\n' "$DEST" "$hash"
}

print_path() {
  log "client-go reference (modern): $BIN"
  printf 'CLIENT_GO_REFERENCE_MODERN=%s\n' "$BIN"
}

# ---------------------------------------------------------------------------
# Fast path: this main.go is built already, from these packages.
# ---------------------------------------------------------------------------
BIN=$(binary_name)
if [[ -s $VERSIONS && -x $BIN ]]; then
  [[ $CHECK_ONLY == true ]] || print_path
  exit 0
fi
[[ $CHECK_ONLY == false ]] || exit 1

# ---------------------------------------------------------------------------
# Slow path, serialised between concurrent callers.
# ---------------------------------------------------------------------------
log "making sure Go and the Kubernetes library sources are unpacked (scripts/ensure-modern-cluster.sh)"
declare -A MODERN=()
while IFS='=' read -r name value; do
  MODERN[$name]=$value
done < <("$HERE/ensure-modern-cluster.sh") || die "ensure-modern-cluster.sh failed"
for name in MODERN_GO MODERN_GOROOT MODERN_GOPATH MODERN_GOCACHE; do
  [[ -n ${MODERN[$name]:-} ]] || die "ensure-modern-cluster.sh printed no $name="
done

lock_or_wait "$DEST" "building the client-go reference"
# The packages may have been unpacked just now: the name follows them.
BIN=$(binary_name)
readonly BIN
if [[ -x $BIN ]]; then
  # Built by whoever held the lock.
  print_path
  exit 0
fi

# Go environment: ensure-modern-cluster.sh's, so its build cache hits; the
# program's own GOPATH entry comes first.
readonly OWN_GOPATH=$DEST/gopath
export GOROOT=${MODERN[MODERN_GOROOT]} GOPATH=$OWN_GOPATH:${MODERN[MODERN_GOPATH]}
export GO111MODULE=off GOPROXY=off GOFLAGS= CGO_ENABLED=0 GOWORK=off GOTOOLCHAIN=local
export GOCACHE=${MODERN[MODERN_GOCACHE]} GOENV=off
unset GOBIN GOOS GOARCH GOTMPDIR

log "building the client-go reference ($SRC): about half a minute the first time on 2 cores, seconds after an edit"
rm -rf "$OWN_GOPATH"
mkdir -p "$OWN_GOPATH/src/$PKG"
cp "$SRC" "$OWN_GOPATH/src/$PKG/main.go"
PARTIAL=$DEST/.partial-$$
trap 'rm -f "$PARTIAL"' EXIT
(cd "$OWN_GOPATH/src/$PKG" && "${MODERN[MODERN_GO]}" build -ldflags "-s -w" -o "$PARTIAL" "$PKG") \
  || die "go build $PKG failed"

# Same file system, so the rename is atomic: readers see no binary or all of it.
mv -f "$PARTIAL" "$BIN"
trap - EXIT
# Binaries of earlier versions of main.go are of no more use (a process still
# running one keeps its file until it exits).
find "$DEST" -maxdepth 1 -type f -name 'client-go-reference-*' ! -path "$BIN" -delete
log "built ($(elapsed))"
print_path
