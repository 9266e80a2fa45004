#!/usr/bin/env bash
# ember's one entry point for set-up, demo and tests (README.md).
#
#   scripts/ember.sh demo   install what is missing, build, run the demo
#   scripts/ember.sh test   install what is missing, build, run every test:
#                           unit tests, the lit tests (check-ember), the
#                           ASan+UBSan build, and a downstream
#                           find_package(ember) build
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

# configure DIR [cmake args...]: configures once; later runs reuse the cache.
configure() {
  local dir="$1"
  shift
  if [ ! -f "$dir/build.ninja" ]; then
    cmake -S "$ROOT" -B "$dir" -G Ninja "$@" >/dev/null
  fi
}

build_main() {
  configure build -DCMAKE_BUILD_TYPE=Release
  echo "== building (build/)"
  ninja -C build -j"$JOBS" | grep -vE '^\[[0-9]+/[0-9]+\] ' || true
  # ninja's status lines are dropped above; its exit status is what counts.
  ninja -C build -j"$JOBS" >/dev/null
}

run_demo() {
  install_packages
  build_main
  echo "== demo: build/examples/tour"
  ./build/examples/tour
}

run_tests() {
  install_packages
  build_main
  local failed=0

  echo "== unit tests"
  (cd build && ctest --output-on-failure -j"$JOBS") || failed=1

  echo "== lit tests of the compiler (check-ember: ember-opt + FileCheck)"
  ninja -C build check-ember || failed=1

  echo "== sanitizers: ASan + UBSan build of runtime/ and eager/ (build-asan/)"
  configure build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DEMBER_SANITIZE="address;undefined" -DEMBER_BUILD_BENCH=OFF \
    -DEMBER_BUILD_EXAMPLES=OFF
  ninja -C build-asan -j"$JOBS" >/dev/null
  # allocator_may_return_null: the out-of-memory test asks for 1 PiB and
  # checks that ember raises (ASan would abort instead).
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
    UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --output-on-failure -j"$JOBS") || failed=1

  echo "== install + downstream find_package(ember)"
  cmake --install build --prefix build/install >/dev/null
  rm -rf build/downstream
  cmake -S test/install -B build/downstream -G Ninja \
    -DCMAKE_PREFIX_PATH="$ROOT/build/install" >/dev/null
  ninja -C build/downstream >/dev/null
  ./build/downstream/downstream || failed=1

  if [ "$failed" -ne 0 ]; then
    echo "== FAILED"
    exit 1
  fi
  echo "== all tests passed"
}

case "${1:-}" in
demo) run_demo ;;
test) run_tests ;;
*)
  echo "usage: $0 demo|test" >&2
  exit 2
  ;;
esac
