#include "eager/nn/ModulesContainer.h"

namespace ember::nn {

// --- Sequential
// ----------------------------------------------------------------

SequentialImpl::SequentialImpl(
    std::initializer_list<NamedAnyModule> named_modules) {
  modules_.reserve(named_modules.size());
  for (const NamedAnyModule &m : named_modules)
    push_back(m.name(), m.module());
}

SequentialImpl::SequentialImpl(
    OrderedDict<std::string, AnyModule> &&ordered_dict) {
  modules_.reserve(ordered_dict.size());
  for (auto &item : ordered_dict)
    push_back(item.key(), std::move(item.value()));
}

void SequentialImpl::push_back(std::string name, AnyModule any_module) {
  EMBER_CHECK(!any_module.is_empty(),
              "Cannot add an empty module to a Sequential");
  register_module(std::move(name), any_module.ptr());
  modules_.push_back(std::move(any_module));
}

std::shared_ptr<Module>
SequentialImpl::clone(const std::optional<Device> &device) const {
  auto copy = std::make_shared<SequentialImpl>();
  const auto names = children_.keys();
  for (size_t i = 0; i < modules_.size(); ++i)
    copy->push_back(names[i], modules_[i].clone(device));
  copy->train(is_training());
  return copy;
}

void SequentialImpl::pretty_print(std::ostream &stream) const {
  stream << "ember::nn::Sequential";
}

void SequentialImpl::check_index(size_t index) const {
  EMBER_CHECK_INDEX(index < modules_.size(), "Index ", index,
                    " is out of range for a Sequential of size ",
                    modules_.size());
}

// --- ModuleList
// ----------------------------------------------------------------

std::shared_ptr<Module>
ModuleListImpl::clone(const std::optional<Device> &device) const {
  auto copy = std::make_shared<ModuleListImpl>();
  for (const auto &m : modules_)
    copy->push_back(m->clone(device));
  copy->train(is_training());
  return copy;
}

void ModuleListImpl::pretty_print(std::ostream &stream) const {
  stream << "ember::nn::ModuleList";
}

void ModuleListImpl::push_back(std::shared_ptr<Module> module) {
  EMBER_CHECK(module != nullptr, "Cannot add an empty module to a ModuleList");
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

void ModuleListImpl::insert(size_t index, std::shared_ptr<Module> module) {
  EMBER_CHECK_INDEX(index <= modules_.size(), "Index ", index,
                    " is out of range for inserting into a ModuleList of size ",
                    modules_.size());
  EMBER_CHECK(module != nullptr, "Cannot add an empty module to a ModuleList");
  if (index == modules_.size()) {
    push_back(std::move(module));
    return;
  }
  modules_.insert(modules_.begin() + std::ptrdiff_t(index), std::move(module));
  for (size_t i = index; i + 1 < modules_.size(); ++i)
    replace_module(std::to_string(i), modules_[i]);
  register_module(std::to_string(modules_.size() - 1), modules_.back());
}

void ModuleListImpl::check_index(size_t index) const {
  EMBER_CHECK_INDEX(index < modules_.size(), "Index ", index,
                    " is out of range for a ModuleList of size ",
                    modules_.size());
}

// --- Functional
// ----------------------------------------------------------------

FunctionalImpl::FunctionalImpl(Function function)
    : function_(std::move(function)) {
  EMBER_CHECK(bool(function_), "Functional needs a callable function");
}

void FunctionalImpl::pretty_print(std::ostream &stream) const {
  stream << "ember::nn::Functional()";
}

Tensor FunctionalImpl::forward(Tensor input) {
  return function_(std::move(input));
}

bool FunctionalImpl::is_serializable() const { return false; }

} // namespace ember::nn
