#!/bin/sh
# ember's GPU suite, from the bundle that `scripts/ember.sh gpu-bundle` packs
# (Note [The GPU bundle] in test/CMakeLists.txt). Run it from the repository
# root: the tests read eager/ops/ops.yaml there.
#
#   run.sh              the GPU unit tests and the e2e suite on CUDA, JOBS
#                       binaries at a time, then the benchmarks
#   run.sh unit [ARGS]  test_cuda, test_cuda_ops and test_cuda_codegen's GPU
#                       tests (ARGS go to GoogleTest)
#   run.sh e2e [ARGS]   every e2e test with E2E_DEVICE=cuda: compiled
#                       CUDA against eager CPU (Note [The e2e suite on CUDA]
#                       in test/e2e/E2EUtil.h)
#   run.sh tests        unit and e2e, JOBS binaries at a time
#   run.sh bench        the GPU benchmarks (bench/bench_cuda.cpp, eager;
#                       bench/bench_cuda_compile.cpp, compile()), each
#                       followed by PyTorch's run of the same cases
#                       (bench/cuda_torch.py, bench/cuda_compile_torch.py)
#                       where python3 has torch; alone on the machine
#
# Environment: JOBS (default 6) binaries run at once in `tests`; LIMIT
# (default 540) seconds for each test binary, BENCH_LIMIT (default 150) for
# each benchmark program.
#
# Each binary's full log goes to $LOGS (default /tmp/gpu-logs); where $OUT
# is set (the device tool) they are packed into $OUT/gpu-logs.tar.gz, since
# only a few files come back from there. The end of the output is one line
# per binary and the tests that failed.
dir=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
logs="${LOGS:-/tmp/gpu-logs}"
mkdir -p "$logs"
summary="$logs/summary.txt"
status=0

# run_one NAME ARGS...: runs $dir/NAME, logs it, adds its lines to the
# summary in one write (run_one runs several at once).
run_one() {
  name=$1
  shift
  t0=$(date +%s)
  timeout "${LIMIT:-540}" "$dir/$name" --gtest_color=no "$@" \
    >"$logs/$name.log" 2>&1
  rc=$?
  dt=$(($(date +%s) - t0))
  passed=$(grep -c '^\[       OK \]' "$logs/$name.log")
  skipped=$(grep -c '^\[  SKIPPED \]' "$logs/$name.log")
  failed=$(grep '^\[  FAILED  \]' "$logs/$name.log" | grep -vc ' listed below:\| FAILED TESTS')
  {
    printf '%-24s rc %3d  %4d s  passed %4d  skipped %4d  failed %3d\n' \
      "$name" "$rc" "$dt" "$passed" "$skipped" "$failed"
    grep '^\[  FAILED  \] [A-Za-z]' "$logs/$name.log" | sort -u | sed 's/^/    /'
  } >"$logs/$name.sum"
  cat "$logs/$name.sum" >>"$summary"
  return $rc
}

unit_names() { echo test_cuda test_cuda_ops test_cuda_codegen; }
e2e_names() { for t in "$dir"/e2e_*; do basename "$t"; done; }

# one NAME ARGS...: one test binary as `tests` runs it.
one() {
  name=$1
  shift
  case $name in
  e2e_*) E2E_DEVICE=cuda run_one "$name" "$@" ;;
  test_cuda_codegen) run_one "$name" --gtest_filter='Cuda.*' "$@" ;;
  *) run_one "$name" "$@" ;;
  esac
}

bench() {
  for b in cuda cuda_compile; do
    echo "== bench_$b"
    timeout "${BENCH_LIMIT:-150}" "$dir/bench_$b" || echo "bench_$b: rc $?"
    if python3 -c 'import torch' 2>/dev/null; then
      echo "== bench/${b}_torch.py"
      PYTHONUNBUFFERED=1 timeout "${BENCH_LIMIT:-150}" python3 "bench/${b}_torch.py" ||
        echo "${b}_torch.py: rc $?"
    fi
  done
}

pack() {
  [ -n "$OUT" ] || return 0
  tar -C "$(dirname "$logs")" -czf "$OUT/gpu-logs.tar.gz" "$(basename "$logs")"
  cp "$summary" "$OUT/summary.txt"
}

case "${1:-all}" in
one)
  shift
  one "$@"
  exit $?
  ;;
unit)
  shift
  : >"$summary"
  for n in $(unit_names); do one "$n" "$@" || status=1; done
  ;;
e2e)
  shift
  : >"$summary"
  for n in $(e2e_names); do one "$n" "$@" || status=1; done
  ;;
tests | all)
  : >"$summary"
  # The slowest first, so that the last to start is not the longest.
  { echo test_cuda_ops e2e_fuzz e2e_models e2e_training; unit_names; e2e_names; } |
    tr ' ' '\n' | grep . | awk '!seen[$0]++' |
    xargs -P "${JOBS:-6}" -I{} "$0" one {} || status=1
  if [ "$1" = all ]; then
    bench 2>&1 | tee "$logs/bench.log"
  fi
  ;;
bench)
  bench 2>&1 | tee "$logs/bench.log"
  ;;
*)
  echo "usage: $0 [all|tests|unit|e2e [GoogleTest args]|bench]" >&2
  exit 2
  ;;
esac
pack
cat "$summary"
exit $status
