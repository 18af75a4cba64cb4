#!/usr/bin/env bash
# Writes deploy/token.env, the viewers' token that deploy/kustomization.yaml
# turns into the Secret watchlife-token, unless it exists: 32 random hex
# digits, readable by its owner only. Git ignores the file.
set -euo pipefail
file="$(cd "$(dirname "$0")/.." && pwd)/deploy/token.env"
if [ -s "$file" ]; then
    exit 0
fi
umask 077
token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
printf 'token=%s\n' "$token" >"$file.partial"
mv -f "$file.partial" "$file"
echo "[image] wrote a fresh viewers' token to deploy/token.env (git-ignored; viewers open http://HOST:8080/?token=...)" >&2
