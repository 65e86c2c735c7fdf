#!/usr/bin/env bash
# The README's first command, run N times (default 30) from an empty data directory while three
# CPU hogs keep the machine busy. Counts answers of "Something went wrong" (there must be none)
# and answers that are missing the capture confirmation.
# Usage: scripts/first-run-busy.sh [N] [path/to/engram]   (default: target/debug/engram, built
# by `cargo build` first; `cargo run -- run` runs the same binary).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
n="${1:-30}"
bin="${2:-$root/target/debug/engram}"
[ -x "$bin" ] || (cd "$root" && cargo build --quiet)
hogs=()
for _ in 1 2 3; do (while :; do :; done) & hogs+=($!); done
trap 'kill "${hogs[@]}" 2>/dev/null || true' EXIT
wrong=0 unconfirmed=0
for i in $(seq 1 "$n"); do
  dir="$(mktemp -d)"
  out="$(cd "$dir" && printf 'remember that I love Rust\n' | env -u DISCORD_TOKEN -u TELEGRAM_TOKEN "$bin" run 2>"$dir/log" || true)"
  if grep -q "Something went wrong" <<<"$out"; then
    wrong=$((wrong + 1))
    echo "run $i: something went wrong; log:" >&2
    grep -v '^$' "$dir/log" | tail -3 >&2
  elif ! grep -q "I'll remember" <<<"$out"; then
    unconfirmed=$((unconfirmed + 1))
    echo "run $i: no confirmation: $out" >&2
  fi
  rm -rf "$dir"
done
echo "{\"runs\": $n, \"something_went_wrong\": $wrong, \"not_confirmed\": $unconfirmed}"
[ "$wrong" -eq 0 ] && [ "$unconfirmed" -eq 0 ]
