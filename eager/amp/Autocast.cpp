#include "eager/amp/Autocast.h"
#include "eager/Capturing.h"

#include "eager/autograd/GradMode.h"
#include "runtime/Cuda.h"
#include "runtime/Logging.h"

#include <unordered_map>

namespace ember {
namespace autocast {

namespace {

/// A cached cast (Note [Autocast]): the source, kept alive so that its
/// address stays its key, the version it had, and its cast.
struct CachedCast {
  Tensor source;
  uint32_t version;
  Tensor cast;
};

struct Tls {
  AutocastState state;
  std::unordered_map<TensorImpl *, CachedCast> cache;
};
Tls &tls() {
  static thread_local Tls t;
  return t;
}

void sync_key() {
  const AutocastState &s = tls().state;
  LocalDispatchKeySet &k = tls_local_dispatch_key_set();
  k.included = (s.cpu_enabled || s.cuda_enabled)
                   ? k.included | DispatchKey::Autocast
                   : k.included - DispatchKey::Autocast;
}

void check_device(DeviceType device_type) {
  EMBER_CHECK(is_autocast_available(device_type),
              "autocast supports the device types cpu and cuda");
}

std::string device_name(DeviceType d) { return d == kCUDA ? "cuda" : "cpu"; }

ScalarType widen(std::optional<ScalarType> a, ScalarType b) {
  if (!a || *a == b)
    return b;
  return kFloat; // float32 with anything, or float16 with bfloat16
}

} // namespace

bool is_autocast_available(DeviceType device_type) {
  return device_type == kCPU || device_type == kCUDA;
}

namespace {
/// The thread's enabled flag and dtype of a device type.
bool &enabled_of(DeviceType device_type) {
  check_device(device_type);
  AutocastState &s = tls().state;
  return device_type == kCUDA ? s.cuda_enabled : s.cpu_enabled;
}
ScalarType &dtype_of(DeviceType device_type) {
  check_device(device_type);
  AutocastState &s = tls().state;
  return device_type == kCUDA ? s.cuda_dtype : s.cpu_dtype;
}
} // namespace

bool is_autocast_enabled(DeviceType device_type) {
  return enabled_of(device_type);
}

void set_autocast_enabled(DeviceType device_type, bool enabled) {
  enabled_of(device_type) = enabled;
  sync_key();
}

ScalarType get_autocast_dtype(DeviceType device_type) {
  return dtype_of(device_type);
}

void set_autocast_dtype(DeviceType device_type, ScalarType dtype) {
  ScalarType &d = dtype_of(device_type);
  EMBER_CHECK_TYPE(isReducedFloatingType(dtype), "autocast on ",
                   device_name(device_type),
                   " runs ops in float16 or bfloat16, not ", toString(dtype),
                   ": pass ember::kBFloat16 or ember::kHalf");
  d = dtype;
}

bool is_autocast_cache_enabled() { return tls().state.cache_enabled; }
void set_autocast_cache_enabled(bool enabled) {
  tls().state.cache_enabled = enabled;
}

int increment_nesting() { return ++tls().state.nesting; }
int decrement_nesting() {
  int &n = tls().state.nesting;
  if (n > 0)
    --n;
  return n;
}

void clear_cache() { tls().cache.clear(); }

const char *toString(CastPolicy p) {
  switch (p) {
  case CastPolicy::none:
    return "none";
  case CastPolicy::lower_precision_fp:
    return "lower_precision_fp";
  case CastPolicy::fp32:
    return "fp32";
  case CastPolicy::fp32_set_opt_dtype:
    return "fp32_set_opt_dtype";
  case CastPolicy::promote:
    return "promote";
  case CastPolicy::banned:
    return "banned";
  }
  return "?";
}

CastPolicy policy_of(const std::string &qualified_name, DeviceType device) {
  // "ember::pow" names every overload ("ember::pow.Scalar", ...): their
  // policy when they agree (they do: PyTorch lists ops by name).
  std::optional<CastPolicy> found;
  for (const detail::PolicyRow &r : detail::policy_table()) {
    std::string_view name(r.name);
    bool match = name == qualified_name ||
                 (name.size() > qualified_name.size() &&
                  name.substr(0, qualified_name.size()) == qualified_name &&
                  name[qualified_name.size()] == '.');
    if (!match)
      continue;
    CastPolicy p = device == kCUDA  ? r.cuda
                   : device == kCPU ? r.cpu
                                    : CastPolicy::none;
    if (name == qualified_name)
      return p;
    EMBER_CHECK(!found || *found == p, "autocast::policy_of: the overloads of ",
                qualified_name, " have different policies; name one (\"",
                r.name, "\")");
    found = p;
  }
  return found.value_or(CastPolicy::none);
}

std::string AutocastState::str() const {
  if (!cpu_enabled && !cuda_enabled)
    return "autocast off";
  std::string s = "autocast";
  if (cpu_enabled)
    s += std::string(" cpu=") + ember::toString(cpu_dtype);
  if (cuda_enabled)
    s += std::string(" cuda=") + ember::toString(cuda_dtype);
  return s;
}

AutocastState get_state() { return tls().state; }
void set_state(const AutocastState &state) {
  tls().state = state;
  sync_key();
}

namespace detail {

void note(ArgsInfo &info, const Tensor &t) {
  if (!t.defined())
    return;
  if (!info.any)
    info.first = t;
  info.any = true;
  DeviceType d = t.device().type();
  info.any_cuda = info.any_cuda || d == kCUDA;
  ScalarType st = t.dtype();
  if (isFloatingType(st) && st != kDouble) {
    std::optional<ScalarType> &w =
        d == kCUDA ? info.widest_cuda : info.widest_cpu;
    w = widen(w, st);
  }
}

Plan make_plan(const char *op, CastPolicy cpu, CastPolicy cuda,
               bool dtype_given, const ArgsInfo &info) {
  if (!info.any)
    return {};
  // The op runs on CUDA when any argument is there (CPU 0-dim tensors join
  // CUDA ones), as PyTorch's Autocast key follows the backend.
  DeviceType device = info.any_cuda ? kCUDA : kCPU;
  CastPolicy policy = device == kCUDA ? cuda : cpu;
  if (policy == CastPolicy::none || !is_autocast_enabled(device))
    return {};
  Plan p;
  p.device = device;
  switch (policy) {
  case CastPolicy::none:
    return {};
  case CastPolicy::lower_precision_fp:
    p.to = get_autocast_dtype(device);
    break;
  case CastPolicy::fp32:
    p.to = kFloat;
    break;
  case CastPolicy::fp32_set_opt_dtype: {
    // PyTorch passes dtype=float32 when the caller gave none and the first
    // argument is a castable float; casting that argument is the same.
    const Tensor &f = info.first;
    if (dtype_given || f.device().type() != device ||
        !isFloatingType(f.dtype()) || f.dtype() == kDouble)
      return {};
    p.to = kFloat;
    break;
  }
  case CastPolicy::promote: {
    const std::optional<ScalarType> &w =
        device == kCUDA ? info.widest_cuda : info.widest_cpu;
    if (!w)
      return {};
    p.to = *w;
    break;
  }
  case CastPolicy::banned:
    throw Error(ember::detail::str(
        op, " is unsafe to autocast on ", device_name(device),
        ": in float16 its result and gradient can leave the representable "
        "range, so PyTorch bans it too. Run it outside the region (or "
        "inside ember::amp::autocast(",
        device == kCUDA ? "ember::kCUDA" : "ember::kCPU",
        ", std::nullopt, /*enabled=*/false)) on float32 inputs, or use a "
        "form that is safe to autocast: binary_cross_entropy_with_logits "
        "(nn::BCEWithLogitsLoss) in place of a sigmoid followed by "
        "binary_cross_entropy."));
  }
  p.cast = true;
  return p;
}

Tensor cached_cast(const Plan &p, const Tensor &t) {
  if (!t.defined() || t.device().type() != p.device ||
      !isFloatingType(t.dtype()) || t.dtype() == kDouble || t.dtype() == p.to)
    return t;
  Tls &s = tls();
  // (under compile() capture a cast is recorded into the graph, never
  // served from or stored into the cache: a cached tensor would be baked
  // into the graph as a constant input)
  bool can_cache = s.state.cache_enabled && t.dtype() == kFloat &&
                   p.to == get_autocast_dtype(p.device) && t.requires_grad() &&
                   t.is_leaf() && !t.is_view() && !is_capturing();
  if (!can_cache)
    return t.to(p.to);
  TensorImpl *key = t.unsafeGetTensorImpl();
  auto it = s.cache.find(key);
  // A cast made again: its source was written since, or it was made under
  // no_grad and is now needed with a history (PyTorch's cache would hand
  // out the gradient-less cast).
  if (it != s.cache.end() && it->second.version == t._version() &&
      it->second.cast.dtype() == p.to &&
      (it->second.cast.requires_grad() || !GradMode::is_enabled()))
    return it->second.cast;
  Tensor r = t.to(p.to);
  s.cache[key] = CachedCast{t, t._version(), r};
  return r;
}

std::vector<Tensor> cast(const Plan &p, TensorList l) {
  std::vector<Tensor> out;
  out.reserve(l.size());
  for (const Tensor &t : l)
    out.push_back(cast(p, t));
  return out;
}

} // namespace detail
} // namespace autocast

namespace amp {

autocast::autocast(DeviceType device_type, std::optional<ScalarType> dtype,
                   bool enabled, std::optional<bool> cache_enabled)
    : saved_(ember::autocast::get_state()) {
  namespace ac = ember::autocast;
  EMBER_CHECK(ac::is_autocast_available(device_type),
              "autocast supports the device types cpu and cuda");
  if (dtype) // checked before anything changes
    ac::set_autocast_dtype(device_type, *dtype);
  if (enabled && device_type == kCUDA && !cuda::is_available()) {
    // As torch.autocast: a warning, and the region does nothing.
    logging::warn_once(
        "autocast-no-cuda",
        "autocast(cuda) was asked for, but CUDA is not available "
        "(no GPU or driver); the region runs without autocast.");
    enabled = false;
  }
  ac::set_autocast_enabled(device_type, enabled);
  if (cache_enabled)
    ac::set_autocast_cache_enabled(*cache_enabled);
  ac::increment_nesting();
}

autocast::~autocast() {
  namespace ac = ember::autocast;
  if (ac::decrement_nesting() == 0)
    ac::clear_cache();
  ac::AutocastState s = saved_;
  s.nesting = ac::get_state().nesting;
  ac::set_state(s);
}

} // namespace amp
} // namespace ember
