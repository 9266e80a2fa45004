#!/bin/sh
# ember's GPU suite, from the bundle that `scripts/ember.sh gpu-bundle` packs
# (Note [The GPU bundle] in test/CMakeLists.txt). Run it from the repository
# root: the tests read eager/ops/ops.yaml there.
#
#   run.sh              the GPU unit tests, then the e2e suite on CUDA
#   run.sh unit [ARGS]  test_cuda, test_cuda_ops and test_cuda_codegen's GPU
#                       tests (ARGS go to GoogleTest)
#   run.sh e2e [ARGS]   every e2e test with EMBER_E2E_DEVICE=cuda: compiled
#                       CUDA against eager CPU (Note [The e2e suite on CUDA]
#                       in test/e2e/E2EUtil.h)
#   run.sh bench        the GPU benchmarks (bench/bench_cuda.cpp, eager;
#                       bench/bench_cuda_compile.cpp, compile()), each
#                       followed by PyTorch's run of the same cases
#                       (bench/cuda_torch.py, bench/cuda_compile_torch.py)
#                       where python3 has torch
#
# Each binary's full log goes to $OUT/gpu-logs (or /tmp/gpu-logs); the end
# of the output is one line per binary and the tests that failed.
dir=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
logs="${OUT:-/tmp}/gpu-logs"
mkdir -p "$logs"
summary="$logs/summary.txt"
: >"$summary"
status=0

# run_one NAME ARGS...: runs $dir/NAME, logs it, adds its line to the summary.
run_one() {
  name=$1
  shift
  t0=$(date +%s)
  timeout 540 "$dir/$name" --gtest_color=no "$@" >"$logs/$name.log" 2>&1
  rc=$?
  dt=$(($(date +%s) - t0))
  passed=$(grep -c '^\[       OK \]' "$logs/$name.log")
  skipped=$(grep -c '^\[  SKIPPED \]' "$logs/$name.log")
  failed=$(grep '^\[  FAILED  \]' "$logs/$name.log" | grep -vc ' listed below:\| FAILED TESTS')
  printf '%-24s rc %3d  %4d s  passed %4d  skipped %4d  failed %3d\n' \
    "$name" "$rc" "$dt" "$passed" "$skipped" "$failed" >>"$summary"
  grep '^\[  FAILED  \] [A-Za-z]' "$logs/$name.log" | sort -u |
    sed 's/^/    /' >>"$summary"
  [ "$rc" -eq 0 ] || status=1
}

unit() {
  run_one test_cuda "$@"
  run_one test_cuda_ops "$@"
  run_one test_cuda_codegen --gtest_filter='Cuda.*' "$@"
}

e2e() {
  export EMBER_E2E_DEVICE=cuda
  for t in "$dir"/e2e_*; do
    run_one "$(basename "$t")" "$@"
  done
  unset EMBER_E2E_DEVICE
}

case "${1:-all}" in
bench)
  for b in cuda cuda_compile; do
    "$dir/bench_$b"
    if python3 -c 'import torch' 2>/dev/null; then
      python3 "bench/${b}_torch.py"
    fi
  done
  exit 0
  ;;
unit)
  shift
  unit "$@"
  ;;
e2e)
  shift
  e2e "$@"
  ;;
all)
  unit
  e2e
  ;;
*)
  echo "usage: $0 [unit|e2e [GoogleTest args]|bench]" >&2
  exit 2
  ;;
esac
cat "$summary"
exit $status
