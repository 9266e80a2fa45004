#include "eager/autograd/GradMode.h"
#include "eager/autograd/ThreadLocalState.h"

namespace ember {

namespace {
thread_local bool tls_grad_enabled = true;
thread_local bool tls_inference = false;
} // namespace

bool GradMode::is_enabled() { return tls_grad_enabled; }
void GradMode::set_enabled(bool enabled) { tls_grad_enabled = enabled; }

InferenceMode::InferenceMode(bool enabled)
    : prev_inference_(tls_inference), prev_grad_(tls_grad_enabled) {
  tls_inference = enabled;
  if (enabled)
    tls_grad_enabled = false;
}
InferenceMode::~InferenceMode() {
  tls_inference = prev_inference_;
  tls_grad_enabled = prev_grad_;
}
bool InferenceMode::is_enabled() { return tls_inference; }

namespace detail {
bool get_inference_mode() { return tls_inference; }
void set_inference_mode(bool enabled) { tls_inference = enabled; }
} // namespace detail

} // namespace ember
