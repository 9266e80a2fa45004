#pragma once
/// Random number generators: deterministic for a seed, as torch.Generator.

#include "runtime/intrusive_ptr.h"

#include <cstdint>
#include <mutex>
#include <random>

namespace ember {

struct GeneratorImpl : intrusive_ptr_target {
  explicit GeneratorImpl(uint64_t seed) { set_seed(seed); }
  void set_seed(uint64_t s) {
    seed_ = s;
    engine_.seed(s);
    has_next_normal_ = false;
  }
  uint64_t seed_ = 0;
  std::mt19937_64 engine_;
  // Box-Muller produces normals in pairs; the second is kept for the next call.
  bool has_next_normal_ = false;
  double next_normal_ = 0;
  /// Guards the members above: copies of a Generator share them, and may be
  /// used on several threads (reads of the seed included).
  std::mutex mutex;
};

/// A snapshot of a generator's state (Generator::get_state / set_state).
struct GeneratorState {
  uint64_t seed = 0;
  std::mt19937_64 engine;
  bool has_next_normal = false;
  double next_normal = 0;
};

/// A handle to a generator (torch::Generator). Copies share state.
class Generator {
public:
  static constexpr uint64_t kDefaultSeed = 67280421310721ull; // PyTorch's
  Generator() = default;
  explicit Generator(uint64_t seed)
      : impl_(make_intrusive<GeneratorImpl>(seed)) {}
  bool defined() const { return bool(impl_); }
  void set_current_seed(uint64_t seed) {
    std::lock_guard<std::mutex> g(impl_->mutex);
    impl_->set_seed(seed);
  }
  uint64_t current_seed() const {
    std::lock_guard<std::mutex> g(impl_->mutex);
    return impl_->seed_;
  }
  /// The state, to restore later with set_state (checkpoint replays
  /// dropout masks this way).
  GeneratorState get_state() const {
    std::lock_guard<std::mutex> g(impl_->mutex);
    return {impl_->seed_, impl_->engine_, impl_->has_next_normal_,
            impl_->next_normal_};
  }
  void set_state(const GeneratorState &s) {
    std::lock_guard<std::mutex> g(impl_->mutex);
    impl_->seed_ = s.seed;
    impl_->engine_ = s.engine;
    impl_->has_next_normal_ = s.has_next_normal;
    impl_->next_normal_ = s.next_normal;
  }
  GeneratorImpl *get() const { return impl_.get(); }

  /// A uniform 64-bit value. Callers hold the mutex for a batch of draws.
  static uint64_t next(GeneratorImpl *g) { return g->engine_(); }
  /// Uniform double in [0, 1) with 53 random bits.
  static double uniform(GeneratorImpl *g) {
    return double(next(g) >> 11) * 0x1.0p-53;
  }
  /// Standard normal (Box-Muller).
  static double normal(GeneratorImpl *g);

private:
  intrusive_ptr<GeneratorImpl> impl_;
};

/// The process-wide default CPU generator.
Generator &default_generator();
/// Seeds the default generator (torch::manual_seed).
void manual_seed(uint64_t seed);

} // namespace ember
