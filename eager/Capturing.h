#pragma once
/// Whether ember::compile is recording ops on this thread (the eager layer's
/// one question about capture; frontend/Capture.cpp does the recording).

#include "eager/DispatchKey.h"

namespace ember {

/// Its Capture key is on and not excluded: an eager kernel that capture
/// itself calls sees false.
inline bool is_capturing() {
  const LocalDispatchKeySet &ks = tls_local_dispatch_key_set();
  return ks.included.has(DispatchKey::Capture) &&
         !ks.excluded.has(DispatchKey::Capture);
}

namespace detail {
/// Called by the autograd engine after a backward pass run while compile()
/// records (set by frontend/Capture.cpp): the grads that pass made for the
/// function's arguments become visible through them (Note [An argument's
/// grad] there).
inline void (*capture_after_backward_fn)() = nullptr;
/// Set by frontend/Capture.cpp: marks the call being captured as one replay
/// mode must not replay (no_replay()).
inline void (*capture_no_replay_fn)(const char *why) = nullptr;
} // namespace detail

/// Called by code whose ops read state that compile()'s replay key does not
/// see: an optimizer's step reads each parameter's .grad, a new tensor at
/// every backward, and makes its state on its first call. While capturing,
/// the call is then not replayed (explain() gives `why`): replay mode would
/// run the first call's graph on the first call's tensors.
inline void no_replay(const char *why) {
  if (is_capturing() && detail::capture_no_replay_fn)
    detail::capture_no_replay_fn(why);
}

namespace detail {
/// no_replay()'s reason for a read of a defined .grad (Tensor::grad()).
inline constexpr const char *kReadsGrad =
    "it reads a tensor's .grad (a new tensor after every zero_grad() and "
    "backward): a replay would read the first call's";
/// no_replay()'s reason for the optimizers' steps.
inline constexpr const char *kStepReadsGrads =
    "an optimizer's step reads each parameter's current .grad (a new tensor "
    "after every zero_grad() and backward) and makes its state on its first "
    "call: a replay would update with the first call's gradients";
} // namespace detail

} // namespace ember
