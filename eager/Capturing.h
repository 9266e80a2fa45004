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
} // namespace detail

} // namespace ember
