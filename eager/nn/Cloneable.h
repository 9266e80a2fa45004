#pragma once
/// Cloneable<Derived>: the base of modules that can be deep-copied with
/// clone() (libtorch's torch/nn/cloneable.h). Derived implements reset(),
/// which (re)creates and registers every parameter, buffer and submodule;
/// clone() copies the module, calls reset() on the copy and copies the
/// values over.

#include "eager/autograd/GradMode.h"
#include "eager/nn/Module.h"

#include <memory>

namespace ember::nn {

template <class Derived> class Cloneable : public Module {
public:
  using Module::Module;

  /// (Re)creates all parameters, buffers and submodules of the module.
  virtual void reset() = 0;

  /// A deep copy: fresh tensors holding this module's values (on `device`
  /// when given), fresh submodules, the same options and training mode.
  std::shared_ptr<Module>
  clone(const std::optional<Device> &device = std::nullopt) const override {
    NoGradGuard no_grad;
    const auto &self = static_cast<const Derived &>(*this);
    auto copy = std::make_shared<Derived>(self);
    copy->parameters_.clear();
    copy->buffers_.clear();
    copy->children_.clear();
    copy->reset();
    EMBER_CHECK(copy->parameters_.size() == parameters_.size(),
                "The cloned module does not have the same number of "
                "parameters as the original module after calling reset(). "
                "Are you sure you called register_parameter() inside reset() "
                "and not the constructor?");
    for (const auto &p : parameters_)
      copy_into(copy->parameters_[p.key()], p.value(), device);
    EMBER_CHECK(copy->buffers_.size() == buffers_.size(),
                "The cloned module does not have the same number of buffers "
                "as the original module after calling reset(). Are you sure "
                "you called register_buffer() inside reset() and not the "
                "constructor?");
    for (const auto &b : buffers_)
      copy_into(copy->buffers_[b.key()], b.value(), device);
    EMBER_CHECK(copy->children_.size() == children_.size(),
                "The cloned module does not have the same number of child "
                "modules as the original module after calling reset(). Are "
                "you sure you called register_module() inside reset() and "
                "not the constructor?");
    for (const auto &c : children_)
      copy->children_[c.key()]->clone_(*c.value(), device);
    copy->is_training_ = is_training_;
    return copy;
  }

private:
  /// Makes `dst` (a fresh tensor made by reset()) hold a copy of `src`'s
  /// values, keeping dst's identity (members of the copy alias it).
  static void copy_into(Tensor &dst, const Tensor &src,
                        const std::optional<Device> &device) {
    if (!src.defined()) {
      dst = Tensor();
      return;
    }
    Tensor data = src.to(device.value_or(src.device()), src.dtype(),
                         /*non_blocking=*/false, /*copy=*/true);
    if (dst.defined())
      dst.unsafeGetTensorImpl()->set_data_from(*data.unsafeGetTensorImpl());
    else
      dst = data;
    dst.set_requires_grad(src.requires_grad());
  }

  void clone_(Module &other, const std::optional<Device> &device) final {
    auto cloned = std::dynamic_pointer_cast<Derived>(other.clone(device));
    EMBER_CHECK(cloned != nullptr,
                "Attempted to clone submodule, but it is of a different type "
                "than the submodule it was to be cloned into");
    static_cast<Derived &>(*this) = *cloned;
  }
};

} // namespace ember::nn
