#pragma once
/// ModuleHolder<Impl> and EMBER_MODULE(Name): the value-semantic handles of
/// modules (libtorch's torch/nn/pimpl.h and TORCH_MODULE).
///
/// `ember::nn::Linear lin(3, 2);` constructs a LinearImpl held by a
/// std::shared_ptr; `lin->weight` reaches its members, `lin(x)` calls its
/// forward, and copies of `lin` share the same module.

#include "runtime/Error.h"

#include <memory>
#include <ostream>
#include <type_traits>
#include <utility>

namespace ember {

// Helpers live in ember::detail (libtorch: torch::detail), not in
// ember::nn::detail, which would hide ember::detail inside ember::nn.
namespace detail {
/// Base of every ModuleHolder, so templates can recognise holders.
struct ModuleHolderIndicator {};

template <class T>
inline constexpr bool is_module_holder_v =
    std::is_base_of_v<ModuleHolderIndicator, std::decay_t<T>>;

/// True when T is a ModuleHolder whose contained type is C.
template <class T, class C, class = void>
struct is_module_holder_of : std::false_type {};
template <class T, class C>
struct is_module_holder_of<T, C,
                           std::void_t<typename std::decay_t<T>::ContainedType>>
    : std::bool_constant<
          is_module_holder_v<T> &&
          std::is_same_v<typename std::decay_t<T>::ContainedType, C>> {};
} // namespace detail

namespace nn {

/// Holds a std::shared_ptr<Contained> and gives it value syntax
/// (torch::nn::ModuleHolder). Construct with the arguments of Contained's
/// constructor, with a shared_ptr to an existing module, or with nullptr for
/// an empty holder to assign later.
template <class Contained>
class ModuleHolder : public detail::ModuleHolderIndicator {
protected:
  std::shared_ptr<Contained> impl_;

public:
  using ContainedType = Contained;

  /// Default-constructs the module when Contained allows it (as libtorch;
  /// otherwise the holder is empty).
  ModuleHolder() : impl_(default_construct()) {}
  /// An empty holder (`ember::nn::Linear fc{nullptr};`).
  ModuleHolder(std::nullptr_t) : impl_(nullptr) {}
  /// Constructs Contained from the arguments.
  template <class Head, class... Tail,
            class = std::enable_if_t<
                !(detail::is_module_holder_of<Head, ContainedType>::value &&
                  sizeof...(Tail) == 0)>>
  explicit ModuleHolder(Head &&head, Tail &&...tail)
      : impl_(std::make_shared<Contained>(std::forward<Head>(head),
                                          std::forward<Tail>(tail)...)) {}
  /// Holds an existing module.
  ModuleHolder(std::shared_ptr<Contained> module) : impl_(std::move(module)) {}

  explicit operator bool() const noexcept { return !is_empty(); }
  bool is_empty() const noexcept { return impl_ == nullptr; }

  Contained *operator->() { return get(); }
  const Contained *operator->() const { return get(); }
  Contained &operator*() { return *get(); }
  const Contained &operator*() const { return *get(); }
  const std::shared_ptr<Contained> &ptr() const {
    check_nonempty();
    return impl_;
  }
  Contained *get() {
    check_nonempty();
    return impl_.get();
  }
  const Contained *get() const {
    check_nonempty();
    return impl_.get();
  }

  /// Calls the module's forward.
  template <class... Args> decltype(auto) operator()(Args &&...args) {
    return get()->forward(std::forward<Args>(args)...);
  }
  /// Indexes the module (Sequential, ModuleList).
  template <class Arg> decltype(auto) operator[](Arg &&arg) {
    return (*get())[std::forward<Arg>(arg)];
  }

private:
  static std::shared_ptr<Contained> default_construct() {
    if constexpr (std::is_default_constructible_v<Contained>)
      return std::make_shared<Contained>();
    else
      return nullptr;
  }
  void check_nonempty() const {
    EMBER_CHECK(impl_ != nullptr,
                "Accessing an empty ModuleHolder: it was constructed with "
                "nullptr (or default-constructed for a module without a "
                "default constructor); assign a module to it first");
  }
};

/// Prints the held module (as its pretty_print with children).
template <class C>
std::ostream &operator<<(std::ostream &os, const ModuleHolder<C> &holder) {
  return os << *holder;
}

} // namespace nn
} // namespace ember

/// Defines `Name` as a ModuleHolder of `Impl` (TORCH_MODULE_IMPL).
#define EMBER_MODULE_IMPL(Name, ImplType)                                      \
  class Name : public ::ember::nn::ModuleHolder<ImplType> {                    \
  public:                                                                      \
    using ::ember::nn::ModuleHolder<ImplType>::ModuleHolder;                   \
    using Impl = ImplType;                                                     \
  }

/// Defines `Name` as the holder of `Name##Impl` (TORCH_MODULE): after
/// `struct NetImpl : ember::nn::Module {...}; EMBER_MODULE(Net);`, `Net net;`
/// holds a NetImpl in a shared_ptr.
#define EMBER_MODULE(Name) EMBER_MODULE_IMPL(Name, Name##Impl)
