#!/usr/bin/env bash
# Writes the "Fuzzing" section of RELIABILITY.md after `make fuzz`: each
# parser's property tests and the cases each ran. Run by `make fuzz` once
# every property has passed; `make chaos` keeps the section when it writes
# the rest of the file.
#
# Usage: scripts/fuzz-report.sh CASES
set -euo pipefail
cd "$(dirname "$0")/.."
cases="$1"
cargo="${CARGO:-cargo}"
report=RELIABILITY.md
section=$(mktemp)
trap 'rm -f "$section"' EXIT

{
  echo "## Fuzzing"
  echo
  echo "Written by \`make fuzz CASES=$cases\` on $(date -u +%Y-%m-%dT%H:%M:%SZ), commit \`$(git rev-parse --short=12 HEAD)\`:"
  echo "every property below ran $cases cases and passed (each input a value or a clear"
  echo "error, never a panic or a 5xx). \`make test\` runs the same properties with"
  echo "fewer cases (a few thousand each)."
  echo
  echo "| parser (test) | property | cases |"
  echo "| --- | --- | --- |"
  for target in "watchlife-protocol protocol fuzz_frames" "watchlife bridge fuzz_inputs" \
                "watchlife-controlplane controlplane fuzz_selectors" \
                "watchlife-demo-apiserver demo-apiserver fuzz_requests"; do
    set -- $target
    "$cargo" test -q -p "$1" --test "$3" -- --list 2>/dev/null \
      | sed -n 's/: test$//p' \
      | while read -r test; do
          # A property takes generated arguments; a test without any is one
          # fixed case (a bug found by fuzzing, pinned).
          if grep -qE "fn $test\(\)" "$2/tests/$3.rs"; then ran="1 (fixed case)"; else ran="$cases"; fi
          echo "| \`$1\` (\`$3\`) | \`$test\` | $ran |"
        done
  done
} > "$section"

# Replace the section if the file has one, else append it.
if [ -f "$report" ] && grep -q '^## Fuzzing' "$report"; then
  sed -i '/^## Fuzzing/,$d' "$report"
fi
{ [ -f "$report" ] && [ -s "$report" ] && echo; cat "$section"; } >> "$report"
echo "[fuzz] wrote the Fuzzing section of $report"
