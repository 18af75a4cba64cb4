#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# ensure-client-go-reference.sh: build the client-go reference informer that
# the differential tests compare watchlife with, then print where it is.
#
# tests/client-go-reference/main.go is a client-go v1.20.2 shared informer
# that prints its requests and handler calls. It is built inside the same
# Kubernetes v1.20.2 source tree that ensure-real-cluster.sh prepares (Debian's
# source package, with its vendor/ folder and the reflect2 fix), in GOPATH
# mode, with the same Go and the same Go build cache: nothing is downloaded.
#
# The binary lives outside the repository, in
#   ${WATCHLIFE_CACHE:-$HOME/.cache/watchlife}/client-go-reference-v1.20.2/
# named by a hash of main.go and of this build's recipe: an edit of main.go
# builds again, an unchanged file returns at once (no lock, no Go, no apt).
#
# Output: progress goes to stderr, prefixed "[client-go-reference]". On success
# stdout carries exactly one NAME=PATH line that a caller can parse (or `eval`):
#   CLIENT_GO_REFERENCE=/root/.cache/watchlife/client-go-reference-v1.20.2/client-go-reference-0123456789abcdef
#
# With --check it only tells, by its exit status, whether the binary for the
# current main.go is in place (0) or a run would build it (1).
#
# Environment knobs (all optional), as for ensure-real-cluster.sh:
#   WATCHLIFE_CACHE  cache root (default $HOME/.cache/watchlife)
#   WATCHLIFE_GO     go binary to build with (default Debian's go)
#
# Safe to run many times and from several processes at once (a flock guards
# the build); an interrupted run never leaves a partial binary behind.
#
# Time on 2 cores: whatever ensure-real-cluster.sh needs first (nothing once
# it has run on this machine), then one to two minutes for the first build
# of main.go, and seconds for an edited one (Go's build cache keeps the rest).

set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/ensure.sh"

parse_check_option "$@"

readonly K8S_VERSION=v1.20.2
# Part of the binary's name: changing how it is built must build it again.
readonly RECIPE="gopath GO111MODULE=off CGO_ENABLED=0 tags=selinux,notest v1"
# The Go package the program becomes inside the tree.
readonly PKG_DIR=hack/watchlife-client-go-reference

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly HERE
SRC=$(cd "$HERE/.." && pwd)/tests/client-go-reference/main.go
readonly SRC
set_cache_root
readonly DEST=$CACHE/client-go-reference-$K8S_VERSION
# ensure-real-cluster.sh's layout: its prepared tree and its Go build cache.
readonly GOPATH_DIR=$CACHE/kube-apiserver-$K8S_VERSION/build/gopath
readonly KTREE=$GOPATH_DIR/src/k8s.io/kubernetes
readonly GO_BUILD_CACHE=$CACHE/go-build

log_as client-go-reference

[[ -f $SRC ]] || die "$SRC is missing"
HASH=$({ printf '%s\n' "$RECIPE"; cat "$SRC"; } | sha256sum | cut -c1-16)
readonly HASH
readonly BIN=$DEST/client-go-reference-$HASH

print_path() {
  log "client-go reference: $BIN"
  printf 'CLIENT_GO_REFERENCE=%s\n' "$BIN"
}

# ---------------------------------------------------------------------------
# Fast path: this main.go is built already.
# ---------------------------------------------------------------------------
if [[ -x $BIN ]]; then
  [[ $CHECK_ONLY == true ]] || print_path
  exit 0
fi
[[ $CHECK_ONLY == false ]] || exit 1

# ---------------------------------------------------------------------------
# Slow path, serialised between concurrent callers.
# ---------------------------------------------------------------------------
lock_or_wait "$DEST" "building the client-go reference"
if [[ -x $BIN ]]; then
  # Built by whoever held the lock.
  print_path
  exit 0
fi

# The source tree (and Debian's Go) come with the real cluster's binaries.
log "making sure the Kubernetes $K8S_VERSION source tree is prepared (scripts/ensure-real-cluster.sh)"
"$HERE/ensure-real-cluster.sh" >/dev/null || die "ensure-real-cluster.sh failed"
[[ -d $KTREE/staging/src/k8s.io/client-go/tools/cache ]] \
  || die "no prepared source tree at $KTREE: ensure-real-cluster.sh keeps it after building kube-apiserver, but it is gone.
    Remove the cached kube-apiserver binary ($CACHE/kube-apiserver-$K8S_VERSION/kube-apiserver)
    and run scripts/ensure-real-cluster.sh: it prepares the tree again (the compile is quick with a warm Go cache)."

GO=${WATCHLIFE_GO:-/usr/lib/go/bin/go}
[[ -x $GO ]] || GO=$(command -v go) || die "no go binary found (golang-go should provide /usr/lib/go/bin/go)"
readonly GO

# Go environment: exactly ensure-real-cluster.sh's, so its build cache hits.
export GOPATH=$GOPATH_DIR
export GO111MODULE=off GOPROXY=off GOFLAGS= CGO_ENABLED=0 GOWORK=off GOTOOLCHAIN=local
export GOCACHE=$GO_BUILD_CACHE GOENV=off
unset GOROOT GOBIN GOOS GOARCH GOTMPDIR
mkdir -p "$GOCACHE"

log "building the client-go reference ($SRC) inside $KTREE: one to two minutes the first time on 2 cores, seconds after an edit"
mkdir -p "$KTREE/$PKG_DIR"
cp "$SRC" "$KTREE/$PKG_DIR/main.go"
PARTIAL=$DEST/.partial-$$
trap 'rm -f "$PARTIAL"' EXIT
(cd "$KTREE" && "$GO" build -tags selinux,notest -ldflags "-s -w" -o "$PARTIAL" "k8s.io/kubernetes/$PKG_DIR") \
  || die "go build k8s.io/kubernetes/$PKG_DIR failed"

# Same file system, so the rename is atomic: readers see no binary or all of it.
mv -f "$PARTIAL" "$BIN"
trap - EXIT
# Binaries of earlier versions of main.go are of no more use (a process still
# running one keeps its file until it exits).
find "$DEST" -maxdepth 1 -type f -name 'client-go-reference-*' ! -path "$BIN" -delete
log "built ($(elapsed))"
print_path
