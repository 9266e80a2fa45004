#!/usr/bin/env bash
# Runs bench_eager and writes bench/results/eager.{json,md} (medians and
# ranges over repetitions, with the machine).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${1:-$ROOT/build/bench/bench_eager}"
OUT="$ROOT/bench/results"
mkdir -p "$OUT"
"$BIN" --benchmark_repetitions=7 --benchmark_out="$OUT/eager.json" \
  --benchmark_out_format=json >/dev/null
python3 "$ROOT/bench/summarize.py" "$OUT/eager.json" >"$OUT/eager.md"
cat "$OUT/eager.md"
