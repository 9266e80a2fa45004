# Note [Fuzzing ember-opt]
# With EMBER_FUZZ=ON (clang only; its own build tree, build-fuzz/, which
# `scripts/ember.sh fuzz-opt` configures), the build adds ember-opt-fuzz
# (test/fuzz/): a libFuzzer target that parses its input as a module, with
# ember's dialects and passes registered as ember-opt has them, verifies it,
# runs the level-2 pipeline and lowers every fusion to its kernel
# description. The layers it exercises, ir/, passes/ and codegen/, are
# compiled with libFuzzer's coverage and ASan + UBSan; runtime/ and eager/
# (the kernels folding runs) are compiled by clang without instrumentation.
# Instrumented objects go into libember.so as well, which then leaves the
# sanitizer runtimes' symbols to the executable (ember-opt of this tree is
# an instrumented ember-opt, for replaying a crash with its report).
#
# Mixing instrumented code with Debian's plain MLIR: LLVM's headers poison
# and unpoison BumpPtrAllocator slabs under ASan (Note [MLIR under
# AddressSanitizer] in ir/CMakeLists.txt). The fuzzer and the instrumented
# tools run with ASAN_OPTIONS allow_user_poisoning=0 (compiled in with
# __asan_default_options, test/fuzz/AsanOptions.cpp), which turns that
# manual poisoning off; heap redzones, use-after-free and the rest of ASan
# stay on.
option(EMBER_FUZZ "Build ember-opt-fuzz, a libFuzzer target (needs clang; \
Note [Fuzzing ember-opt] in cmake/Fuzz.cmake)" OFF)

if(EMBER_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "ember: EMBER_FUZZ=ON needs clang (libFuzzer), but "
      "the C++ compiler is ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER}: "
      "configure a separate tree with CC=clang-19 CXX=clang++-19 "
      "(scripts/ember.sh fuzz-opt does)")
  endif()
  if(EMBER_SANITIZE)
    message(FATAL_ERROR "ember: EMBER_FUZZ=ON instruments ir/, passes/ and "
      "codegen/ itself; configure it without EMBER_SANITIZE")
  endif()
  include(CheckCXXSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer")
  check_cxx_source_compiles([[
    #include <cstddef>
    #include <cstdint>
    extern "C" int LLVMFuzzerTestOneInput(const uint8_t *, size_t) { return 0; }
  ]] EMBER_HAVE_LIBFUZZER)
  unset(CMAKE_REQUIRED_FLAGS)
  if(NOT EMBER_HAVE_LIBFUZZER)
    string(REGEX MATCH "^[0-9]+" _major "${CMAKE_CXX_COMPILER_VERSION}")
    message(FATAL_ERROR "ember: ${CMAKE_CXX_COMPILER} cannot link "
      "-fsanitize=fuzzer: install clang's runtime (Debian: "
      "libclang-rt-${_major}-dev)")
  endif()
  # -fno-sanitize=function: its check of an indirect call reads the 8 bytes
  # before the callee, which for a JIT-compiled kernel (codegen/Kernel.cpp
  # calls them through a pointer) are the unmapped page before its code.
  set(EMBER_FUZZ_FLAGS -fsanitize=fuzzer-no-link,address,undefined
      -fno-sanitize=function -fno-sanitize-recover=all
      -fno-omit-frame-pointer -g1)
  set(EMBER_FUZZ_LINK_FLAGS -fsanitize=address,undefined)
endif()

# ember_fuzz_instrument(<target>...): the fuzzer's coverage and sanitizers on
# these object libraries (nothing without EMBER_FUZZ).
function(ember_fuzz_instrument)
  if(NOT EMBER_FUZZ)
    return()
  endif()
  foreach(_t ${ARGN})
    target_compile_options(${_t} PRIVATE ${EMBER_FUZZ_FLAGS})
  endforeach()
endfunction()
