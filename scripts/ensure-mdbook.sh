#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# ensure-mdbook.sh: install mdBook (from crates.io, with cargo) for the docs
# generators' test, then print where it is.
#
# It lives outside the repository, in
#   ${WATCHLIFE_CACHE:-$HOME/.cache/watchlife}/mdbook-$VERSION/bin/mdbook
# built without mdBook's default features (its file watcher, server and
# search index) and unoptimised (`--debug`): `mdbook build` of a one-page
# book is all the test runs, and the install is then under a minute on 2
# cores (with the crates downloaded) instead of several.
#
# Output: progress goes to stderr, prefixed "[mdbook]". On success stdout
# carries exactly one line:
#   MDBOOK=<cache>/mdbook-0.4.52/bin/mdbook
#
# With --check it only tells, by its exit status, whether mdBook is in place
# (0) or a run would install it (1). Safe to run from several processes at
# once (a flock guards the install).

set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/ensure.sh"

parse_check_option "$@"

# The 0.4 line's preprocessor protocol is the one mdbook-watchlife speaks.
readonly VERSION=0.4.52
set_cache_root
readonly DEST=$CACHE/mdbook-$VERSION
readonly BIN=$DEST/bin/mdbook

log_as mdbook

print_path() {
  log "mdBook $VERSION: $BIN"
  printf 'MDBOOK=%s\n' "$BIN"
}

if [[ -x $BIN ]]; then
  [[ $CHECK_ONLY == true ]] || print_path
  exit 0
fi
[[ $CHECK_ONLY == false ]] || exit 1

lock_or_wait "$DEST" "installing mdBook"
if [[ -x $BIN ]]; then
  print_path
  exit 0
fi
log "installing mdBook $VERSION with cargo into $DEST (about a minute on 2 cores; once per machine)"
# A private target folder: the workspace's is not touched, and it is
# removed once the binary is installed.
TARGET=$DEST/.build-$$
trap 'rm -rf "$TARGET"' EXIT
cargo install mdbook --locked --debug --version "=$VERSION" --no-default-features \
  --root "$DEST" --target-dir "$TARGET" >&2 \
  || die "cargo install mdbook $VERSION failed: see above"
log "installed ($(elapsed))"
print_path
