#!/usr/bin/env bash
# Installs what the tests need beyond the build tools, once per machine:
# Debian's chromium and chromium-driver for the browser tests. Skipped when
# they are present. Needs root (or sudo) to install; elsewhere it says what to
# install and stops.
set -euo pipefail

say() { echo "[setup] $*"; }
missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v chromedriver >/dev/null || missing+=(chromium-driver)

if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null; then SUDO=sudo; else
            say "the browser tests need Debian packages: ${missing[*]}; install them as root (apt-get install ${missing[*]})" >&2
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
