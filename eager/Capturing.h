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

} // namespace ember
