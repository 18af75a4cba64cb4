#!/usr/bin/env bash
# Builds the watchlife OCI image with buildah (no daemon), as `make image` does:
#   1. the static binary: `cargo build --release --target x86_64-unknown-linux-musl`
#      (rustls only, so no OpenSSL; ring's C parts compiled by musl-gcc), with
#      the browser app already in dist/ (make image builds it first);
#   2. deploy/Containerfile over an empty base: the binary and Debian's CA bundle;
#   3. the tag printed on the last line, the one deploy/kustomization.yaml names.
#
# Installs what is missing once per machine (needs root or sudo): Debian's
# buildah, musl-tools and ca-certificates, and the rustup target.
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

MUSL_TARGET=x86_64-unknown-linux-musl
VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
IMAGE=${IMAGE:-localhost/watchlife:$VERSION}
TARGET_DIR=${TARGET_DIR:-$ROOT/target}
DRIVER=${BUILDAH_STORAGE_DRIVER:-vfs}

# --- tools ------------------------------------------------------------------
missing=()
command -v buildah >/dev/null || missing+=(buildah)
command -v musl-gcc >/dev/null || missing+=(musl-tools)
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
if ! rustup target list --installed 2>/dev/null | grep -qx "$MUSL_TARGET"; then
    say "adding the $MUSL_TARGET target (a few seconds)"
    rustup target add "$MUSL_TARGET"
fi

# --- the static binary ------------------------------------------------------
[ -f dist/index.html ] || { say "dist/ has no browser app: run 'make image', which builds it first"; exit 1; }
say "the static binary (cargo build --release --target $MUSL_TARGET; about 10 minutes the first time)"
CC_x86_64_unknown_linux_musl=musl-gcc \
    cargo build --release --target "$MUSL_TARGET" -p watchlife
BIN="$TARGET_DIR/$MUSL_TARGET/release/watchlife"
# Static means no program interpreter: the empty base has no ld.so to offer.
if LC_ALL=C readelf -lW "$BIN" | grep -q 'program interpreter'; then
    say "$BIN asks for a dynamic loader; the image has none"
    exit 1
fi
# rustls only: an OpenSSL in the graph would need a libc and a CA bundle.
if cargo tree -p watchlife --target "$MUSL_TARGET" -e normal -i openssl-sys >/dev/null 2>&1; then
    say "openssl-sys is in the binary's dependencies: only rustls may be"
    exit 1
fi

# --- the image --------------------------------------------------------------
CONTEXT="$TARGET_DIR/image-context"
rm -rf "$CONTEXT"
mkdir -p "$CONTEXT"
# Symbols are for debuggers, which the image does not carry.
strip -o "$CONTEXT/watchlife" "$BIN"
cp "$CA_BUNDLE" "$CONTEXT/ca-certificates.crt"
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
say "built $IMAGE ($size; the binary alone: $(($(stat -c %s "$BIN") / 1024 / 1024)) MiB)"
say "deploy/kustomization.yaml runs it; to run it elsewhere, push it, e.g.:"
say "  buildah --storage-driver $DRIVER push $IMAGE docker://REGISTRY/watchlife:$VERSION"
if ! grep -q "newTag: \"\?$VERSION\"\?$" deploy/kustomization.yaml; then
    say "deploy/kustomization.yaml does not name tag $VERSION: set images[].newTag to it"
    exit 1
fi
echo "$IMAGE"
