#!/usr/bin/env bash
# Builds the watchlife OCI image with buildah (no daemon), as `make image` does:
#   1. the release binary `make build` built (rustls only, so no OpenSSL; the
#      browser app embedded; mimalloc as its allocator), the very binary that
#      BENCHMARKS.md measures;
#   2. deploy/Containerfile over an empty base: the binary, the dynamic loader
#      and the few libraries it links (`ldd`: libc, libm, libgcc_s), copied
#      from the machine that built it, and Debian's CA bundle;
#   3. the tag printed on the last line, the one deploy/kustomization.yaml names.
#
# Installs what is missing once per machine (needs root or sudo): Debian's
# buildah and ca-certificates.
#
# Environment: IMAGE (default localhost/watchlife:<workspace version>),
# TARGET_DIR (cargo's target directory), BUILDAH_STORAGE_DRIVER (default vfs:
# it needs no kernel overlay support, which containers often lack).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
say() { echo "[image] $*" >&2; }
. "$ROOT/scripts/lib/ensure.sh"
log_as image

VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
IMAGE=${IMAGE:-localhost/watchlife:$VERSION}
TARGET_DIR=${TARGET_DIR:-$ROOT/target}
DRIVER=${BUILDAH_STORAGE_DRIVER:-vfs}

# --- tools ------------------------------------------------------------------
missing=()
command -v buildah >/dev/null || missing+=(buildah)
CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
[ -s "$CA_BUNDLE" ] || missing+=(ca-certificates)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then SUDO=; elif command -v sudo >/dev/null; then SUDO=sudo; else
        say "the image needs Debian packages: ${missing[*]}; install them as root (apt-get install ${missing[*]})"
        exit 1
    fi
    say "installing ${missing[*]} from Debian (about a minute, once)"
    apt_get update -qq || { say "apt-get update failed: see above"; exit 1; }
    apt_get install -y -qq "${missing[@]}" >/dev/null \
        || { say "could not install ${missing[*]}: see above"; exit 1; }
fi

# --- the binary and what it links ----------------------------------------------
BIN="$TARGET_DIR/release/watchlife"
[ -x "$BIN" ] || { say "$BIN is not built: run 'make image', which builds it first"; exit 1; }
# rustls only: an OpenSSL in the graph would be one more library to carry,
# and a second TLS stack to keep patched.
if cargo tree -p watchlife -e normal -i openssl-sys >/dev/null 2>&1; then
    say "openssl-sys is in the binary's dependencies: only rustls may be"
    exit 1
fi

CONTEXT="$TARGET_DIR/image-context"
ROOTFS="$CONTEXT/rootfs"
# The last build's folders are read-only (below): writable again to go.
[ -d "$CONTEXT" ] && chmod -R u+w "$CONTEXT"
rm -rf "$CONTEXT"
mkdir -p "$ROOTFS/etc/ssl/certs"
# Symbols are for debuggers, which the image does not carry.
strip -o "$ROOTFS/watchlife" "$BIN"
cp "$CA_BUNDLE" "$ROOTFS/etc/ssl/certs/ca-certificates.crt"
# The loader and every library, at the path the binary asks for them by:
# `ldd` prints "name => /path (address)" for a library and "/path (address)"
# for the loader. The virtual vDSO has no file and is skipped.
libraries=$(LC_ALL=C ldd "$BIN" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
[ -n "$libraries" ] || { say "ldd names no library for $BIN: is it a dynamic ELF binary of this machine?"; exit 1; }
for library in $libraries; do
    mkdir -p "$ROOTFS$(dirname "$library")"
    cp -L "$library" "$ROOTFS$library"
done
# Owned by root (the Containerfile's --chown) and writable by nobody: the
# image's user cannot change a byte of it, whatever the mount says.
find "$ROOTFS" -type d -exec chmod 0555 {} +
find "$ROOTFS" -type f -exec chmod 0444 {} +
chmod 0555 "$ROOTFS/watchlife"
for library in $libraries; do chmod 0555 "$ROOTFS$library"; done

# --- the image --------------------------------------------------------------
REVISION=$(git rev-parse HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain 2>/dev/null | head -n1)" ]; then REVISION="$REVISION-dirty"; fi
SOURCE=$(sed -n 's/^repository = "\(.*\)"$/\1/p' Cargo.toml | head -n1)

old=$(buildah --storage-driver "$DRIVER" images --noheading --format '{{.ID}}' "$IMAGE" 2>/dev/null || true)
say "buildah bud -t $IMAGE (storage driver $DRIVER)"
buildah --storage-driver "$DRIVER" bud --quiet \
    -f deploy/Containerfile \
    --build-arg "VERSION=$VERSION" \
    --build-arg "REVISION=$REVISION" \
    --build-arg "CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    --build-arg "SOURCE=$SOURCE" \
    -t "$IMAGE" "$CONTEXT" >/dev/null
new=$(buildah --storage-driver "$DRIVER" images --noheading --format '{{.ID}}' "$IMAGE")
# The image this tag named before is nobody's now: remove it, so that
# rebuilds do not pile up copies in the vfs store.
if [ -n "$old" ] && [ "$old" != "$new" ]; then
    buildah --storage-driver "$DRIVER" rmi "$old" >/dev/null 2>&1 || true
fi

size=$(buildah --storage-driver "$DRIVER" images --noheading --format '{{.Size}}' "$IMAGE")
say "built $IMAGE ($size; the binary alone: $(($(stat -c %s "$ROOTFS/watchlife") / 1024 / 1024)) MiB, stripped)"
say "deploy/kustomization.yaml runs it; to run it elsewhere, push it, e.g.:"
say "  buildah --storage-driver $DRIVER push $IMAGE docker://REGISTRY/watchlife:$VERSION"
if ! grep -q "newTag: \"\?$VERSION\"\?$" deploy/kustomization.yaml; then
    say "deploy/kustomization.yaml does not name tag $VERSION: set images[].newTag to it"
    exit 1
fi
echo "$IMAGE"
