#pragma once
/// Random number generators: deterministic for a seed, as torch.Generator.

#include "runtime/Error.h"
#include "runtime/intrusive_ptr.h"

#include <cstdint>
#include <mutex>

namespace ember {

/// A generator's state: the Philox key and the next counter (Note
/// [Counter-based random numbers] in runtime/Philox.h).
struct GeneratorState {
  uint64_t seed = 0;
  uint64_t offset = 0;
  bool operator==(const GeneratorState &) const = default;
};

struct GeneratorImpl : intrusive_ptr_target {
  explicit GeneratorImpl(uint64_t seed) : state{seed, 0} {}
  GeneratorState state;
  /// Guards `state`: copies of a Generator share it, and may be used on
  /// several threads.
  std::mutex mutex;
};

/// A handle to a generator (torch::Generator): a Philox (seed, offset)
/// pair, deterministic for a seed. Copies share state.
class Generator {
public:
  static constexpr uint64_t kDefaultSeed = 67280421310721ull; // PyTorch's
  Generator() = default;
  explicit Generator(uint64_t seed)
      : impl_(make_intrusive<GeneratorImpl>(seed)) {}
  bool defined() const { return bool(impl_); }
  /// Seeds the generator and rewinds its offset to 0.
  void set_current_seed(uint64_t seed) { set_state({seed, 0}); }
  uint64_t current_seed() const { return get_state().seed; }
  /// The counter the next draw starts at (torch.Generator.get_offset).
  uint64_t get_offset() const { return get_state().offset; }
  void set_offset(uint64_t offset) {
    std::lock_guard<std::mutex> g(checked()->mutex);
    impl_->state.offset = offset;
  }
  /// The state, to restore later with set_state (checkpoint replays
  /// dropout masks this way).
  GeneratorState get_state() const {
    std::lock_guard<std::mutex> g(checked()->mutex);
    return impl_->state;
  }
  void set_state(const GeneratorState &s) {
    std::lock_guard<std::mutex> g(checked()->mutex);
    impl_->state = s;
  }
  /// Takes `n` counters for one draw: returns the state the draw starts
  /// from and advances the offset past them. A stream has 2^64 counters:
  /// a draw past its end raises rather than repeat the stream.
  GeneratorState reserve(uint64_t n) {
    std::lock_guard<std::mutex> g(checked()->mutex);
    GeneratorState s = impl_->state;
    EMBER_CHECK(n <= ~uint64_t(0) - s.offset, "the generator's stream of seed ",
                s.seed, " is used up: a draw of ", n, " numbers at offset ",
                s.offset,
                " passes 2^64; reseed it (manual_seed or set_current_seed)");
    impl_->state.offset += n;
    return s;
  }
  /// Gives back the `n` counters of the draw `from` returned by reserve
  /// when that draw failed, unless the generator moved since.
  void unreserve(const GeneratorState &from, uint64_t n) {
    std::lock_guard<std::mutex> g(checked()->mutex);
    if (impl_->state == GeneratorState{from.seed, from.offset + n})
      impl_->state = from;
  }
  GeneratorImpl *get() const { return impl_.get(); }

private:
  GeneratorImpl *checked() const {
    EMBER_CHECK(impl_, "this Generator is undefined (default-constructed): "
                       "make one with a seed, ember::Generator(seed)");
    return impl_.get();
  }
  intrusive_ptr<GeneratorImpl> impl_;
};

/// The process-wide default CPU generator.
Generator &default_generator();
/// Seeds the default generator (torch::manual_seed).
void manual_seed(uint64_t seed);

} // namespace ember
