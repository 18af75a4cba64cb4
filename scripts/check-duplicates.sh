#!/usr/bin/env bash
# Fails when a crate the design relies on is compiled in two versions
# (`cargo tree -d`): two WebSocket stacks, two runtimes or two metrics
# registries in one binary are each a bug waiting (types that do not match,
# twice the code, two sets of defaults). Other duplicates, deep in the graph,
# are the registry's business and are not checked here.
set -euo pipefail
cd "$(dirname "$0")/.."

# The crates ARCHITECTURE.md, the README and the build notes name.
DESIGN=(
    tokio tokio-tungstenite tungstenite axum hyper tower tower-http
    kube kube-client k8s-openapi etcd-client tonic rustls
    prometheus-client serde serde_json
    leptos gloo-net wasm-bindgen
)

# Every duplicated package, across all targets (the wasm frontend included)
# and all kinds of dependency, once per line as "name vX.Y.Z".
dups=$(cargo tree --workspace --duplicates --edges normal,build,dev --target all \
    --prefix none --format '{p}' | sed -n 's/^\([A-Za-z0-9_-]*\) v\([^ ]*\).*/\1 v\2/p' | sort -u)

failed=0
for name in "${DESIGN[@]}"; do
    versions=$(awk -v n="$name" '$1 == n { print $2 }' <<<"$dups" | sort -u | paste -sd, -)
    if [ -n "$versions" ] && [ "$(tr ',' '\n' <<<"$versions" | wc -l)" -gt 1 ]; then
        echo "[lint] $name is compiled in more than one version ($versions): align the dependents (cargo tree -i $name)" >&2
        failed=1
    fi
done
[ "$failed" -eq 0 ] && echo "[lint] one version each of: ${DESIGN[*]}"
exit "$failed"
