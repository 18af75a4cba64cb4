#!/usr/bin/env bash
# sync-dist.sh STAGE DIST: makes DIST hold exactly the files of STAGE, and
# rewrites only those whose bytes differ. Trunk rewrites every file of its
# output on every build, wasm-opt included; the bridge embeds dist/ and cargo
# rebuilds it when a file's modification time changes. Copying only what
# changed keeps the times of unchanged files, so a page built again with the
# same bytes costs the binary no rebuild.
set -euo pipefail

stage=${1:?usage: sync-dist.sh STAGE DIST}
dist=${2:?usage: sync-dist.sh STAGE DIST}
[ -f "$stage/index.html" ] || { echo "[sync-dist] $stage has no index.html: Trunk did not build" >&2; exit 1; }
mkdir -p "$dist"

changed=0
# New and changed files, through a temporary name in the same folder, so a
# reader never sees half a file.
while IFS= read -r -d '' file; do
    rel=${file#"$stage"/}
    dest=$dist/$rel
    if [ ! -f "$dest" ] || ! cmp -s "$file" "$dest"; then
        mkdir -p "$(dirname "$dest")"
        cp "$file" "$dest.partial"
        mv -f "$dest.partial" "$dest"
        changed=$((changed + 1))
    fi
done < <(find "$stage" -type f -print0)

# Files the new build no longer has (an old hash in a name).
while IFS= read -r -d '' file; do
    rel=${file#"$dist"/}
    if [ ! -f "$stage/$rel" ]; then
        rm -f "$file"
        changed=$((changed + 1))
    fi
done < <(find "$dist" -type f -print0)
find "$dist" -mindepth 1 -type d -empty -delete

if [ "$changed" -eq 0 ]; then
    echo "[build] the browser app's bytes did not change: $dist left as it was"
else
    echo "[build] $changed file(s) of the browser app changed in $dist"
fi
