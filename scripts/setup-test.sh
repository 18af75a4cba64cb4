#!/usr/bin/env bash
# Installs what the tests need beyond the build tools, once per machine:
# Debian's chromium and chromium-driver for the browser tests, buildah for
# the image, Python's prometheus_client (from PyPI) to parse
# /metrics, and a real etcd and kube-apiserver for the cluster tests. Skipped
# when they are present. Needs root (or sudo) to install; elsewhere it says
# what to install and stops.
set -euo pipefail

say() { echo "[setup] $*"; }
. "$(dirname "$0")/lib/ensure.sh"
log_as setup
missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v chromedriver >/dev/null || missing+=(chromium-driver)
# The image test: buildah builds the image (`make image`).
command -v buildah >/dev/null || missing+=(buildah)
# The docs generators' test builds a Hugo site with Debian's hugo.
command -v hugo >/dev/null || missing+=(hugo)

if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null; then SUDO=sudo; else
            say "the browser and image tests need Debian packages: ${missing[*]}; install them as root (apt-get install ${missing[*]})" >&2
            exit 1
        fi
    else
        SUDO=
    fi
    say "installing ${missing[*]} from Debian (about a minute)"
    apt_get update -qq || { say "apt-get update failed: see above" >&2; exit 1; }
    apt_get install -y -qq "${missing[@]}" >/dev/null \
        || { say "could not install ${missing[*]}: see above" >&2; exit 1; }
fi

# Python's MODULE (PyPI's PACKAGE, by default named as the module), told
# first WHY: into the system's site-packages, else the user's own when pip
# cannot write the system's.
pip_install() {
    local module=$1 why=$2 package=${3:-$1} pip=(python3 -m pip install --quiet --disable-pip-version-check)
    python3 -c "import $module" 2>/dev/null && return
    say "$why: installing it with pip (seconds)"
    "${pip[@]}" "$package" 2>/dev/null \
        || "${pip[@]}" --user "$package" 2>/dev/null \
        || "${pip[@]}" --user --break-system-packages "$package"
}

# The metrics test reads /metrics with the reference parser of the format,
# Python's prometheus_client.
pip_install prometheus_client "the metrics test needs Python's prometheus_client"

# The kubectl compatibility test also drives Python's `kubernetes` client
# against the demo and the real cluster.
pip_install kubernetes "the kubectl compatibility test needs Python's kubernetes client"

# The docs generators' test builds an MkDocs site, its fenced blocks read by
# pymdown-extensions' superfences.
pip_install mkdocs "the docs generators' test needs MkDocs"
pip_install pymdownx "the docs generators' test needs pymdown-extensions" pymdown-extensions

# Runs scripts/NAME.sh, told first WHY when its `--check` says it has work
# to do. Each script reports its own progress; its stdout (where the
# binaries are) is not needed.
here=$(dirname "$0")
ensure() {
    local script=$here/$1.sh why=$2
    "$script" --check 2>/dev/null || say "$why"
    "$script" >/dev/null
}

# etcd and etcdctl from Debian; kube-apiserver v1.20.2 compiled from Debian's
# source package with Debian's Go, cached in ~/.cache/watchlife.
ensure ensure-real-cluster "the cluster tests need a real etcd and kube-apiserver: installing etcd-server, etcd-client and golang-go, then building kube-apiserver v1.20.2 from Debian's source package (about 10 minutes, up to 20 on 2 busy cores; once per machine)"

# The client-go v1.20.2 reference informer of the differential tests, built
# in the same source tree with the same Go cache; cached under ~/.cache/watchlife
# by a hash of its source, so this is instant unless it changed.
ensure ensure-client-go-reference "the differential tests need client-go's informer: building tests/client-go-reference (one to two minutes)"

# A Kubernetes v1.36 apiserver (apiextensions-apiserver), etcd 3.5 and Go
# 1.26 from Debian sid's packages, unpacked into a private root (nothing is
# installed), and the client-go v0.36 reference informer built with them;
# all cached under ~/.cache/watchlife, so this is instant once done.
ensure ensure-modern-cluster "the modern-cluster tests need a v1.36 apiserver: downloading Go 1.26, etcd 3.5 and the Kubernetes v0.36 sources from Debian sid into ~/.cache/watchlife (nothing is installed) and building apiextensions-apiserver (about 6 minutes, up to 12 on 2 busy cores; once per machine)"
ensure ensure-client-go-reference-modern "the modern reference tests need client-go v0.36's informer: building tests/client-go-reference-modern (under a minute)"

# axe-core (npm), the accessibility checker the player's test runs in the
# browser; kept in ~/.cache/watchlife, nothing installed globally.
AXE_VERSION=4.11.0
AXE_DIR=${WATCHLIFE_CACHE:-$HOME/.cache/watchlife}/axe-core-$AXE_VERSION
if [ ! -f "$AXE_DIR/node_modules/axe-core/axe.min.js" ]; then
    command -v npm >/dev/null || { say "npm is needed for axe-core: install Node.js" >&2; exit 1; }
    say "the accessibility test needs axe-core: installing npm's axe-core@$AXE_VERSION into $AXE_DIR (seconds)"
    mkdir -p "$AXE_DIR"
    npm install --silent --no-audit --no-fund --prefix "$AXE_DIR" "axe-core@$AXE_VERSION"
fi

# mdBook, for the docs generators' test (mdbook-watchlife in a real book):
# installed with cargo into ~/.cache/watchlife, once per machine.
ensure ensure-mdbook "the docs generators' test needs mdBook: installing it with cargo into ~/.cache/watchlife (about a minute on 2 cores; once per machine)"
