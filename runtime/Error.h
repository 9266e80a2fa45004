#pragma once
/// ember::Error and the EMBER_CHECK family.
///
/// Every user-facing failure is an ember::Error (or a subclass mirroring the
/// Python exception PyTorch would raise) whose message says what was wrong and
/// what to do about it.

#include <sstream>
#include <stdexcept>
#include <string>

namespace ember {

class Error : public std::runtime_error {
public:
  explicit Error(const std::string &msg) : std::runtime_error(msg) {}
};
/// Index out of range (PyTorch: IndexError).
class IndexError : public Error {
public:
  using Error::Error;
};
/// Bad value for an argument (PyTorch: ValueError).
class ValueError : public Error {
public:
  using Error::Error;
};
/// Wrong type or dtype for an argument (PyTorch: TypeError).
class TypeError : public Error {
public:
  using Error::Error;
};

/// No kernel for this op on this backend or dtype (PyTorch:
/// NotImplementedError).
class NotImplementedError : public Error {
public:
  using Error::Error;
};

/// An allocation the device cannot satisfy, even after the allocator
/// released its cache (PyTorch: torch.OutOfMemoryError). The process goes
/// on: free tensors, or ask for less.
class OutOfMemoryError : public Error {
public:
  using Error::Error;
};

namespace detail {
template <class... Args> std::string str(const Args &...args) {
  std::ostringstream ss;
  (ss << ... << args);
  return ss.str();
}
} // namespace detail
} // namespace ember

#define EMBER_CHECK_TYPED(ERR, cond, ...)                                      \
  do {                                                                         \
    if (__builtin_expect(!(cond), 0))                                          \
      throw ::ember::ERR(::ember::detail::str(__VA_ARGS__));                   \
  } while (0)

/// Throws ember::Error with the streamed message when `cond` is false.
#define EMBER_CHECK(cond, ...) EMBER_CHECK_TYPED(Error, cond, __VA_ARGS__)
#define EMBER_CHECK_INDEX(cond, ...)                                           \
  EMBER_CHECK_TYPED(IndexError, cond, __VA_ARGS__)
#define EMBER_CHECK_VALUE(cond, ...)                                           \
  EMBER_CHECK_TYPED(ValueError, cond, __VA_ARGS__)
#define EMBER_CHECK_TYPE(cond, ...)                                            \
  EMBER_CHECK_TYPED(TypeError, cond, __VA_ARGS__)
/// Internal invariant: a failure is a bug in ember, not in the caller.
#define EMBER_INTERNAL_ASSERT(cond)                                            \
  EMBER_CHECK(cond, "internal assert failed at " __FILE__ ":", __LINE__,       \
              ": " #cond ". This is a bug in ember; please report it.")
