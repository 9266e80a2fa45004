#pragma once
/// Containers of modules (libtorch's torch/nn/modules/container/*.h):
/// AnyValue and AnyModule (type-erased module calls), Sequential (a chain of
/// modules called in order), ModuleList (an indexable list of submodules)
/// and Functional (a function wrapped as a module).
///
///   ember::nn::Sequential seq(ember::nn::Linear(3, 4), ember::nn::ReLU(),
///                             ember::nn::Linear(4, 1));
///   ember::Tensor y = seq->forward(x);

#include "eager/nn/Cloneable.h"

#include <any>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <tuple>
#include <typeinfo>
#include <utility>
#include <vector>

namespace ember {
namespace detail {
/// The argument types of a module's forward member function.
template <class F> struct ForwardTraits;
template <class C, class R, class... A> struct ForwardTraits<R (C::*)(A...)> {
  using Args = std::tuple<A...>;
};
template <class C, class R, class... A>
struct ForwardTraits<R (C::*)(A...) const> : ForwardTraits<R (C::*)(A...)> {};

/// The argument types of M::forward as a std::tuple. A module whose forward
/// is a template (Sequential) or overloaded is called with one Tensor, so
/// that it can be chained inside a Sequential.
template <class M, class = void> struct ForwardArgs {
  using type = std::tuple<Tensor>;
};
template <class M> struct ForwardArgs<M, std::void_t<decltype(&M::forward)>> {
  using type = typename ForwardTraits<decltype(&M::forward)>::Args;
};

/// True when Args is exactly one C (so a variadic constructor of C does not
/// hide its copy and move constructors).
template <class C, class... Args> struct is_self : std::false_type {};
template <class C, class A>
struct is_self<C, A> : std::is_same<C, std::decay_t<A>> {};
template <class C, class... Args>
inline constexpr bool is_self_v = is_self<C, Args...>::value;

/// True for module types held by value (not holders, not shared_ptrs).
template <class M>
inline constexpr bool is_module_value_v =
    std::is_base_of_v<nn::Module, std::decay_t<M>> && !is_module_holder_v<M>;
} // namespace detail

namespace nn {

/// A value of any (copyable) type: the argument or result of a type-erased
/// forward call (torch::nn::AnyValue).
class AnyValue {
public:
  template <class T, class = std::enable_if_t<
                         !std::is_same_v<std::decay_t<T>, AnyValue>>>
  explicit AnyValue(T &&value) : value_(std::forward<T>(value)) {}

  /// A pointer to the value if it is a T, else null.
  template <class T> T *try_get() { return std::any_cast<T>(&value_); }
  template <class T> const T *try_get() const {
    return std::any_cast<T>(&value_);
  }
  /// The value as a T; raises when it holds another type.
  template <class T> T get() const {
    if (const T *p = try_get<T>())
      return *p;
    throw TypeError(detail::str(
        "Attempted to cast AnyValue to ", detail::demangle_type(typeid(T)),
        ", but its actual type is ", detail::demangle_type(type_info())));
  }
  const std::type_info &type_info() const noexcept { return value_.type(); }

private:
  std::any value_;
};

/// Any module with a forward method, behind one interface: forward arguments
/// and results travel as AnyValues (torch::nn::AnyModule). forward's
/// argument types must match exactly (an int is not an int64_t).
class AnyModule {
public:
  AnyModule() = default;
  template <class M>
  explicit AnyModule(std::shared_ptr<M> module)
      : content_(make_holder(std::move(module))) {}
  template <class M, class = std::enable_if_t<detail::is_module_value_v<M>>>
  explicit AnyModule(M &&module)
      : AnyModule(std::make_shared<std::decay_t<M>>(std::forward<M>(module))) {}
  template <class M>
  explicit AnyModule(const ModuleHolder<M> &holder) : AnyModule(holder.ptr()) {}

  /// Calls forward and returns its result as an AnyValue.
  template <class... Args> AnyValue any_forward(Args &&...args) {
    check_nonempty();
    std::vector<AnyValue> values;
    values.reserve(sizeof...(Args));
    (values.emplace_back(std::forward<Args>(args)), ...);
    return content_->forward(std::move(values));
  }
  /// Calls forward and returns its result as a Return.
  template <class Return = Tensor, class... Args>
  Return forward(Args &&...args) {
    return any_forward(std::forward<Args>(args)...).template get<Return>();
  }

  /// The module.
  std::shared_ptr<Module> ptr() const {
    check_nonempty();
    return content_->module();
  }
  /// The module as a T (raises when it is of another type).
  template <class T, class = std::enable_if_t<!detail::is_module_holder_v<T>>>
  std::shared_ptr<T> ptr() const {
    auto p = std::dynamic_pointer_cast<T>(ptr());
    EMBER_CHECK_TYPE(p != nullptr, "Attempted to cast module of type ",
                     detail::demangle_type(type_info()), " to type ",
                     detail::demangle_type(typeid(T)));
    return p;
  }
  template <class T, class = std::enable_if_t<!detail::is_module_holder_v<T>>>
  T &get() const {
    return *ptr<T>();
  }
  template <class T, class C = typename T::ContainedType> T get() const {
    return T(ptr<C>());
  }
  /// A deep copy of the module (Module::clone).
  AnyModule clone(const std::optional<Device> &device = std::nullopt) const {
    check_nonempty();
    AnyModule copy;
    copy.content_ = content_->clone(device);
    return copy;
  }
  bool is_empty() const noexcept { return content_ == nullptr; }
  const std::type_info &type_info() const {
    check_nonempty();
    return content_->type();
  }

private:
  struct Placeholder {
    virtual ~Placeholder() = default;
    virtual AnyValue forward(std::vector<AnyValue> &&args) = 0;
    virtual std::shared_ptr<Module> module() const = 0;
    virtual std::shared_ptr<Placeholder>
    clone(const std::optional<Device> &device) const = 0;
    virtual const std::type_info &type() const = 0;
  };

  template <class M, class Args> struct Holder;
  template <class M, class... A>
  struct Holder<M, std::tuple<A...>> : Placeholder {
    using Return = decltype(std::declval<M &>().forward(std::declval<A>()...));
    static_assert(!std::is_void_v<Return>,
                  "AnyModule needs a forward() that returns a value");

    explicit Holder(std::shared_ptr<M> m) : module_(std::move(m)) {}

    AnyValue forward(std::vector<AnyValue> &&args) override {
      EMBER_CHECK(args.size() == sizeof...(A), detail::demangle_type(type()),
                  "'s forward() expects ", sizeof...(A),
                  " argument(s), but received ", args.size());
      return call(args, std::index_sequence_for<A...>{});
    }
    template <size_t... I>
    AnyValue call(std::vector<AnyValue> &args, std::index_sequence<I...>) {
      return AnyValue(module_->forward(arg<A, I>(args)...));
    }
    /// Argument I as forward's parameter type T wants it: an lvalue for
    /// reference parameters, moved out for value and rvalue parameters.
    template <class T, size_t I>
    static std::conditional_t<std::is_lvalue_reference_v<T>, std::decay_t<T> &,
                              std::decay_t<T> &&>
    arg(std::vector<AnyValue> &args) {
      using D = std::decay_t<T>;
      D *p = args[I].template try_get<D>();
      EMBER_CHECK_TYPE(p != nullptr, "Expected argument #", I,
                       " to be of type ", detail::demangle_type(typeid(D)),
                       ", but received value of type ",
                       detail::demangle_type(args[I].type_info()));
      if constexpr (std::is_lvalue_reference_v<T>)
        return *p;
      else
        return std::move(*p);
    }
    std::shared_ptr<Module> module() const override { return module_; }
    std::shared_ptr<Placeholder>
    clone(const std::optional<Device> &device) const override {
      auto copy = std::dynamic_pointer_cast<M>(module_->clone(device));
      EMBER_CHECK(copy != nullptr, "Cloning a module of type ",
                  detail::demangle_type(type()),
                  " returned a module of another type");
      return std::make_shared<Holder>(std::move(copy));
    }
    const std::type_info &type() const override { return typeid(M); }

    std::shared_ptr<M> module_;
  };

  template <class M>
  static std::shared_ptr<Placeholder> make_holder(std::shared_ptr<M> m) {
    static_assert(std::is_base_of_v<Module, M>,
                  "AnyModule holds modules (classes derived from "
                  "ember::nn::Module)");
    EMBER_CHECK(m != nullptr, "Cannot store an empty module in an AnyModule");
    return std::make_shared<Holder<M, typename detail::ForwardArgs<M>::type>>(
        std::move(m));
  }
  void check_nonempty() const {
    EMBER_CHECK(content_ != nullptr, "This AnyModule holds no module");
  }

  std::shared_ptr<Placeholder> content_;
};

/// A name and a module, for building a Sequential with named children:
/// `Sequential({{"fc", Linear(3, 4)}, {"act", ReLU()}})`.
class NamedAnyModule {
public:
  template <class M>
  NamedAnyModule(std::string name, std::shared_ptr<M> module)
      : name_(std::move(name)), module_(std::move(module)) {}
  template <class M, class = std::enable_if_t<detail::is_module_value_v<M>>>
  NamedAnyModule(std::string name, M &&module)
      : name_(std::move(name)), module_(std::forward<M>(module)) {}
  template <class M>
  NamedAnyModule(std::string name, const ModuleHolder<M> &holder)
      : name_(std::move(name)), module_(holder) {}
  NamedAnyModule(std::string name, AnyModule module)
      : name_(std::move(name)), module_(std::move(module)) {}

  const std::string &name() const noexcept { return name_; }
  const AnyModule &module() const noexcept { return module_; }

private:
  std::string name_;
  AnyModule module_;
};

// =============================================================================
// Sequential
// =============================================================================

/// Modules called one after the other, each on the previous one's output
/// (torch::nn::Sequential). Children are named "0", "1", ... unless names
/// are given.
class SequentialImpl : public Cloneable<SequentialImpl> {
public:
  using Iterator = std::vector<AnyModule>::iterator;
  using ConstIterator = std::vector<AnyModule>::const_iterator;

  SequentialImpl() = default;
  /// From modules (holders, shared_ptrs, module values or AnyModules).
  template <
      class... Modules,
      class = std::enable_if_t<!detail::is_self_v<SequentialImpl, Modules...>>>
  explicit SequentialImpl(Modules &&...modules) {
    modules_.reserve(sizeof...(Modules));
    (push_back(std::forward<Modules>(modules)), ...);
  }
  /// From named modules.
  explicit SequentialImpl(std::initializer_list<NamedAnyModule> named_modules);
  explicit SequentialImpl(OrderedDict<std::string, AnyModule> &&ordered_dict);

  /// Clones every module.
  std::shared_ptr<Module>
  clone(const std::optional<Device> &device = std::nullopt) const override;
  void reset() override {}
  void pretty_print(std::ostream &stream) const override;

  /// Feeds the inputs to the first module, and each result to the next.
  template <class ReturnType = Tensor, class... InputTypes>
  ReturnType forward(InputTypes &&...inputs) {
    EMBER_CHECK(!is_empty(), "Cannot call forward() on an empty Sequential");
    auto it = modules_.begin();
    AnyValue value = it->any_forward(std::forward<InputTypes>(inputs)...);
    for (++it; it != modules_.end(); ++it)
      value = it->any_forward(std::move(value));
    if (auto *result = value.template try_get<ReturnType>())
      return std::move(*result);
    throw TypeError(detail::str("The type of the return value is ",
                                detail::demangle_type(value.type_info()),
                                ", but you asked for type ",
                                detail::demangle_type(typeid(ReturnType))));
  }

  /// Appends a module, named by its position or by `name`.
  void push_back(AnyModule any_module) {
    push_back(std::to_string(modules_.size()), std::move(any_module));
  }
  void push_back(std::string name, AnyModule any_module);
  template <class M> void push_back(std::shared_ptr<M> module) {
    push_back(AnyModule(std::move(module)));
  }
  template <class M> void push_back(std::string name, std::shared_ptr<M> m) {
    push_back(std::move(name), AnyModule(std::move(m)));
  }
  template <class M> void push_back(const ModuleHolder<M> &holder) {
    push_back(holder.ptr());
  }
  template <class M>
  void push_back(std::string name, const ModuleHolder<M> &holder) {
    push_back(std::move(name), holder.ptr());
  }
  template <class M, class = std::enable_if_t<detail::is_module_value_v<M>>>
  void push_back(M &&module) {
    push_back(std::make_shared<std::decay_t<M>>(std::forward<M>(module)));
  }
  template <class M, class = std::enable_if_t<detail::is_module_value_v<M>>>
  void push_back(std::string name, M &&module) {
    push_back(std::move(name),
              std::make_shared<std::decay_t<M>>(std::forward<M>(module)));
  }
  /// Appends every module of a container (another Sequential's modules, a
  /// vector of holders, ...).
  template <class Container> void extend(const Container &container) {
    for (const auto &module : container)
      push_back(module);
  }

  Iterator begin() { return modules_.begin(); }
  ConstIterator begin() const { return modules_.begin(); }
  Iterator end() { return modules_.end(); }
  ConstIterator end() const { return modules_.end(); }

  /// The module at `index` as a T (an Impl type).
  template <class T> T &at(size_t index) {
    check_index(index);
    return modules_[index].get<T>();
  }
  template <class T> const T &at(size_t index) const {
    check_index(index);
    return modules_[index].get<T>();
  }
  std::shared_ptr<Module> ptr(size_t index) const {
    check_index(index);
    return modules_[index].ptr();
  }
  template <class T> std::shared_ptr<T> ptr(size_t index) const {
    check_index(index);
    return modules_[index].ptr<T>();
  }
  std::shared_ptr<Module> operator[](size_t index) const { return ptr(index); }
  size_t size() const noexcept { return modules_.size(); }
  bool is_empty() const noexcept { return modules_.empty(); }

private:
  void check_index(size_t index) const;
  std::vector<AnyModule> modules_;
};
/// The holder of SequentialImpl; also constructible from named modules:
/// `Sequential seq({{"fc", Linear(3, 4)}, {"act", ReLU()}});`.
class Sequential : public ModuleHolder<SequentialImpl> {
public:
  using ModuleHolder<SequentialImpl>::ModuleHolder;
  using Impl = SequentialImpl;
  Sequential() : ModuleHolder() {}
  Sequential(std::initializer_list<NamedAnyModule> named_modules)
      : ModuleHolder(std::make_shared<SequentialImpl>(named_modules)) {}
};

// =============================================================================
// ModuleList
// =============================================================================

/// A list of submodules, registered as "0", "1", ... (torch::nn::ModuleList).
/// It has no forward: iterate over it in the owner's forward.
class ModuleListImpl : public Cloneable<ModuleListImpl> {
public:
  using Iterator = std::vector<std::shared_ptr<Module>>::iterator;
  using ConstIterator = std::vector<std::shared_ptr<Module>>::const_iterator;

  ModuleListImpl() = default;
  template <
      class... Modules,
      class = std::enable_if_t<!detail::is_self_v<ModuleListImpl, Modules...>>>
  explicit ModuleListImpl(Modules &&...modules) {
    modules_.reserve(sizeof...(Modules));
    (push_back(std::forward<Modules>(modules)), ...);
  }

  std::shared_ptr<Module>
  clone(const std::optional<Device> &device = std::nullopt) const override;
  void reset() override {}
  void pretty_print(std::ostream &stream) const override;

  void push_back(std::shared_ptr<Module> module);
  template <class M, class = std::enable_if_t<std::is_base_of_v<Module, M> &&
                                              !std::is_same_v<M, Module>>>
  void push_back(std::shared_ptr<M> module) {
    push_back(std::shared_ptr<Module>(std::move(module)));
  }
  template <class M> void push_back(const ModuleHolder<M> &holder) {
    push_back(holder.ptr());
  }
  template <class M, class = std::enable_if_t<detail::is_module_value_v<M>>>
  void push_back(M &&module) {
    push_back(std::make_shared<std::decay_t<M>>(std::forward<M>(module)));
  }
  template <class Container> void extend(const Container &container) {
    for (const auto &module : container)
      push_back(module);
  }
  /// Inserts at `index` (0 <= index <= size()), renumbering the rest.
  void insert(size_t index, std::shared_ptr<Module> module);
  template <class M> void insert(size_t index, const ModuleHolder<M> &holder) {
    insert(index, std::shared_ptr<Module>(holder.ptr()));
  }

  Iterator begin() { return modules_.begin(); }
  ConstIterator begin() const { return modules_.begin(); }
  Iterator end() { return modules_.end(); }
  ConstIterator end() const { return modules_.end(); }

  template <class T> T &at(size_t index) { return *ptr<T>(index); }
  template <class T> const T &at(size_t index) const { return *ptr<T>(index); }
  std::shared_ptr<Module> ptr(size_t index) const {
    check_index(index);
    return modules_[index];
  }
  template <class T> std::shared_ptr<T> ptr(size_t index) const {
    auto p = std::dynamic_pointer_cast<T>(ptr(index));
    EMBER_CHECK_TYPE(p != nullptr, "Unable to cast module[", index, "] (",
                     ptr(index)->name(), ") to ",
                     detail::demangle_type(typeid(T)));
    return p;
  }
  std::shared_ptr<Module> operator[](size_t index) const { return ptr(index); }
  size_t size() const noexcept { return modules_.size(); }
  bool is_empty() const noexcept { return modules_.empty(); }

private:
  void check_index(size_t index) const;
  std::vector<std::shared_ptr<Module>> modules_;
};
EMBER_MODULE(ModuleList);

// =============================================================================
// Functional
// =============================================================================

/// A function of one tensor as a module, for use in a Sequential
/// (torch::nn::Functional): `Functional(ember::relu)`, or with bound extra
/// arguments, `Functional(ember::leaky_relu, 0.2)`.
class FunctionalImpl : public Cloneable<FunctionalImpl> {
public:
  using Function = std::function<Tensor(Tensor)>;
  explicit FunctionalImpl(Function function);
  template <class F, class A, class... Rest>
  explicit FunctionalImpl(F function, A &&arg, Rest &&...rest)
      : FunctionalImpl(Function([function, args = std::make_tuple(
                                               std::forward<A>(arg),
                                               std::forward<Rest>(rest)...)](
                                    Tensor input) {
          return std::apply(
              [&](const auto &...a) { return function(input, a...); }, args);
        })) {}

  void reset() override {}
  void pretty_print(std::ostream &stream) const override;
  Tensor forward(Tensor input);
  Tensor operator()(Tensor input) { return forward(std::move(input)); }
  /// Functions hold no state, so nothing is saved.
  bool is_serializable() const override;

private:
  Function function_;
};
EMBER_MODULE(Functional);

} // namespace nn
} // namespace ember
