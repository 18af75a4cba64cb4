#!/usr/bin/env bash
# Usage: scripts/check-leftovers.sh MARK
#
# Fails when a process started under the test run marked MARK is still
# running: `make test` exports WATCHLIFE_TEST_RUN=MARK to everything it
# starts, so any process whose environment holds it (and that is not this
# script or one of its callers) was left behind by a test. Leftovers are
# named, then killed, so that the next run finds the machine clean.
set -euo pipefail

mark=${1:?usage: check-leftovers.sh MARK}
# Processes that end as their test ends may take a moment to be reaped.
GRACE_SECONDS=5

# Process `$1`'s parent, or 1 when it is gone.
parent() {
    awk '/^PPid:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 1
}

# This script, the processes that run it and the ones it runs carry the mark
# too: a process is ours when this script is it, one of its ancestors, or
# one of its descendants.
ours() {
    local pid=$1
    while [ "${pid:-1}" -gt 1 ]; do
        [ "$pid" -eq $$ ] && return 0
        pid=$(parent "$pid")
    done
    local up=$$
    while [ "${up:-1}" -gt 1 ]; do
        [ "$up" -eq "$1" ] && return 0
        up=$(parent "$up")
    done
    return 1
}

leftovers() {
    for environ in /proc/[0-9]*/environ; do
        local pid=${environ#/proc/}
        pid=${pid%/environ}
        if tr '\0' '\n' 2>/dev/null <"$environ" | grep -qxF "WATCHLIFE_TEST_RUN=$mark" \
            && ! ours "$pid"; then
            echo "$pid"
        fi
    done
}

deadline=$((SECONDS + GRACE_SECONDS))
while :; do
    left=$(leftovers)
    [ -z "$left" ] && { echo "[test] no process left behind"; exit 0; }
    [ "$SECONDS" -ge "$deadline" ] && break
    sleep 1
done

echo "[test] processes the tests started are still running (now killed):" >&2
for pid in $left; do
    echo "  $pid $(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline")" >&2
    kill -9 "$pid" 2>/dev/null || true
done
exit 1
