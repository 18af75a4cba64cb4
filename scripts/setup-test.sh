#!/usr/bin/env bash
# Installs what the tests need beyond the build tools, once per machine:
# Debian's chromium and chromium-driver for the browser tests, buildah and
# musl-tools for the image, Python's prometheus_client (from PyPI) to parse
# /metrics, and a real etcd and kube-apiserver for the cluster tests. Skipped
# when they are present. Needs root (or sudo) to install; elsewhere it says
# what to install and stops.
set -euo pipefail

say() { echo "[setup] $*"; }
missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v chromedriver >/dev/null || missing+=(chromium-driver)
# The image test: buildah builds the image (`make image`), musl-gcc compiles
# ring's C parts for the static binary.
command -v buildah >/dev/null || missing+=(buildah)
command -v musl-gcc >/dev/null || missing+=(musl-tools)

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
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
    $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null
fi

# The metrics test reads /metrics with the reference parser of the format,
# Python's prometheus_client (PyPI; the user's own site-packages when pip
# cannot write the system's).
if ! python3 -c 'import prometheus_client' 2>/dev/null; then
    say "the metrics test needs Python's prometheus_client: installing it with pip (seconds)"
    python3 -m pip install --quiet --disable-pip-version-check prometheus_client 2>/dev/null \
        || python3 -m pip install --quiet --disable-pip-version-check --user prometheus_client 2>/dev/null \
        || python3 -m pip install --quiet --disable-pip-version-check --user --break-system-packages prometheus_client
fi

# The kubectl compatibility test also drives Python's `kubernetes` client
# (PyPI) against the demo and the real cluster.
if ! python3 -c 'import kubernetes' 2>/dev/null; then
    say "the kubectl compatibility test needs Python's kubernetes client: installing it with pip (seconds)"
    python3 -m pip install --quiet --disable-pip-version-check kubernetes 2>/dev/null \
        || python3 -m pip install --quiet --disable-pip-version-check --user kubernetes 2>/dev/null \
        || python3 -m pip install --quiet --disable-pip-version-check --user --break-system-packages kubernetes
fi

# etcd and etcdctl from Debian; kube-apiserver v1.20.2 compiled from Debian's
# source package with Debian's Go, cached in ~/.cache/watchlife. The script
# reports its own progress; its stdout (where the binaries are) is not needed.
here=$(dirname "$0")
if ! "$here/ensure-real-cluster.sh" --check 2>/dev/null; then
    say "the cluster tests need a real etcd and kube-apiserver: installing etcd-server, etcd-client and golang-go, then building kube-apiserver v1.20.2 from Debian's source package (about 10 minutes, up to 20 on 2 busy cores; once per machine)"
fi
"$here/ensure-real-cluster.sh" >/dev/null

# The client-go v1.20.2 reference informer of the differential tests, built
# in the same source tree with the same Go cache; cached under ~/.cache/watchlife
# by a hash of its source, so this is instant unless it changed.
if ! "$here/ensure-client-go-reference.sh" --check 2>/dev/null; then
    say "the differential tests need client-go's informer: building tests/client-go-reference (one to two minutes)"
fi
"$here/ensure-client-go-reference.sh" >/dev/null

# A Kubernetes v1.36 apiserver (apiextensions-apiserver), etcd 3.5 and Go
# 1.26 from Debian sid's packages, unpacked into a private root (nothing is
# installed), and the client-go v0.36 reference informer built with them;
# all cached under ~/.cache/watchlife, so this is instant once done.
if ! "$here/ensure-modern-cluster.sh" --check 2>/dev/null; then
    say "the modern-cluster tests need a v1.36 apiserver: downloading Go 1.26, etcd 3.5 and the Kubernetes v0.36 sources from Debian sid into ~/.cache/watchlife (nothing is installed) and building apiextensions-apiserver (about 6 minutes, up to 12 on 2 busy cores; once per machine)"
fi
"$here/ensure-modern-cluster.sh" >/dev/null
if ! "$here/ensure-client-go-reference-modern.sh" --check 2>/dev/null; then
    say "the modern reference tests need client-go v0.36's informer: building tests/client-go-reference-modern (under a minute)"
fi
"$here/ensure-client-go-reference-modern.sh" >/dev/null
