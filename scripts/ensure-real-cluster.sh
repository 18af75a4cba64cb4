#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# ensure-real-cluster.sh: make a real etcd 3.4 and kube-apiserver v1.20.2
# available for watchlife's integration tests, then print where they are.
#
# Nothing here downloads anything but Debian packages:
#   * etcd comes from Debian's etcd-server / etcd-client packages;
#   * kube-apiserver is compiled from Debian's *source* package `kubernetes`
#     (upstream v1.20.2 with its vendor/ folder) with Debian's Go 1.19.
#
# The compiled binary lives outside the repository, in
#   ${WATCHLIFE_CACHE:-$HOME/.cache/watchlife}/kube-apiserver-v1.20.2/
# together with the downloaded source package, the prepared source tree and
# Go's build cache (about 1.6 GB in all), so the expensive part happens once
# per machine. A later run that finds a working binary returns at once.
#
# Output: progress goes to stderr, prefixed "[real-cluster]". On success stdout
# carries exactly three NAME=PATH lines that a caller can parse (or `eval`):
#   ETCD=/usr/bin/etcd
#   ETCDCTL=/usr/bin/etcdctl
#   KUBE_APISERVER=/root/.cache/watchlife/kube-apiserver-v1.20.2/kube-apiserver
#
# With --check it only tells, by its exit status, whether everything is in
# place already (0) or a run would install or build something (1).
#
# With --source it only fetches and unpacks the source tree (about a minute,
# once per machine), for the demo API's build, which reads Kubernetes'
# schemas from it (`demo-apiserver/build.rs`), and prints one line:
#   KUBE_SOURCE=/root/.cache/watchlife/kube-apiserver-v1.20.2/build/gopath/src/k8s.io/kubernetes
#
# Environment knobs (all optional):
#   WATCHLIFE_CACHE          cache root (default $HOME/.cache/watchlife)
#   WATCHLIFE_DEBIAN_MIRROR  Debian archive URL for the deb-src line
#                            (default http://deb.debian.org/debian)
#   WATCHLIFE_GO             go binary to build with (default Debian's go)
#
# Safe to run many times and from several processes at once (a flock guards
# the build). An interrupted run never leaves a partial binary behind; the next
# run carries on (if only this script was killed, its `go build` child may go
# on to the end and hold the lock until then).
#
# Time on 2 cores, once per machine: about a minute for packages and source,
# one for openapi-gen, then the compile: about 5 minutes on an idle machine,
# 15 while other builds share the cores.

set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/ensure.sh"

CHECK_ONLY=false
SOURCE_ONLY=false
case ${1:-} in
  --check) CHECK_ONLY=true ;;
  --source) SOURCE_ONLY=true ;;
  "") ;;
  *) echo "usage: $0 [--check | --source]" >&2; exit 2 ;;
esac

readonly K8S_VERSION=v1.20.2
readonly K8S_MAJOR=1
readonly K8S_MINOR=20
# Upstream commit of v1.20.2; the source tree records it in component-base.
readonly K8S_COMMIT=faecb196815e248d3ecfb03c680a4507229c2a56
readonly SRC_PACKAGE=kubernetes
readonly SRC_VERSION=1.20.5+really1.20.2-1.1+deb12u1
readonly SUITE=bookworm
readonly MIRROR=${WATCHLIFE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
readonly KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

set_cache_root
readonly DEST=$CACHE/kube-apiserver-$K8S_VERSION
readonly BIN=$DEST/kube-apiserver
readonly GO_BUILD_CACHE=$CACHE/go-build

# Debian packages. The tests need etcd at run time (and openssl for
# real-cluster-pki.sh); the rest is only needed to build kube-apiserver.
# dpkg-dev brings dpkg-source (with patch and xz-utils) for unpacking the
# source package; the keyring verifies the deb-src index.
readonly RUNTIME_PACKAGES=(etcd-server etcd-client openssl)
readonly BUILD_PACKAGES=(golang-go golang-github-modern-go-reflect2-dev dpkg-dev debian-archive-keyring)
readonly SOURCE_PACKAGES=(dpkg-dev debian-archive-keyring)
# The unpacked tree, and the markers that say it is whole: `.prepared` after a
# full preparation for the build, `.unpacked` after --source.
readonly KTREE_PATH=$DEST/build/gopath/src/k8s.io/kubernetes
readonly UNPACKED=$DEST/build/.unpacked

log_as real-cluster

# Does the cached binary run and report the expected version?
binary_ok() {
  [[ -x $BIN ]] || return 1
  local out
  out=$("$BIN" --version 2>/dev/null) || return 1
  [[ $out == *"$K8S_VERSION"* ]]
}

# Prints those of the given packages that are not fully installed (a package
# that is only unpacked, say by an apt still running elsewhere, counts as missing).
missing_packages() {
  local pkg status
  local -A installed=()
  # One dpkg-query for all of them; unknown packages make it exit non-zero.
  while IFS=' ' read -r pkg status; do
    if [[ $status == installed ]]; then installed[$pkg]=1; fi
  done < <(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "$@" 2>/dev/null || true)
  for pkg in "$@"; do
    [[ -n ${installed[$pkg]:-} ]] || printf '%s\n' "$pkg"
  done
}

print_paths() {
  local etcd etcdctl
  etcd=$(command -v etcd) || die "etcd is not on PATH although etcd-server is installed"
  etcdctl=$(command -v etcdctl) || die "etcdctl is not on PATH although etcd-client is installed"
  log "etcd:           $etcd"
  log "etcdctl:        $etcdctl"
  log "kube-apiserver: $BIN"
  printf 'ETCD=%s\nETCDCTL=%s\nKUBE_APISERVER=%s\n' "$etcd" "$etcdctl" "$BIN"
}

# ---------------------------------------------------------------------------
# Fast path: everything already there. No lock, no apt, no network.
# ---------------------------------------------------------------------------
command -v dpkg-query >/dev/null || die "this script expects a Debian (bookworm) system with dpkg"

source_ok() {
  [[ -f $DEST/build/.prepared || -f $UNPACKED ]] && [[ -f $KTREE_PATH/api/openapi-spec/swagger.json ]]
}

if [[ $SOURCE_ONLY == true ]] && source_ok; then
  printf 'KUBE_SOURCE=%s\n' "$KTREE_PATH"
  exit 0
fi

if [[ $SOURCE_ONLY == false && -z $(missing_packages "${RUNTIME_PACKAGES[@]}") ]] && binary_ok; then
  [[ $CHECK_ONLY == true ]] || print_paths
  exit 0
fi
[[ $CHECK_ONLY == false ]] || exit 1

# ---------------------------------------------------------------------------
# Slow path, serialised between concurrent callers.
# ---------------------------------------------------------------------------
lock_or_wait "$DEST" "preparing the cluster binaries"

# --- Debian packages --------------------------------------------------------

if [[ $SOURCE_ONLY == true ]]; then
  NEEDED=("${SOURCE_PACKAGES[@]}")
else
  NEEDED=("${RUNTIME_PACKAGES[@]}")
  if ! binary_ok; then
    NEEDED+=("${BUILD_PACKAGES[@]}")
  fi
fi
mapfile -t MISSING < <(missing_packages "${NEEDED[@]}")
if ((${#MISSING[@]} > 0)); then
  if ((EUID != 0)); then
    die "missing Debian packages: ${MISSING[*]}
    install them as root first:
      apt-get update && apt-get install -y --no-install-recommends ${MISSING[*]}"
  fi
  log "installing Debian packages: ${MISSING[*]} (about a minute)"
  apt_get update || die "apt-get update failed"
  apt_get install -y --no-install-recommends "${MISSING[@]}" || die "apt-get install ${MISSING[*]} failed"
  mapfile -t MISSING < <(missing_packages "${NEEDED[@]}")
  ((${#MISSING[@]} == 0)) || die "still not installed after apt-get: ${MISSING[*]}"
  log "packages installed ($(elapsed))"
fi

if [[ $SOURCE_ONLY == true ]] && source_ok; then
  # Someone else unpacked it while we waited for the lock.
  printf 'KUBE_SOURCE=%s\n' "$KTREE_PATH"
  exit 0
fi
if [[ $SOURCE_ONLY == false ]] && binary_ok; then
  # Someone else built it while we waited for the lock, or only runtime packages were missing.
  print_paths
  exit 0
fi

# --- kube-apiserver from Debian's source package ----------------------------


log "building kube-apiserver $K8S_VERSION from Debian's source package: about 7 minutes on 2 cores (up to 17 while other builds run), once per machine"
log "cache: $DEST (Go build cache: $GO_BUILD_CACHE, 1-1.5 GB)"

# Stage 1: the source package files (.dsc, orig tarball with vendor/, Debian
# patches; ~34 MB). Kept for good: a rebuild then needs no network at all.
SRC_DIR=$DEST/source
find_dsc() { compgen -G "$SRC_DIR/${SRC_PACKAGE}_*really1.20.2*.dsc" | head -n1 || true; }

if [[ -z $(find_dsc) ]]; then
  log "fetching Debian source package $SRC_PACKAGE $SRC_VERSION (~34 MB)"
  # A private apt configuration with just one deb-src line: the system's
  # sources.list and package lists stay exactly as they are.
  APT_DIR=$DEST/apt
  rm -rf "$APT_DIR" "$SRC_DIR.partial"
  mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/sources.list.d" "$SRC_DIR.partial"
  printf 'deb-src [signed-by=%s] %s %s main\n' "$KEYRING" "$MIRROR" "$SUITE" >"$APT_DIR/sources.list"
  APT_PRIVATE=(
    -o "Dir::Etc::SourceList=$APT_DIR/sources.list"
    -o "Dir::Etc::SourceParts=$APT_DIR/sources.list.d"
    -o "Dir::State::Lists=$APT_DIR/lists"
    -o "Dir::Cache::pkgcache="
    -o "Dir::Cache::srcpkgcache="
  )
  add_root_sandbox APT_PRIVATE

  apt-get -q "${APT_PRIVATE[@]}" update >&2 || die "apt-get update (private deb-src list) failed"
  (
    cd "$SRC_DIR.partial"
    if ! apt-get -q "${APT_PRIVATE[@]}" source --download-only "$SRC_PACKAGE=$SRC_VERSION" >&2; then
      # A later Debian point release may have replaced that exact revision;
      # any revision of the same upstream 1.20.2 tree will do.
      log "revision $SRC_VERSION not available; trying the archive's current $SRC_PACKAGE"
      apt-get -q "${APT_PRIVATE[@]}" source --download-only "$SRC_PACKAGE" >&2
    fi
  ) || die "apt-get source $SRC_PACKAGE failed"
  compgen -G "$SRC_DIR.partial/${SRC_PACKAGE}_*really1.20.2*.dsc" >/dev/null \
    || die "the archive's $SRC_PACKAGE source is not the upstream 1.20.2 tree: $(ls "$SRC_DIR.partial")"
  rm -rf "$SRC_DIR"
  mv "$SRC_DIR.partial" "$SRC_DIR"
  rm -rf "$APT_DIR"
  log "source package downloaded ($(elapsed))"
fi
DSC=$(find_dsc)

if [[ $SOURCE_ONLY == true ]]; then
  rm -rf "$DEST/build"
  mkdir -p "$(dirname "$KTREE_PATH")"
  log "unpacking $(basename "$DSC") for the demo API's schemas"
  # apt checked the files against the signed archive index already.
  dpkg-source --no-check -x "$DSC" "$KTREE_PATH" >/dev/null \
    || die "dpkg-source -x $DSC failed"
  touch "$UNPACKED"
  log "source tree unpacked ($(elapsed))"
  printf 'KUBE_SOURCE=%s\n' "$KTREE_PATH"
  exit 0
fi

# Only the build needs Go (and the reflect2 fix): --source never gets here,
# so it works before golang-go is installed.
GO=${WATCHLIFE_GO:-/usr/lib/go/bin/go}
[[ -x $GO ]] || GO=$(command -v go) || die "no go binary found (golang-go should provide /usr/lib/go/bin/go)"
readonly GO
readonly REFLECT2_SRC=/usr/share/gocode/src/github.com/modern-go/reflect2
[[ -f $REFLECT2_SRC/reflect2.go ]] || die "$REFLECT2_SRC is missing (golang-github-modern-go-reflect2-dev)"

# Stage 2: unpack into a GOPATH. The path stays the same on every build so
# Go's build cache (which keys on package directories) keeps hitting.
#
# The prepared tree (~330 MB) is kept after a successful build, on purpose:
# deleting its ~28,000 files took 30-80 s on these disks, more than unpacking
# it again costs, and a kept tree lets a rebuild (say, after the binary was
# removed) skip straight to the compile. A marker file records that the tree
# was completely prepared from this source package with this recipe; without
# it (an interrupted run) the tree is thrown away and made again.
BUILD_DIR=$DEST/build
export GOPATH=$BUILD_DIR/gopath
readonly KTREE=$GOPATH/src/k8s.io/kubernetes
readonly PREPARED=$BUILD_DIR/.prepared
readonly RECIPE="$(basename "$DSC") reflect2-from-debian openapi-gen v1"

# Go environment: GOPATH mode, as v1.20's own build scripts used (module mode
# with -mod=vendor fails on this tree), nothing from the network, static binary.
export GO111MODULE=off GOPROXY=off GOFLAGS= CGO_ENABLED=0 GOWORK=off GOTOOLCHAIN=local
export GOCACHE=$GO_BUILD_CACHE GOENV=off
unset GOROOT GOBIN GOOS GOARCH GOTMPDIR
mkdir -p "$GOCACHE"

prepare_tree() {
  rm -rf "$BUILD_DIR"
  mkdir -p "$(dirname "$KTREE")"
  log "unpacking $(basename "$DSC") and applying Debian's patches"
  # apt checked the files against the signed archive index already.
  dpkg-source --no-check -x "$DSC" "$KTREE" >/dev/null \
    || die "dpkg-source -x $DSC failed"

  # The vendored reflect2 v1.0.1 crashes at run time with Go >= 1.18; Debian
  # ships v1.0.2, which works, as source.
  rm -rf "$KTREE/vendor/github.com/modern-go/reflect2"
  cp -r "$REFLECT2_SRC" "$KTREE/vendor/github.com/modern-go/reflect2"

  cd "$KTREE"

  # Stage 3: the one generated file the source package lacks.
  log "generating pkg/generated/openapi/zz_generated.openapi.go with the tree's openapi-gen (1-2 minutes)"
  "$GO" build -o "$BUILD_DIR/openapi-gen" k8s.io/kubernetes/vendor/k8s.io/kube-openapi/cmd/openapi-gen \
    || die "building openapi-gen failed"

  # Same package set as the tree's Makefile.generated_files: Go files outside
  # vendor/ (staging/src/X counts as vendor/X) that carry "// +k8s:" tags and
  # mention +k8s:openapi-gen=, minus code-generator's and sample-apiserver's.
  OPENAPI_PKGS=$(
    find -H . \( -path ./_\* -o -path ./.\* -o -path ./vendor -o -path ./debian \) -prune \
      -o -type f -name '*.go' -print0 \
      | xargs -0 grep -lZ --color=never '^// *+k8s:' \
      | xargs -0 grep -l --color=never '+k8s:openapi-gen=' \
      | sed -e 's|/[^/]*$||' -e 's|^\./||' -e 's|^staging/src/|vendor/|' \
      | grep -v -e '^vendor/k8s.io/code-generator/' -e '^vendor/k8s.io/sample-apiserver/' \
      | LC_ALL=C sort -u \
      | sed 's|^|k8s.io/kubernetes/|' \
      | paste -sd, - \
      || true # grep exits 1 for a batch of files without a match; emptiness is checked below
  )
  [[ -n $OPENAPI_PKGS ]] || die "found no packages tagged +k8s:openapi-gen="
  log "openapi-gen over $(tr ',' '\n' <<<"$OPENAPI_PKGS" | wc -l) packages"
  "$BUILD_DIR/openapi-gen" \
    --logtostderr \
    -i "$OPENAPI_PKGS" \
    -p k8s.io/kubernetes/pkg/generated/openapi \
    -O zz_generated.openapi \
    -h vendor/k8s.io/code-generator/hack/boilerplate.go.txt \
    -r "$BUILD_DIR/openapi-violations.list" \
    2>"$BUILD_DIR/openapi-gen.log" \
    || { tail -n 30 "$BUILD_DIR/openapi-gen.log" >&2; die "openapi-gen failed (log: $BUILD_DIR/openapi-gen.log)"; }
  [[ -s pkg/generated/openapi/zz_generated.openapi.go ]] || die "openapi-gen wrote no zz_generated.openapi.go"
  # Upstream keeps the known API-rule violations in a list; matching it is a
  # good sign the package set above is the one upstream used.
  if ! cmp -s "$BUILD_DIR/openapi-violations.list" api/api-rules/violation_exceptions.list; then
    log "note: openapi-gen's API-rule report differs from api/api-rules/violation_exceptions.list (harmless for tests)"
  fi
  log "openapi generated ($(elapsed))"

  printf '%s\n' "$RECIPE" >"$PREPARED"
}

if [[ -f $PREPARED && $(<"$PREPARED") == "$RECIPE" ]]; then
  log "reusing the prepared source tree in $KTREE"
else
  prepare_tree
fi
cd "$KTREE"

# Stage 4: kube-apiserver itself.
log "compiling kube-apiserver (the long part: about 5 minutes cold on 2 idle cores, 15 on busy ones; seconds with a warm Go cache)"
VERSION_LDFLAGS=()
for pkg in k8s.io/kubernetes/vendor/k8s.io/component-base/version \
           k8s.io/kubernetes/vendor/k8s.io/client-go/pkg/version; do
  VERSION_LDFLAGS+=(
    "-X $pkg.gitVersion=$K8S_VERSION"
    "-X $pkg.gitMajor=$K8S_MAJOR"
    "-X $pkg.gitMinor=$K8S_MINOR"
    "-X $pkg.gitCommit=$K8S_COMMIT"
    "-X $pkg.gitTreeState=dirty"
    "-X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  )
done
# -s -w: no symbol table or DWARF, which only a debugger reads and which the
# linker takes a good part of its time writing (stack traces still work).
"$GO" build -tags selinux,notest -ldflags "-s -w ${VERSION_LDFLAGS[*]}" \
  -o "$BUILD_DIR/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver \
  || die "go build kube-apiserver failed"

version=$("$BUILD_DIR/kube-apiserver" --version 2>&1) || die "the new kube-apiserver does not run: $version"
[[ $version == *"$K8S_VERSION"* ]] || die "the new kube-apiserver reports '$version', expected $K8S_VERSION"

# Same file system, so this rename is atomic: readers see no binary or the
# complete new one, never a partial file.
mv -f "$BUILD_DIR/kube-apiserver" "$BIN"
log "built $version ($(elapsed))"

binary_ok || die "$BIN does not run after the build"
print_paths
