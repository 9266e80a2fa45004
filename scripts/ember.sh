#!/usr/bin/env bash
# ember's one entry point for set-up, demo and tests (README.md).
#
#   scripts/ember.sh demo   install what is missing, build, run the demo
#   scripts/ember.sh fuzz   the differential fuzzers, 20,000 programs each
#                           (run by hand; `fuzz N SEED...` for others)
#   scripts/ember.sh fuzz-opt [RUNS]
#                           libFuzzer on ember-opt's parse, verify and
#                           level-2 pipeline (build-fuzz/, clang), RUNS
#                           inputs (default 1,000,000)
#   scripts/ember.sh gpu-bundle
#                           build the GPU tests, the e2e suite and the
#                           library with the compiler into
#                           build-gpu/gpu-bundle.tar.xz (Note [The GPU
#                           bundle] in test/CMakeLists.txt), for a GPU
#                           machine without LLVM: unpack it there and run
#                           gpu-bundle/run.sh from the repository root
#   scripts/ember.sh test   install what is missing, build, run every test:
#                           unit tests, the lit tests (check-ember), every
#                           test again under ASan+UBSan, and a downstream
#                           find_package(ember) build; prints each stage's
#                           time
#
# Idempotent: packages are installed only when missing, builds are
# incremental (ninja + ccache), so a second run with nothing changed is fast.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
JOBS="${EMBER_BUILD_JOBS:-$(nproc)}"

PACKAGES=(
  build-essential cmake ninja-build ccache python3 python3-yaml
  libopenblas-dev libgtest-dev libgmock-dev libbenchmark-dev
  llvm-19-dev libmlir-19-dev mlir-19-tools llvm-19-tools clang-19 libzstd-dev
  libedit-dev
)

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "== installing: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
      "${missing[@]}" >/dev/null
  fi
}

# Stages print their wall time; the test command ends with a summary.
STAGES=()
stage_start() {
  STAGE_NAME="$1"
  STAGE_T0=$(date +%s)
  echo "== $1"
}
stage_end() {
  local dt=$(($(date +%s) - STAGE_T0))
  STAGES+=("$(printf '%5d s  %s' "$dt" "$STAGE_NAME")")
  echo "   ($STAGE_NAME: ${dt} s)"
}

# configure: one build tree (build/), Release, with the sanitized copies of
# the library and the tests beside the plain ones (Note [Sanitized tests] in
# cmake/Sanitize.cmake). cmake runs only when the tree is new or its
# settings differ.
configure() {
  if [ ! -f build/build.ninja ] ||
    ! grep -q '^EMBER_SANITIZE:STRING=address;undefined$' build/CMakeCache.txt; then
    cmake -S "$ROOT" -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DEMBER_SANITIZE="address;undefined" >/dev/null
  fi
}

# ninja_quiet TARGET...: builds, printing only what is not a status line
# (warnings, errors); ninja's exit status is what counts.
ninja_quiet() {
  local log
  log=$(mktemp)
  if ! ninja -C build -j"$JOBS" "$@" >"$log" 2>&1; then
    grep -vE '^\[[0-9]+/[0-9]+\] ' "$log" || true
    rm -f "$log"
    return 1
  fi
  grep -vE '^\[[0-9]+/[0-9]+\] |^ninja: ' "$log" || true
  rm -f "$log"
}

run_demo() {
  install_packages
  configure
  echo "== building the demo (build/)"
  ninja_quiet tour
  echo "== demo: build/examples/tour"
  ./build/examples/tour
}

run_tests() {
  local t_all
  t_all=$(date +%s)
  stage_start "packages"
  install_packages
  stage_end
  local failed=0

  stage_start "configure + build (library, tools, tests, benchmarks, examples)"
  configure
  ninja_quiet plain
  stage_end

  # Built before any test runs: until a sanitized test executable exists,
  # ctest lists a failing `<name>_NOT_BUILT` placeholder for it.
  stage_start "sanitizers: build the ASan + UBSan copies (library, tests)"
  ninja_quiet sanitized
  stage_end

  stage_start "unit and e2e tests (ctest)"
  (cd build && ctest --output-on-failure -j"$JOBS" -LE sanitized) || failed=1
  stage_end

  stage_start "lit tests of the compiler (check-ember: ember-opt + FileCheck)"
  ninja -C build check-ember || failed=1
  stage_end

  stage_start "sanitizers: every test under ASan + UBSan (ctest -L sanitized)"
  (cd build && ctest --output-on-failure -j"$JOBS" -L sanitized) || failed=1
  stage_end

  stage_start "install + downstream find_package(ember)"
  cmake --install build --prefix build/install >/dev/null
  rm -rf build/downstream
  cmake -S test/install -B build/downstream -G Ninja \
    -DCMAKE_PREFIX_PATH="$ROOT/build/install" >/dev/null
  ninja -C build/downstream >/dev/null
  ./build/downstream/downstream || failed=1
  stage_end

  echo "== times"
  printf '%s\n' "${STAGES[@]}"
  printf '%5d s  total\n' "$(($(date +%s) - t_all))"
  if [ "$failed" -ne 0 ]; then
    echo "== FAILED"
    exit 1
  fi
  echo "== all tests passed"
}

# fuzz [PROGRAMS] [SEEDS...]: the differential fuzzers (test/e2e/e2e_fuzz*:
# compiled vs eager) over PROGRAMS programs for each seed (default 5000
# and seeds 11 12 13 14: 20,000 programs each), two seeds at a time, and the
# size-arithmetic fuzzer (test/unit/test_size_fuzz.cpp) over 20 x PROGRAMS
# cases per seed under ASan + UBSan (test_size_fuzz_san). Not part of `test`
# (which runs 1000 programs of each and 4000 size cases); run by hand before
# changing the compiler's semantics or the size arithmetic.
run_fuzz() {
  install_packages
  configure
  ninja_quiet e2e_fuzz e2e_fuzz_state test_size_fuzz_san
  local n="${1:-5000}"
  shift || true
  local seeds=("$@")
  ((${#seeds[@]})) || seeds=(11 12 13 14)
  local failed=0 t0
  t0=$(date +%s)
  for fuzzer in e2e_fuzz e2e_fuzz_state; do
    local pids=()
    for seed in "${seeds[@]}"; do
      (FUZZ_PROGRAMS="$n" FUZZ_SEED="$seed" "build/test/e2e/$fuzzer" \
        --gtest_filter='*OnDemand*' >"build/fuzz-$fuzzer-$seed.log" 2>&1 &&
        echo "$fuzzer seed $seed: $n programs, no mismatch" ||
        { echo "$fuzzer seed $seed: FAILED (build/fuzz-$fuzzer-$seed.log)"; exit 1; }) &
      pids+=($!)
      if ((${#pids[@]} >= JOBS)); then
        wait "${pids[0]}" || failed=1
        pids=("${pids[@]:1}")
      fi
    done
    for p in "${pids[@]}"; do wait "$p" || failed=1; done
  done
  for seed in "${seeds[@]}"; do
    FUZZ_PROGRAMS="$((n * 20))" FUZZ_SEED="$seed" \
      ASAN_OPTIONS=allocator_may_return_null=1 \
      build/test/unit/test_size_fuzz_san --gtest_filter='*OnDemand*' \
      >"build/fuzz-size-$seed.log" 2>&1 &&
      grep "size fuzz" "build/fuzz-size-$seed.log" ||
      { echo "size fuzz seed $seed: FAILED (build/fuzz-size-$seed.log)"; failed=1; }
  done
  echo "== fuzz: $(($(date +%s) - t0)) s"
  [ "$failed" -eq 0 ] || exit 1
}

# fuzz-opt [RUNS] [libFuzzer flags...]: ember-opt-fuzz (Note [Fuzzing
# ember-opt] in cmake/Fuzz.cmake) for RUNS inputs (default 1,000,000), one
# process, seed 1 unless a -seed= flag says otherwise. Its own tree,
# build-fuzz/ (clang, EMBER_FUZZ=ON); seeds: test/lit's cases and the op
# examples (test/fuzz/make_corpus.py), the regression corpus
# (test/fuzz/regressions) and what earlier runs kept in
# build-fuzz/fuzz/corpus. A crash is written to build-fuzz/fuzz/artifacts/;
# minimise it with `build-fuzz/bin/ember-opt-fuzz -minimize_crash=1
# -runs=100000 FILE`, fix it, and add the input to test/fuzz/regressions.
run_fuzz_opt() {
  PACKAGES+=(clang-19 libclang-rt-19-dev)
  install_packages
  if [ ! -f build-fuzz/build.ninja ] ||
    ! grep -q '^EMBER_FUZZ:BOOL=ON$' build-fuzz/CMakeCache.txt; then
    CC=clang-19 CXX=clang++-19 cmake -S "$ROOT" -B build-fuzz -G Ninja \
      -DCMAKE_BUILD_TYPE=Release -DEMBER_FUZZ=ON >/dev/null
  fi
  echo "== building ember-opt-fuzz (build-fuzz/)"
  local log
  log=$(mktemp)
  if ! ninja -C build-fuzz -j"$JOBS" ember-opt-fuzz ember_ir_gen >"$log" 2>&1; then
    grep -vE '^\[[0-9]+/[0-9]+\] ' "$log" || true
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
  local dir=build-fuzz/fuzz
  python3 test/fuzz/make_corpus.py --out "$dir" \
    --examples build-fuzz/gen/ir/EmberOpExamples.mlir
  mkdir -p "$dir/corpus" "$dir/artifacts"
  local runs="${1:-1000000}"
  shift || true
  local seed=-seed=1
  for f in "$@"; do [[ "$f" == -seed=* ]] && seed=; done
  echo "== ember-opt-fuzz: $runs inputs"
  build-fuzz/bin/ember-opt-fuzz "$dir/corpus" "$dir/seeds" test/fuzz/regressions \
    -dict="$dir/ember.dict" -max_len=4096 -timeout=20 -rss_limit_mb=4096 \
    -runs="$runs" -print_final_stats=1 -artifact_prefix="$dir/artifacts/" \
    $seed "$@"
}

# The GPU bundle (Note [The GPU bundle] in test/CMakeLists.txt) is built in
# its own tree (build-gpu/), for any x86-64 CPU (no -march=native: the GPU
# machine's processor is not this one), with LLVM linked statically into
# libember.so. The tests read ops.yaml relative to the repository root, where
# the device machine runs commands.
run_gpu_bundle() {
  install_packages
  if [ ! -f build-gpu/build.ninja ]; then
    cmake -S "$ROOT" -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DEMBER_NATIVE=OFF -DEMBER_STATIC_LLVM=ON -DEMBER_BUILD_BENCH=OFF \
      -DEMBER_BUILD_EXAMPLES=OFF -DEMBER_TEST_OPS_YAML=eager/ops/ops.yaml \
      >/dev/null
  fi
  echo "== building the GPU bundle (build-gpu/)"
  local log
  log=$(mktemp)
  if ! ninja -C build-gpu -j"$JOBS" gpu-bundle >"$log" 2>&1; then
    grep -vE '^\[[0-9]+/[0-9]+\] ' "$log" || true
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
  local out=build-gpu/gpu-bundle
  rm -rf "$out"
  mkdir -p "$out"
  cp build-gpu/libember.so build-gpu/test/bench_cuda build-gpu/test/bench_cuda_compile \
    build-gpu/test/unit/test_cuda build-gpu/test/unit/test_cuda_ops \
    build-gpu/test/unit/test_cuda_codegen "$out"/
  find build-gpu/test/e2e -maxdepth 1 -name 'e2e_*' -type f -perm -u+x \
    -exec cp {} "$out"/ \;
  # The libraries a machine without ember's packages lacks: BLAS and its
  # Fortran runtime, zlib and zstd (glibc, libstdc++ and the CUDA driver are
  # there). Nothing may need LLVM's shared library.
  if ldd "$out"/libember.so | grep -q libLLVM; then
    echo "error: the bundle's libember.so links libLLVM (EMBER_STATIC_LLVM is off?)" >&2
    return 1
  fi
  ldd "$out"/libember.so |
    awk '/openblas|gfortran|quadmath|libz\.so|libzstd/ {print $3}' |
    while read -r lib; do cp -L "$lib" "$out"/; done
  strip --strip-unneeded "$out"/*.so* "$out"/test_* "$out"/e2e_* "$out"/bench_*
  cp scripts/gpu-bundle-run.sh "$out"/run.sh
  chmod +x "$out"/run.sh
  # xz: the GPU machine may lack zstd; tar and python3 read xz everywhere.
  XZ_OPT="-9 -T$JOBS" tar -C build-gpu -cJf build-gpu/gpu-bundle.tar.xz gpu-bundle
  echo "== build-gpu/gpu-bundle.tar.xz: $(du -h build-gpu/gpu-bundle.tar.xz | cut -f1)"
}

case "${1:-}" in
demo) run_demo ;;
gpu-bundle) run_gpu_bundle ;;
test) run_tests ;;
fuzz)
  shift
  run_fuzz "$@"
  ;;
fuzz-opt)
  shift
  run_fuzz_opt "$@"
  ;;
*)
  echo "usage: $0 demo|test|gpu-bundle|fuzz [PROGRAMS] [SEEDS...]|fuzz-opt [RUNS]" >&2
  exit 2
  ;;
esac
