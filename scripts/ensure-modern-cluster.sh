#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# ensure-modern-cluster.sh: make a Kubernetes v1.36 apiserver, etcd 3.5 and
# Go 1.26 (with the Kubernetes v0.36 libraries as Go source) available for
# watchlife's tests, then print where they are.
#
# Everything comes from Debian unstable ("sid") as packages, through a
# private apt configuration, and nothing is installed on the system: the
# dependency closure of the packages below is downloaded (`apt-get
# download`) and unpacked with `dpkg -x` into a private root. Installing
# from sid would replace the system's C library; unpacking does not, and the
# Go toolchain and etcd run from that root as they are.
#
# The apiserver is `k8s.io/apiextensions-apiserver`: the Kubernetes generic
# apiserver (watch cache, WatchList, consistent reads from the cache) serving
# CustomResourceDefinitions and custom resources on its own. It is compiled
# from the packaged sources in GOPATH mode, as Debian builds them.
#
# Everything lives outside the repository, in
#   ${WATCHLIFE_CACHE:-$HOME/.cache/watchlife}/modern-cluster/
#     root/       the unpacked packages (about 3 GB)
#     VERSIONS    "PACKAGE VERSION" of every unpacked package
#     bin/        the compiled apiserver
#     go-build/   Go's build cache (about 1.5 GB)
# so the expensive part happens once per machine. A later run that finds
# everything in place returns at once. Unstable moves: to take what sid
# carries today, remove that directory and run again.
#
# Output: progress goes to stderr, prefixed "[modern-cluster]", and says
# which package versions it got. On success stdout carries exactly these
# NAME=PATH lines that a caller can parse (or `eval`):
#   MODERN_APISERVER=<cache>/modern-cluster/bin/apiextensions-apiserver
#   MODERN_ETCD=<cache>/modern-cluster/root/usr/bin/etcd
#   MODERN_ETCDCTL=<cache>/modern-cluster/root/usr/bin/etcdctl
#   MODERN_GO=<cache>/modern-cluster/root/usr/lib/go-1.26/bin/go
#   MODERN_GOROOT=<cache>/modern-cluster/root/usr/lib/go-1.26
#   MODERN_GOPATH=<cache>/modern-cluster/root/usr/share/gocode
#   MODERN_GOCACHE=<cache>/modern-cluster/go-build
#   MODERN_VERSIONS=<cache>/modern-cluster/VERSIONS
#
# With --check it only tells, by its exit status, whether everything is in
# place already (0) or a run would download or build something (1).
#
# Environment knobs (all optional):
#   WATCHLIFE_CACHE          cache root (default $HOME/.cache/watchlife)
#   WATCHLIFE_DEBIAN_MIRROR  Debian archive URL (default http://deb.debian.org/debian)
#
# Safe to run many times and from several processes at once (a flock guards
# the work). An interrupted run never leaves a partial root or binary behind:
# each is made beside its final place and renamed into it when whole.
#
# Time on 2 cores, once per machine: a minute or two to download and unpack
# the packages, then 4 minutes to compile on idle cores (up to 10 on busy
# ones); seconds with a warm Go cache.

set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/ensure.sh"

parse_check_option "$@"

# --- What is taken from sid ----------------------------------------------------
# The Go series: its packages are named after it, and it decides GOROOT.
readonly GO_SERIES=1.26
# The Kubernetes library series the tests were written against (the Debian
# packages' upstream versions are 0.MINOR.PATCH for Kubernetes v1.MINOR.PATCH).
# A different version in sid is used all the same, with a warning: the
# binary then reports that version.
readonly K8S_LIB_SERIES=0.36
readonly ETCD_SERIES=3.5
readonly GO_PACKAGES=("golang-$GO_SERIES-go" "golang-$GO_SERIES-src")
readonly K8S_PACKAGES=(golang-k8s-apiextensions-apiserver-dev golang-k8s-apiserver-dev golang-k8s-client-go-dev)
# etcd-client brings etcdctl; it is taken only when sid has it.
readonly ETCD_PACKAGES=(etcd-server)
readonly ETCD_OPTIONAL_PACKAGES=(etcd-client)
# The package whose version names the apiserver's version.
readonly VERSION_PACKAGE=golang-k8s-apiextensions-apiserver-dev
readonly APISERVER_PKG=k8s.io/apiextensions-apiserver
readonly VERSION_PKG=k8s.io/component-base/version

readonly SUITE=sid
readonly MIRROR=${WATCHLIFE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
readonly KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
# Part of the markers: changing how the root or the binary is made must make
# them again.
readonly ROOT_RECIPE="sid closure of ${GO_PACKAGES[*]} ${K8S_PACKAGES[*]} ${ETCD_PACKAGES[*]} (+${ETCD_OPTIONAL_PACKAGES[*]}) dpkg-x v1"
readonly BUILD_RECIPE="gopath GO111MODULE=off CGO_ENABLED=0 $APISERVER_PKG ldflags-version v1"

set_cache_root
readonly DEST=$CACHE/modern-cluster
readonly ROOT=$DEST/root
readonly ROOT_MARKER=$DEST/.root-complete
readonly VERSIONS=$DEST/VERSIONS
readonly BIN=$DEST/bin/apiextensions-apiserver
readonly BIN_MARKER=$DEST/.bin-complete
readonly GOROOT_DIR=$ROOT/usr/lib/go-$GO_SERIES
readonly GO=$GOROOT_DIR/bin/go
readonly GOPATH_DIR=$ROOT/usr/share/gocode
readonly GO_BUILD_CACHE=$DEST/go-build
readonly ETCD=$ROOT/usr/bin/etcd
readonly ETCDCTL=$ROOT/usr/bin/etcdctl

log_as modern-cluster

root_ok() {
  [[ -f $ROOT_MARKER && $(<"$ROOT_MARKER") == "$ROOT_RECIPE" && -x $GO && -x $ETCD && -x $ETCDCTL && -s $VERSIONS ]]
}

# The built binary belongs to this root (the marker names the package
# version it was built from) and runs.
binary_ok() {
  [[ -x $BIN && -f $BIN_MARKER && $(<"$BIN_MARKER") == "$BUILD_RECIPE $(version_of "$VERSION_PACKAGE")" ]] || return 1
  "$BIN" --help >/dev/null 2>&1
}

# The version of an unpacked package, from VERSIONS.
version_of() {
  awk -v p="$1" '$1 == p { print $2 }' "$VERSIONS" 2>/dev/null
}

# v1.36.4 for the package version 0.36.4-1.
k8s_version() {
  local upstream
  upstream=$(version_of "$VERSION_PACKAGE")
  upstream=${upstream#*:}
  upstream=${upstream%%-*}
  upstream=${upstream%%[+~]*}
  [[ $upstream =~ ^0\.([0-9]+)\.([0-9]+)$ ]] || die "cannot tell the Kubernetes version from $VERSION_PACKAGE $upstream"
  printf 'v1.%s.%s\n' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
}

print_versions() {
  local pkg
  for pkg in "${GO_PACKAGES[@]}" "${K8S_PACKAGES[@]}" golang-k8s-api-dev golang-k8s-apimachinery-dev \
             "${ETCD_PACKAGES[@]}" "${ETCD_OPTIONAL_PACKAGES[@]}"; do
    log "  $pkg $(version_of "$pkg")"
  done
}

print_paths() {
  log "apiserver $(k8s_version) (from $VERSION_PACKAGE $(version_of "$VERSION_PACKAGE")), etcd $(version_of etcd-server), go $(version_of "golang-$GO_SERIES-go")"
  printf 'MODERN_APISERVER=%s\nMODERN_ETCD=%s\nMODERN_ETCDCTL=%s\nMODERN_GO=%s\nMODERN_GOROOT=%s\nMODERN_GOPATH=%s\nMODERN_GOCACHE=%s\nMODERN_VERSIONS=%s\n' \
    "$BIN" "$ETCD" "$ETCDCTL" "$GO" "$GOROOT_DIR" "$GOPATH_DIR" "$GO_BUILD_CACHE" "$VERSIONS"
}

# ---------------------------------------------------------------------------
# Fast path: everything already there. No lock, no apt, no network.
# ---------------------------------------------------------------------------
if root_ok && binary_ok; then
  [[ $CHECK_ONLY == true ]] || print_paths
  exit 0
fi
[[ $CHECK_ONLY == false ]] || exit 1

for tool in apt-get apt-cache dpkg-deb flock; do
  command -v "$tool" >/dev/null || die "this script expects a Debian system ($tool is missing)"
done
[[ -f $KEYRING ]] || die "$KEYRING is missing (Debian's debian-archive-keyring package)"

# ---------------------------------------------------------------------------
# Slow path, serialised between concurrent callers.
# ---------------------------------------------------------------------------
lock_or_wait "$DEST" "preparing the modern cluster"

# --- The private root from sid's packages -------------------------------------

make_root() {
  local apt_dir=$DEST/apt debs=$DEST/debs.partial partial=$DEST/root.partial
  rm -rf "$apt_dir" "$debs" "$partial"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$debs" "$partial"
  printf 'deb [signed-by=%s] %s %s main\n' "$KEYRING" "$MIRROR" "$SUITE" >"$apt_dir/sources.list"
  : >"$apt_dir/status"
  # Only these files: the system's sources, lists, caches and dpkg status
  # stay out of it (an empty status makes the closure complete, as if
  # nothing were installed).
  local apt_private=(
    -o "Dir::Etc::SourceList=$apt_dir/sources.list"
    -o "Dir::Etc::SourceParts=-"
    -o "Dir::State::Lists=$apt_dir/lists"
    -o "Dir::State::status=$apt_dir/status"
    -o "Dir::Cache=$apt_dir/cache"
  )
  add_root_sandbox apt_private

  local attempt
  for attempt in 1 2 3 4 5; do
    if apt-get -q "${apt_private[@]}" update >&2; then break; fi
    ((attempt < 5)) || die "apt-get update (private $SUITE list) failed"
    log "apt-get update failed (attempt $attempt of 5); retrying in 15s"
    sleep 15
  done

  local wanted=("${GO_PACKAGES[@]}" "${K8S_PACKAGES[@]}" "${ETCD_PACKAGES[@]}") pkg
  for pkg in "${ETCD_OPTIONAL_PACKAGES[@]}"; do
    if apt-cache "${apt_private[@]}" show "$pkg" >/dev/null 2>&1; then
      wanted+=("$pkg")
    else
      log "$SUITE has no $pkg; going on without it"
    fi
  done

  # The closure: every package these depend on, recursively (alternatives
  # and the providers of virtual packages included); virtual names, which
  # apt-cache prints in <>, are not packages to download.
  local closure
  mapfile -t closure < <(
    apt-cache "${apt_private[@]}" depends --recurse --no-recommends --no-suggests \
      --no-conflicts --no-breaks --no-replaces --no-enhances "${wanted[@]}" \
      | grep -v -e '^ ' -e '^<' | LC_ALL=C sort -u
  )
  ((${#closure[@]} > 0)) || die "apt-cache depends found no packages"
  log "downloading ${#closure[@]} packages from $SUITE (about 400 MB; wanted: ${wanted[*]})"
  for attempt in 1 2 3 4 5; do
    if (cd "$debs" && apt-get -qq "${apt_private[@]}" download "${closure[@]}" >&2); then break; fi
    ((attempt < 5)) || die "apt-get download failed"
    log "apt-get download failed (attempt $attempt of 5); retrying in 15s"
    sleep 15
  done
  log "downloaded ($(elapsed)); unpacking into $ROOT"

  local deb
  : >"$partial.versions"
  for deb in "$debs"/*.deb; do
    dpkg-deb -x "$deb" "$partial" || die "dpkg-deb -x $deb failed"
    dpkg-deb --show --showformat='${Package} ${Version}\n' "$deb" >>"$partial.versions"
  done

  # Absolute symbolic links point into the system's /; inside the private
  # root they must point into the root (where `partial` will be renamed to).
  local link target
  while IFS= read -r -d '' link; do
    target=$(readlink "$link")
    ln -sfn "$ROOT$target" "$link"
  done < <(find "$partial" -type l -lname '/*' -print0)

  [[ -x $partial/usr/lib/go-$GO_SERIES/bin/go ]] || die "no go in the unpacked golang-$GO_SERIES-go"
  [[ -x $partial/usr/bin/etcd ]] || die "no /usr/bin/etcd in the unpacked etcd-server"
  if [[ ! -x $partial/usr/bin/etcdctl ]]; then
    die "no etcdctl in the unpacked packages (neither etcd-client nor etcd-server ships one)"
  fi

  # Replace the root whole, then record what it holds.
  rm -rf "$ROOT" "$BIN_MARKER"
  mv "$partial" "$ROOT"
  LC_ALL=C sort "$partial.versions" >"$VERSIONS"
  rm -f "$partial.versions"
  printf '%s\n' "$ROOT_RECIPE" >"$ROOT_MARKER"
  # The .debs and apt's lists are of no more use (about 400 MB).
  rm -rf "$debs" "$apt_dir"
  log "unpacked $(wc -l <"$VERSIONS") packages ($(elapsed)); versions in $VERSIONS"
}

if root_ok; then
  log "reusing the unpacked packages in $ROOT"
else
  rm -f "$ROOT_MARKER"
  make_root
fi
log "package versions (from $SUITE):"
print_versions
got=$(version_of "$VERSION_PACKAGE")
if [[ $got != "$K8S_LIB_SERIES".* ]]; then
  log "WARNING: $SUITE carries $VERSION_PACKAGE $got, not $K8S_LIB_SERIES.x: the tests were written against $K8S_LIB_SERIES"
fi
got=$(version_of etcd-server)
if [[ $got != "$ETCD_SERIES".* ]]; then
  log "WARNING: $SUITE carries etcd-server $got, not $ETCD_SERIES.x"
fi

if binary_ok; then
  # Someone else built it while we waited for the lock.
  print_paths
  exit 0
fi

# --- The apiserver ----------------------------------------------------------

K8S_VERSION=$(k8s_version)
readonly K8S_VERSION
[[ $K8S_VERSION =~ ^v([0-9]+)\.([0-9]+)\. ]]
readonly K8S_MAJOR=${BASH_REMATCH[1]} K8S_MINOR=${BASH_REMATCH[2]}

# Go environment: GOPATH mode over the packages' sources, as Debian builds
# them; nothing from the network; a static binary.
export GOROOT=$GOROOT_DIR GOPATH=$GOPATH_DIR
export GO111MODULE=off GOPROXY=off GOFLAGS= CGO_ENABLED=0 GOWORK=off GOTOOLCHAIN=local
export GOCACHE=$GO_BUILD_CACHE GOENV=off
unset GOBIN GOOS GOARCH GOTMPDIR
mkdir -p "$GOCACHE" "$DEST/bin"

log "compiling $APISERVER_PKG as $K8S_VERSION with go $("$GO" env GOVERSION): about 4 minutes cold on 2 idle cores, up to 10 on busy ones; seconds with a warm Go cache"
# Without the version, /version says v0.0.0-master, which kubectl and other
# clients cannot parse.
# -s -w: no symbol table or DWARF, which only a debugger reads and which the
# linker takes a good part of its time writing (stack traces still work).
LDFLAGS="-s -w -X $VERSION_PKG.gitVersion=$K8S_VERSION -X $VERSION_PKG.gitMajor=$K8S_MAJOR -X $VERSION_PKG.gitMinor=$K8S_MINOR"
LDFLAGS+=" -X $VERSION_PKG.gitTreeState=clean -X $VERSION_PKG.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
PARTIAL=$DEST/bin/.partial-$$
trap 'rm -f "$PARTIAL"' EXIT
(cd "$GOPATH_DIR/src/$APISERVER_PKG" && "$GO" build -ldflags "$LDFLAGS" -o "$PARTIAL" "$APISERVER_PKG") \
  || die "go build $APISERVER_PKG failed"
"$PARTIAL" --help >/dev/null 2>&1 || die "the new apiserver does not run"

# Same file system, so this rename is atomic: readers see no binary or the
# complete new one, never a partial file.
mv -f "$PARTIAL" "$BIN"
trap - EXIT
printf '%s\n' "$BUILD_RECIPE $(version_of "$VERSION_PACKAGE")" >"$BIN_MARKER"
log "built $BIN ($(elapsed))"

binary_ok || die "$BIN does not run after the build"
print_paths
