#!/usr/bin/env bash
# Compile time of the MLP training step (bench_train_compile.cpp): ROUNDS
# rounds (default 5), each one process with an empty EMBER_CACHE_DIR (cold)
# and one more with the same directory (from the disk cache). Writes
# bench/results/train_compile.{jsonl,md}: medians and ranges, with the
# machine.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="$ROOT/build/bench/bench_train_compile"
OUT="$ROOT/bench/results"
ROUNDS="${1:-5}"
mkdir -p "$OUT"
: >"$OUT/train_compile.jsonl"
for ((r = 0; r < ROUNDS; ++r)); do
  dir="$(mktemp -d)"
  for kind in cold disk; do
    line="$(EMBER_CACHE_DIR="$dir" EMBER_NUM_THREADS=2 "$BIN")"
    echo "{\"cache\": \"$kind\", ${line#\{}" >>"$OUT/train_compile.jsonl"
  done
  rm -rf "$dir"
done
python3 - "$OUT/train_compile.jsonl" >"$OUT/train_compile.md" <<'PY'
import json, os, platform, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
            if l.startswith("model name")), platform.processor())
print("# Compile time of the MLP 784-1024-1024-10 training step\n")
print(f"- machine: {cpu}, {os.cpu_count()} CPUs")
print("- method: `bench/train_compile.sh`: per round, one process with an "
      "empty EMBER_CACHE_DIR (cold) and one with the same directory (every "
      "kernel from the disk cache); each compiles the loss (forward and "
      "backward) and the SGD step, runs the first two steps (the second "
      "compiles the step's steady-state graph) and five more. compile = "
      "the first two steps' wall time minus twice the fastest later step; "
      "explain = explain()'s capture + compile seconds. Median [min, max] "
      f"over {len(rows) // 2} rounds.\n")
print("| cache | compile (ms) | explain (ms) | kernels' LLVM or load (ms) | step (ms) | kernels |")
print("|---|---|---|---|---|---|")
for kind in ("cold", "disk"):
    rs = [r for r in rows if r["cache"] == kind]
    def f(key):
        v = [r[key] for r in rs]
        return f"{statistics.median(v):.1f} [{min(v):.1f}, {max(v):.1f}]"
    print(f"| {kind} | {f('compile_ms')} | {f('explain_compile_ms')} | "
          f"{f('explain_kernel_ms')} | {f('step_ms')} | {rs[0]['kernels']} |")
PY
cat "$OUT/train_compile.md"
