#pragma once
/// The thread-local state ops depend on (PyTorch's at::ThreadLocalState):
/// grad and inference mode, the local dispatch key set, the dispatch-mode
/// stack, the autocast state, the saved-tensor hooks and the storage creation
/// epoch. Captured on one thread and installed on another, so that work moved
/// to a new thread (deep re-entrant backward, Note [Deep re-entrant backward]
/// in Engine.cpp) runs as it would have where it started.

#include "eager/DispatchKey.h"
#include "eager/amp/Autocast.h"
#include "eager/autograd/SavedVariable.h"

#include <cstdint>
#include <vector>

namespace ember {

class TorchDispatchMode;

namespace detail {
/// Each piece, read and written where its thread_local lives.
std::vector<TorchDispatchMode *> get_mode_stack();
void set_mode_stack(std::vector<TorchDispatchMode *> modes);
struct SavedHooksState {
  std::vector<autograd::SavedTensorHooks> hooks;
  size_t disabled_below = 0;
};
SavedHooksState get_saved_hooks();
void set_saved_hooks(SavedHooksState state);
bool get_inference_mode();
void set_inference_mode(bool enabled);
} // namespace detail

class ThreadLocalState {
public:
  /// The calling thread's state.
  ThreadLocalState();
  /// Makes `state` the calling thread's.
  static void set(const ThreadLocalState &state);

private:
  bool grad_enabled_, inference_;
  LocalDispatchKeySet keys_;
  std::vector<TorchDispatchMode *> modes_;
  detail::SavedHooksState hooks_;
  uint32_t creation_epoch_;
  autocast::AutocastState autocast_;
};

} // namespace ember
