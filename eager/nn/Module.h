#pragma once
/// ember::nn::Module: the base class of neural-network modules (libtorch's
/// torch/nn/module.h). A module owns named parameters, buffers and
/// submodules; the recursive accessors name nested entries with dots
/// ("fc1.weight", "block.0.bias").
///
///   struct NetImpl : ember::nn::Module {
///     NetImpl() : fc1(register_module("fc1", ember::nn::Linear(4, 8))) {}
///     ember::Tensor forward(ember::Tensor x) { return fc1(x); }
///     ember::nn::Linear fc1;
///   };
///   EMBER_MODULE(Net);

#include "eager/Tensor.h"
#include "eager/nn/OrderedDict.h"
#include "eager/nn/Pimpl.h"

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <typeinfo>
#include <vector>

namespace ember {
namespace serialize {
class OutputArchive;
class InputArchive;
} // namespace serialize

namespace detail {
/// The demangled name of a C++ type ("ember::nn::LinearImpl").
std::string demangle_type(const std::type_info &type);
} // namespace detail

namespace nn {

/// The base class of all modules (torch::nn::Module). Modules are meant to
/// live in a std::shared_ptr (through a ModuleHolder or make_shared):
/// modules(), named_modules() and apply() on shared_ptrs need it.
class Module : public std::enable_shared_from_this<Module> {
public:
  using ModuleApplyFunction = std::function<void(Module &)>;
  using ConstModuleApplyFunction = std::function<void(const Module &)>;
  using NamedModuleApplyFunction =
      std::function<void(const std::string &, Module &)>;
  using ConstNamedModuleApplyFunction =
      std::function<void(const std::string &, const Module &)>;
  using ModulePointerApplyFunction =
      std::function<void(const std::shared_ptr<Module> &)>;
  using NamedModulePointerApplyFunction =
      std::function<void(const std::string &, const std::shared_ptr<Module> &)>;

  /// A module with an explicit name (returned by name()).
  explicit Module(std::string name);
  /// A module named after its C++ type.
  Module();
  Module(const Module &) = default;
  Module &operator=(const Module &) = default;
  Module(Module &&) noexcept = default;
  Module &operator=(Module &&) noexcept = default;
  virtual ~Module() = default;

  /// The module's name: the one given to the constructor, else its demangled
  /// C++ type ("ember::nn::LinearImpl").
  const std::string &name() const noexcept;

  /// A deep copy with fresh parameters holding the same values, optionally
  /// on `device`. Modules get it by deriving from Cloneable<Derived>;
  /// Module itself raises.
  virtual std::shared_ptr<Module>
  clone(const std::optional<Device> &device = std::nullopt) const;

  // --- traversal -----------------------------------------------------------
  /// Calls fn on this module, then on every submodule, depth first.
  void apply(const ModuleApplyFunction &fn);
  void apply(const ConstModuleApplyFunction &fn) const;
  /// As apply, with each module's dotted name (this module gets
  /// name_prefix).
  void apply(const NamedModuleApplyFunction &fn,
             const std::string &name_prefix = std::string());
  void apply(const ConstNamedModuleApplyFunction &fn,
             const std::string &name_prefix = std::string()) const;
  /// As apply, with shared_ptrs (this module must live in a shared_ptr).
  void apply(const ModulePointerApplyFunction &fn) const;
  void apply(const NamedModulePointerApplyFunction &fn,
             const std::string &name_prefix = std::string()) const;

  /// Parameters of this module and (recurse) of its submodules, in
  /// registration order, depth first. Undefined parameters are skipped.
  std::vector<Tensor> parameters(bool recurse = true) const;
  /// As parameters(), keyed by dotted names ("fc1.weight").
  OrderedDict<std::string, Tensor> named_parameters(bool recurse = true) const;
  /// Buffers (running statistics, ...) of this module and its submodules.
  std::vector<Tensor> buffers(bool recurse = true) const;
  OrderedDict<std::string, Tensor> named_buffers(bool recurse = true) const;
  /// This module (include_self) and every submodule, depth first.
  std::vector<std::shared_ptr<Module>> modules(bool include_self = true) const;
  /// As modules(), keyed by dotted names; this module's key is name_prefix.
  OrderedDict<std::string, std::shared_ptr<Module>>
  named_modules(const std::string &name_prefix = std::string(),
                bool include_self = true) const;
  /// The direct submodules.
  std::vector<std::shared_ptr<Module>> children() const;
  OrderedDict<std::string, std::shared_ptr<Module>> named_children() const;

  // --- modes and conversion ------------------------------------------------
  /// Training (true) or evaluation (false) mode for this module and all its
  /// submodules: Dropout and BatchNorm behave differently in each.
  virtual void train(bool on = true);
  /// train(false).
  void eval();
  virtual bool is_training() const noexcept;
  /// How many times any module's training flag changed in this process
  /// (compile()'s replay mode replays nothing captured before a change).
  static uint64_t mode_changes() noexcept;

  /// Moves and converts every parameter and buffer in place: the tensors
  /// keep their identity (members such as `weight` still alias the
  /// registered parameter) and requires_grad. A dtype applies to
  /// floating-point tensors only (see Note [Module::to and dtypes]).
  virtual void to(Device device, ScalarType dtype, bool non_blocking = false);
  virtual void to(ScalarType dtype, bool non_blocking = false);
  virtual void to(Device device, bool non_blocking = false);

  /// Clears the gradients of all parameters: undefined when set_to_none,
  /// else zeroed (and detached).
  virtual void zero_grad(bool set_to_none = true);

  /// This module as ModuleType (a holder type or an Impl type), or null.
  template <class ModuleType>
  typename ModuleType::ContainedType *as() noexcept {
    return as<typename ModuleType::ContainedType>();
  }
  template <class ModuleType>
  const typename ModuleType::ContainedType *as() const noexcept {
    return as<typename ModuleType::ContainedType>();
  }
  template <class ModuleType,
            class = std::enable_if_t<!detail::is_module_holder_v<ModuleType>>>
  ModuleType *as() noexcept {
    return dynamic_cast<ModuleType *>(this);
  }
  template <class ModuleType,
            class = std::enable_if_t<!detail::is_module_holder_v<ModuleType>>>
  const ModuleType *as() const noexcept {
    return dynamic_cast<const ModuleType *>(this);
  }

  // --- serialization (eager/nn/Serialize.h) --------------------------------
  /// Writes parameters, buffers and (nested archives of) submodules.
  virtual void save(serialize::OutputArchive &archive) const;
  /// Reads them back into the existing tensors, in place.
  virtual void load(serialize::InputArchive &archive);
  /// Whether save()/load() include this module (true by default).
  virtual bool is_serializable() const;

  /// Prints a one-line description of this module (without children);
  /// operator<< adds the children, indented.
  virtual void pretty_print(std::ostream &stream) const;

  // --- registration ----------------------------------------------------------
  /// Registers `tensor` as parameter `name` (sets its requires_grad) and
  /// returns the stored handle. An undefined tensor registers an absent
  /// parameter (e.g. the bias of Linear with bias=false).
  Tensor &register_parameter(std::string name, Tensor tensor,
                             bool requires_grad = true);
  /// Registers a buffer: state that is saved and moved with the module but
  /// is not a parameter.
  Tensor &register_buffer(std::string name, Tensor tensor);
  /// Registers a submodule and returns it.
  template <class ModuleType>
  std::shared_ptr<ModuleType>
  register_module(std::string name, std::shared_ptr<ModuleType> module) {
    check_submodule(name, module != nullptr, false);
    children_.insert(std::move(name), module);
    return module;
  }
  template <class ModuleType>
  std::shared_ptr<ModuleType> register_module(std::string name,
                                              ModuleHolder<ModuleType> holder) {
    return register_module(std::move(name), holder.ptr());
  }
  /// Replaces an already registered submodule.
  template <class ModuleType>
  std::shared_ptr<ModuleType>
  replace_module(const std::string &name, std::shared_ptr<ModuleType> module) {
    check_submodule(name, module != nullptr, true);
    children_[name] = module;
    return module;
  }
  template <class ModuleType>
  std::shared_ptr<ModuleType> replace_module(const std::string &name,
                                             ModuleHolder<ModuleType> holder) {
    return replace_module(name, holder.ptr());
  }
  /// Removes a registered submodule.
  void unregister_module(const std::string &name);

protected:
  /// Parameters, buffers and submodules in registration order.
  OrderedDict<std::string, Tensor> parameters_{"Parameter"};
  OrderedDict<std::string, Tensor> buffers_{"Buffer"};
  OrderedDict<std::string, std::shared_ptr<Module>> children_{"Submodule"};

  /// Called by Cloneable::clone on a copy's submodule to make it a deep
  /// copy of `other` (a module of the same type).
  virtual void clone_(Module &other, const std::optional<Device> &device);

private:
  friend std::ostream &operator<<(std::ostream &stream, const Module &module);
  template <class Derived> friend class Cloneable;

  /// Replaces the data of this module's own parameters (and their
  /// gradients) and buffers by convert(tensor), in place.
  void
  convert_own_tensors(const std::function<Tensor(const Tensor &)> &convert);
  void pretty_print_recursive(std::ostream &stream,
                              const std::string &indentation) const;
  void apply_to_submodules(const NamedModulePointerApplyFunction &fn,
                           const std::string &name_prefix) const;
  std::shared_ptr<Module> shared_from_this_checked() const;
  void check_submodule(const std::string &name, bool defined,
                       bool replacing) const;

  mutable std::optional<std::string> name_;
  bool is_training_ = true;
};

/// Prints the module and its submodules, as libtorch:
///   ember::nn::Sequential(
///     (0): ember::nn::Linear(in_features=3, out_features=2, bias=true)
///     (1): ember::nn::ReLU()
///   )
std::ostream &operator<<(std::ostream &stream, const Module &module);

} // namespace nn
} // namespace ember
