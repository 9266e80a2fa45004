#include "eager/nn/Module.h"

#include "eager/autograd/GradMode.h"
#include "eager/autograd/Variable.h"
#include "eager/nn/Serialize.h"

#include <cxxabi.h>

#include <atomic>
#include <cstdlib>

namespace ember {

std::string detail::demangle_type(const std::type_info &type) {
  int status = 0;
  char *out = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  if (status != 0 || out == nullptr)
    return type.name();
  std::string s(out);
  std::free(out);
  return s;
}

namespace nn {

namespace {

std::string join_name(const std::string &prefix, const std::string &name) {
  if (prefix.empty())
    return name;
  return prefix + "." + name;
}

void check_name(const std::string &name, const char *what) {
  EMBER_CHECK(!name.empty(), what, " name must not be empty");
  EMBER_CHECK(name.find('.') == std::string::npos, what,
              " name must not contain a dot (got '", name, "')");
}

} // namespace

Module::Module(std::string name) : name_(std::move(name)) {}
Module::Module() = default;

const std::string &Module::name() const noexcept {
  // Computed lazily: typeid(*this) names the most derived type only once
  // the constructors have run.
  if (!name_)
    name_ = detail::demangle_type(typeid(*this));
  return *name_;
}

std::shared_ptr<Module>
Module::clone(const std::optional<Device> & /*device*/) const {
  throw NotImplementedError(ember::detail::str(
      "clone() has not been implemented for ", name(),
      ". Subclass ember::nn::Cloneable<", name(),
      "> instead of ember::nn::Module to inherit the ability to clone."));
}

void Module::clone_(Module & /*other*/, const std::optional<Device> &) {
  throw NotImplementedError(ember::detail::str(
      "clone() has not been implemented for ", name(),
      ", a submodule of the module being cloned. Subclass "
      "ember::nn::Cloneable<",
      name(),
      "> instead of ember::nn::Module to inherit the ability to "
      "clone."));
}

// --- traversal ---------------------------------------------------------------

void Module::apply(const ModuleApplyFunction &fn) {
  fn(*this);
  for (auto &child : children_)
    child.value()->apply(fn);
}

void Module::apply(const ConstModuleApplyFunction &fn) const {
  fn(*this);
  for (const auto &child : children_)
    static_cast<const Module &>(*child.value()).apply(fn);
}

void Module::apply(const NamedModuleApplyFunction &fn,
                   const std::string &name_prefix) {
  fn(name_prefix, *this);
  for (auto &child : children_)
    child.value()->apply(fn, join_name(name_prefix, child.key()));
}

void Module::apply(const ConstNamedModuleApplyFunction &fn,
                   const std::string &name_prefix) const {
  fn(name_prefix, *this);
  for (const auto &child : children_)
    static_cast<const Module &>(*child.value())
        .apply(fn, join_name(name_prefix, child.key()));
}

void Module::apply(const ModulePointerApplyFunction &fn) const {
  fn(shared_from_this_checked());
  apply_to_submodules(
      [&fn](const std::string &, const std::shared_ptr<Module> &m) { fn(m); },
      std::string());
}

void Module::apply(const NamedModulePointerApplyFunction &fn,
                   const std::string &name_prefix) const {
  fn(name_prefix, shared_from_this_checked());
  apply_to_submodules(fn, name_prefix);
}

void Module::apply_to_submodules(const NamedModulePointerApplyFunction &fn,
                                 const std::string &name_prefix) const {
  for (const auto &child : children_) {
    std::string qualified = join_name(name_prefix, child.key());
    fn(qualified, child.value());
    child.value()->apply_to_submodules(fn, qualified);
  }
}

std::shared_ptr<Module> Module::shared_from_this_checked() const {
  std::shared_ptr<const Module> ptr = weak_from_this().lock();
  EMBER_CHECK(ptr != nullptr,
              "It looks like you attempted to retrieve your top-level module "
              "as a shared_ptr, but it is not stored in a shared_ptr. Use "
              "std::make_shared<",
              name(), ">() instead of ", name(),
              "() to create the module (or hold it in a ModuleHolder).");
  return std::const_pointer_cast<Module>(ptr);
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  return named_parameters(recurse).values();
}

OrderedDict<std::string, Tensor> Module::named_parameters(bool recurse) const {
  OrderedDict<std::string, Tensor> result("Parameter");
  if (!recurse) {
    for (const auto &p : parameters_)
      if (p.value().defined())
        result.insert(p.key(), p.value());
    return result;
  }
  apply([&result](const std::string &prefix, const Module &m) {
    for (const auto &p : m.parameters_)
      if (p.value().defined())
        result.insert(join_name(prefix, p.key()), p.value());
  });
  return result;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  return named_buffers(recurse).values();
}

OrderedDict<std::string, Tensor> Module::named_buffers(bool recurse) const {
  OrderedDict<std::string, Tensor> result("Buffer");
  if (!recurse) {
    for (const auto &b : buffers_)
      if (b.value().defined())
        result.insert(b.key(), b.value());
    return result;
  }
  apply([&result](const std::string &prefix, const Module &m) {
    for (const auto &b : m.buffers_)
      if (b.value().defined())
        result.insert(join_name(prefix, b.key()), b.value());
  });
  return result;
}

std::vector<std::shared_ptr<Module>> Module::modules(bool include_self) const {
  return named_modules(std::string(), include_self).values();
}

OrderedDict<std::string, std::shared_ptr<Module>>
Module::named_modules(const std::string &name_prefix, bool include_self) const {
  OrderedDict<std::string, std::shared_ptr<Module>> result("Module");
  auto add = [&result](const std::string &key,
                       const std::shared_ptr<Module> &m) {
    result.insert(key, m);
  };
  if (include_self)
    apply(NamedModulePointerApplyFunction(add), name_prefix);
  else
    apply_to_submodules(add, name_prefix);
  return result;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  return children_.values();
}

OrderedDict<std::string, std::shared_ptr<Module>>
Module::named_children() const {
  return children_;
}

// --- modes and conversion ----------------------------------------------------

namespace {
std::atomic<uint64_t> g_mode_changes{0};
} // namespace

void Module::train(bool on) {
  for (auto &child : children_)
    child.value()->train(on);
  if (is_training_ != on)
    ++g_mode_changes;
  is_training_ = on;
}

uint64_t Module::mode_changes() noexcept { return g_mode_changes.load(); }

void Module::eval() { train(false); }

bool Module::is_training() const noexcept { return is_training_; }

// Note [Module::to and dtypes]
// Module::to converts each registered tensor with Tensor::to and installs the
// result in the existing TensorImpl (TensorImpl::set_data_from, libtorch's
// set_data), so every handle to a parameter (the module's `weight` member,
// an optimizer's parameter list) sees the converted data, and the autograd
// meta (requires_grad) stays. A dtype applies to floating-point tensors only,
// as PyTorch's Module.to: integer buffers such as BatchNorm's
// num_batches_tracked keep their dtype (libtorch would convert them too).
// Gradients that exist are converted with their parameters.
void Module::convert_own_tensors(
    const std::function<Tensor(const Tensor &)> &convert) {
  NoGradGuard no_grad;
  auto apply_to = [&](Tensor &t) {
    if (!t.defined())
      return;
    Tensor converted = convert(t);
    if (!converted.is_same(t))
      t.unsafeGetTensorImpl()->set_data_from(*converted.unsafeGetTensorImpl());
  };
  for (auto &p : parameters_) {
    apply_to(p.value());
    if (p.value().defined())
      apply_to(p.value().mutable_grad());
  }
  for (auto &b : buffers_)
    apply_to(b.value());
}

static void check_module_dtype(ScalarType dtype) {
  EMBER_CHECK_TYPE(isFloatingType(dtype),
                   "nn::Module::to only accepts floating point dtypes, but "
                   "got desired dtype=",
                   dtype);
}

void Module::to(Device device, ScalarType dtype, bool non_blocking) {
  check_module_dtype(dtype);
  for (auto &child : children_)
    child.value()->to(device, dtype, non_blocking);
  convert_own_tensors([&](const Tensor &t) {
    return t.is_floating_point() ? t.to(device, dtype, non_blocking)
                                 : t.to(device, non_blocking);
  });
}

void Module::to(ScalarType dtype, bool non_blocking) {
  check_module_dtype(dtype);
  for (auto &child : children_)
    child.value()->to(dtype, non_blocking);
  convert_own_tensors([&](const Tensor &t) {
    return t.is_floating_point() ? t.to(dtype, non_blocking) : t;
  });
}

void Module::to(Device device, bool non_blocking) {
  for (auto &child : children_)
    child.value()->to(device, non_blocking);
  convert_own_tensors(
      [&](const Tensor &t) { return t.to(device, non_blocking); });
}

void Module::zero_grad(bool set_to_none) {
  for (auto &child : children_)
    child.value()->zero_grad(set_to_none);
  for (auto &p : parameters_) {
    if (p.value().defined())
      autograd::zero_grad_of(p.value(), set_to_none);
  }
}

// --- serialization
// -------------------------------------------------------------

void Module::save(serialize::OutputArchive &archive) const {
  for (const auto &p : named_parameters(/*recurse=*/false))
    archive.write(p.key(), p.value());
  for (const auto &b : named_buffers(/*recurse=*/false))
    archive.write(b.key(), b.value(), /*is_buffer=*/true);
  for (const auto &child : children_) {
    if (!child.value()->is_serializable())
      continue;
    serialize::OutputArchive child_archive;
    child.value()->save(child_archive);
    archive.write(child.key(), child_archive);
  }
}

void Module::load(serialize::InputArchive &archive) {
  for (auto &p : named_parameters(/*recurse=*/false))
    archive.read(p.key(), p.value());
  for (auto &b : named_buffers(/*recurse=*/false))
    archive.read(b.key(), b.value(), /*is_buffer=*/true);
  for (const auto &child : children_) {
    if (!child.value()->is_serializable())
      continue;
    serialize::InputArchive child_archive;
    archive.read(child.key(), child_archive);
    child.value()->load(child_archive);
  }
}

bool Module::is_serializable() const { return true; }

// --- printing
// ------------------------------------------------------------------

void Module::pretty_print(std::ostream &stream) const { stream << name(); }

void Module::pretty_print_recursive(std::ostream &stream,
                                    const std::string &indentation) const {
  pretty_print(stream);
  if (children_.is_empty())
    return;
  stream << "(\n";
  const std::string next = indentation + "  ";
  for (const auto &child : children_) {
    stream << next << "(" << child.key() << "): ";
    child.value()->pretty_print_recursive(stream, next);
    stream << '\n';
  }
  stream << indentation << ")";
}

std::ostream &operator<<(std::ostream &stream, const Module &module) {
  module.pretty_print_recursive(stream, "");
  return stream;
}

// --- registration
// --------------------------------------------------------------

Tensor &Module::register_parameter(std::string name, Tensor tensor,
                                   bool requires_grad) {
  check_name(name, "Parameter");
  if (tensor.defined())
    tensor.set_requires_grad(requires_grad);
  return parameters_.insert(std::move(name), std::move(tensor));
}

Tensor &Module::register_buffer(std::string name, Tensor tensor) {
  check_name(name, "Buffer");
  return buffers_.insert(std::move(name), std::move(tensor));
}

void Module::check_submodule(const std::string &name, bool defined,
                             bool replacing) const {
  check_name(name, "Submodule");
  EMBER_CHECK(defined, "Cannot register submodule '", name,
              "': the module is empty (a ModuleHolder holding nullptr?)");
  if (replacing)
    EMBER_CHECK(children_.contains(name), "Cannot replace submodule '", name,
                "': no submodule of that name is registered");
}

void Module::unregister_module(const std::string &name) {
  EMBER_CHECK(children_.contains(name), "No Module with name `", name,
              "` is registered");
  children_.erase(name);
}

} // namespace nn
} // namespace ember
