#pragma once
/// Dispatch keys, highest priority last: user modes -> autocast -> autograd
/// -> capture -> backend. Autograd sits above capture (as PyTorch's autograd
/// keys sit above its tracing keys), so that an op on capture tensors
/// records its autograd node and then its graph node: the joint
/// forward/backward graph of compiled training (Note [The joint graph] in
/// frontend/Capture.cpp). Autocast sits above autograd (as PyTorch's
/// Autocast keys), so that the casts it inserts are differentiated and
/// captured like any op (Note [Autocast] in eager/amp/Autocast.h).

#include <cstdint>
#include <ostream>

namespace ember {

#define EMBER_FORALL_DISPATCH_KEYS(_)                                          \
  _(CPU)                                                                       \
  _(CUDA)                                                                      \
  _(Capture)                                                                   \
  _(Autograd)                                                                  \
  _(Autocast)                                                                  \
  _(Mode)

enum class DispatchKey : uint8_t {
#define EMBER_DK(n) n,
  EMBER_FORALL_DISPATCH_KEYS(EMBER_DK)
#undef EMBER_DK
      NumKeys
};
constexpr int kNumDispatchKeys = static_cast<int>(DispatchKey::NumKeys);

const char *toString(DispatchKey k);
inline std::ostream &operator<<(std::ostream &os, DispatchKey k) {
  return os << toString(k);
}

/// A set of keys as a bitmask; the highest set bit wins.
class DispatchKeySet {
public:
  constexpr DispatchKeySet() = default;
  constexpr DispatchKeySet(DispatchKey k)
      : bits_(uint32_t(1) << static_cast<int>(k)) {}
  static constexpr DispatchKeySet fromBits(uint32_t b) {
    DispatchKeySet s;
    s.bits_ = b;
    return s;
  }
  constexpr bool has(DispatchKey k) const {
    return bits_ & (uint32_t(1) << static_cast<int>(k));
  }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr DispatchKeySet operator|(DispatchKeySet o) const {
    return fromBits(bits_ | o.bits_);
  }
  constexpr DispatchKeySet operator&(DispatchKeySet o) const {
    return fromBits(bits_ & o.bits_);
  }
  constexpr DispatchKeySet operator-(DispatchKeySet o) const {
    return fromBits(bits_ & ~o.bits_);
  }
  DispatchKeySet &operator|=(DispatchKeySet o) {
    bits_ |= o.bits_;
    return *this;
  }
  constexpr bool operator==(DispatchKeySet o) const { return bits_ == o.bits_; }
  /// The highest-priority key; undefined on an empty set.
  DispatchKey highest() const {
    return static_cast<DispatchKey>(31 - __builtin_clz(bits_));
  }
  /// Every key strictly below k.
  constexpr DispatchKeySet below(DispatchKey k) const {
    return fromBits(bits_ & ((uint32_t(1) << static_cast<int>(k)) - 1));
  }
  constexpr uint32_t raw() const { return bits_; }

private:
  uint32_t bits_ = 0;
};

/// Thread-local keys added to (included) or removed from (excluded) every
/// dispatch on this thread.
struct LocalDispatchKeySet {
  DispatchKeySet included, excluded;
};
LocalDispatchKeySet &tls_local_dispatch_key_set();

/// RAII: excludes keys for the current scope (e.g. below autograd).
class ExcludeDispatchKeyGuard {
public:
  explicit ExcludeDispatchKeyGuard(DispatchKeySet ks)
      : saved_(tls_local_dispatch_key_set().excluded) {
    tls_local_dispatch_key_set().excluded |= ks;
  }
  ~ExcludeDispatchKeyGuard() { tls_local_dispatch_key_set().excluded = saved_; }
  ExcludeDispatchKeyGuard(const ExcludeDispatchKeyGuard &) = delete;
  ExcludeDispatchKeyGuard &operator=(const ExcludeDispatchKeyGuard &) = delete;

private:
  DispatchKeySet saved_;
};
/// RAII: adds keys for the current scope.
class IncludeDispatchKeyGuard {
public:
  explicit IncludeDispatchKeyGuard(DispatchKeySet ks)
      : saved_(tls_local_dispatch_key_set().included) {
    tls_local_dispatch_key_set().included |= ks;
  }
  ~IncludeDispatchKeyGuard() { tls_local_dispatch_key_set().included = saved_; }
  IncludeDispatchKeyGuard(const IncludeDispatchKeyGuard &) = delete;
  IncludeDispatchKeyGuard &operator=(const IncludeDispatchKeyGuard &) = delete;

private:
  DispatchKeySet saved_;
};

} // namespace ember
