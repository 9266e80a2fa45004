#include "eager/autograd/ThreadLocalState.h"
#include "eager/autograd/GradMode.h"
#include "runtime/Storage.h"

namespace ember {

ThreadLocalState::ThreadLocalState()
    : grad_enabled_(GradMode::is_enabled()),
      inference_(detail::get_inference_mode()),
      keys_(tls_local_dispatch_key_set()), modes_(detail::get_mode_stack()),
      hooks_(detail::get_saved_hooks()),
      creation_epoch_(detail::creation_epoch()),
      autocast_(autocast::get_state()) {}

void ThreadLocalState::set(const ThreadLocalState &s) {
  GradMode::set_enabled(s.grad_enabled_);
  detail::set_inference_mode(s.inference_);
  tls_local_dispatch_key_set() = s.keys_;
  detail::set_mode_stack(s.modes_);
  detail::set_saved_hooks(s.hooks_);
  detail::set_creation_epoch(s.creation_epoch_);
  autocast::set_state(s.autocast_);
}

} // namespace ember
