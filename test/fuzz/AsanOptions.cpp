// The ASan options of every executable of an EMBER_FUZZ tree (ember-opt-fuzz,
// and ember-opt and the rest through libember.so's interface): Note
// [Fuzzing ember-opt] in cmake/Fuzz.cmake. LLVM's headers poison
// BumpPtrAllocator slabs under ASan and Debian's plain MLIR never unpoisons
// them; without allow_user_poisoning=0 the first MLIRContext reports a
// use-after-poison.
extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0";
}
