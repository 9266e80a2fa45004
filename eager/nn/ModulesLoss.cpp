#include "eager/nn/ModulesLoss.h"

namespace ember::nn {

namespace F = functional;

namespace {
void print_loss(std::ostream &stream, const char *name,
                const Reduction &reduction) {
  stream << "ember::nn::" << name << "(";
  if (reduction != Reduction(kMean))
    stream << "reduction=" << reduction;
  stream << ")";
}
} // namespace

MSELossImpl::MSELossImpl(MSELossOptions options_) : options(options_) {}
void MSELossImpl::pretty_print(std::ostream &stream) const {
  print_loss(stream, "MSELoss", options.reduction());
}
Tensor MSELossImpl::forward(const Tensor &input, const Tensor &target) {
  return F::mse_loss(input, target, options);
}

L1LossImpl::L1LossImpl(L1LossOptions options_) : options(options_) {}
void L1LossImpl::pretty_print(std::ostream &stream) const {
  print_loss(stream, "L1Loss", options.reduction());
}
Tensor L1LossImpl::forward(const Tensor &input, const Tensor &target) {
  return F::l1_loss(input, target, options);
}

SmoothL1LossImpl::SmoothL1LossImpl(SmoothL1LossOptions options_)
    : options(options_) {
  reset();
}
void SmoothL1LossImpl::reset() {
  EMBER_CHECK_VALUE(options.beta() >= 0,
                    "smooth_l1_loss does not support negative values for "
                    "beta, got ",
                    options.beta());
}
void SmoothL1LossImpl::pretty_print(std::ostream &stream) const {
  print_loss(stream, "SmoothL1Loss", options.reduction());
}
Tensor SmoothL1LossImpl::forward(const Tensor &input, const Tensor &target) {
  return F::smooth_l1_loss(input, target, options);
}

NLLLossImpl::NLLLossImpl(NLLLossOptions options_)
    : options(std::move(options_)) {
  reset();
}
void NLLLossImpl::reset() {
  weight = register_buffer("weight", options.weight());
}
void NLLLossImpl::pretty_print(std::ostream &stream) const {
  print_loss(stream, "NLLLoss", options.reduction());
}
Tensor NLLLossImpl::forward(const Tensor &input, const Tensor &target) {
  auto o = options;
  o.weight(weight);
  return F::nll_loss(input, target, o);
}

CrossEntropyLossImpl::CrossEntropyLossImpl(CrossEntropyLossOptions options_)
    : options(std::move(options_)) {
  reset();
}
void CrossEntropyLossImpl::reset() {
  EMBER_CHECK_VALUE(options.label_smoothing() >= 0 &&
                        options.label_smoothing() <= 1,
                    "label_smoothing must be between 0.0 and 1.0. Got: ",
                    options.label_smoothing());
  weight = register_buffer("weight", options.weight());
}
void CrossEntropyLossImpl::pretty_print(std::ostream &stream) const {
  print_loss(stream, "CrossEntropyLoss", options.reduction());
}
Tensor CrossEntropyLossImpl::forward(const Tensor &input,
                                     const Tensor &target) {
  auto o = options;
  o.weight(weight);
  return F::cross_entropy(input, target, o);
}

BCELossImpl::BCELossImpl(BCELossOptions options_)
    : options(std::move(options_)) {
  reset();
}
void BCELossImpl::reset() {
  weight = register_buffer("weight", options.weight());
}
void BCELossImpl::pretty_print(std::ostream &stream) const {
  print_loss(stream, "BCELoss", options.reduction());
}
Tensor BCELossImpl::forward(const Tensor &input, const Tensor &target) {
  auto o = options;
  o.weight(weight);
  return F::binary_cross_entropy(input, target, o);
}

BCEWithLogitsLossImpl::BCEWithLogitsLossImpl(BCEWithLogitsLossOptions options_)
    : options(std::move(options_)) {
  reset();
}
void BCEWithLogitsLossImpl::reset() {
  weight = register_buffer("weight", options.weight());
  pos_weight = register_buffer("pos_weight", options.pos_weight());
}
void BCEWithLogitsLossImpl::pretty_print(std::ostream &stream) const {
  print_loss(stream, "BCEWithLogitsLoss", options.reduction());
}
Tensor BCEWithLogitsLossImpl::forward(const Tensor &input,
                                      const Tensor &target) {
  auto o = options;
  o.weight(weight).pos_weight(pos_weight);
  return F::binary_cross_entropy_with_logits(input, target, o);
}

} // namespace ember::nn
