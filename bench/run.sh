#!/usr/bin/env bash
# Runs a benchmark binary (bench_eager by default, or bench_autograd) and
# writes bench/results/<name>.{json,md} (medians and ranges over
# repetitions, with the machine).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
NAME="${1:-eager}"
BIN="$ROOT/build/bench/bench_$NAME"
OUT="$ROOT/bench/results"
mkdir -p "$OUT"
"$BIN" --benchmark_repetitions=7 --benchmark_out="$OUT/$NAME.json" \
  --benchmark_out_format=json >/dev/null
python3 "$ROOT/bench/summarize.py" "$OUT/$NAME.json" >"$OUT/$NAME.md"
cat "$OUT/$NAME.md"
