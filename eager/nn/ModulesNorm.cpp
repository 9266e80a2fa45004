#include "eager/nn/ModulesNorm.h"

#include "eager/Factory.h"
#include "eager/autograd/GradMode.h"
#include "eager/nn/Init.h"

namespace ember::nn {

namespace F = functional;

// --- BatchNorm
// -----------------------------------------------------------------

template <size_t D, class Derived>
BatchNormImplBase<D, Derived>::BatchNormImplBase(
    const BatchNormOptions &options_)
    : options(options_) {
  reset();
}

template <size_t D, class Derived> void BatchNormImplBase<D, Derived>::reset() {
  const int64_t c = options.num_features();
  EMBER_CHECK_VALUE(c >= 0, "BatchNorm", D,
                    "d: num_features must be non-negative, got ", c);
  if (options.affine()) {
    weight = this->register_parameter("weight", ember::empty({c}));
    bias = this->register_parameter("bias", ember::empty({c}));
  } else {
    weight = this->register_parameter("weight", Tensor(), false);
    bias = this->register_parameter("bias", Tensor(), false);
  }
  if (options.track_running_stats()) {
    running_mean = this->register_buffer("running_mean", ember::zeros({c}));
    running_var = this->register_buffer("running_var", ember::ones({c}));
    num_batches_tracked = this->register_buffer(
        "num_batches_tracked", ember::zeros({}, TensorOptions(kLong)));
  } else {
    running_mean = this->register_buffer("running_mean", Tensor());
    running_var = this->register_buffer("running_var", Tensor());
    num_batches_tracked =
        this->register_buffer("num_batches_tracked", Tensor());
  }
  reset_parameters();
}

template <size_t D, class Derived>
void BatchNormImplBase<D, Derived>::reset_running_stats() {
  if (!options.track_running_stats())
    return;
  NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

template <size_t D, class Derived>
void BatchNormImplBase<D, Derived>::reset_parameters() {
  reset_running_stats();
  if (options.affine()) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}

template <size_t D, class Derived>
void BatchNormImplBase<D, Derived>::pretty_print(std::ostream &stream) const {
  stream << std::boolalpha << "ember::nn::BatchNorm" << D << "d("
         << options.num_features() << ", eps=" << options.eps()
         << ", momentum=";
  if (options.momentum())
    stream << *options.momentum();
  else
    stream << "None";
  stream << ", affine=" << options.affine()
         << ", track_running_stats=" << options.track_running_stats() << ")";
}

template <size_t D, class Derived>
Tensor BatchNormImplBase<D, Derived>::forward(const Tensor &input) {
  check_input_dim(input);
  const bool training = this->is_training();
  double factor = options.momentum().value_or(0.0);
  if (training && options.track_running_stats() &&
      num_batches_tracked.defined()) {
    {
      NoGradGuard no_grad;
      num_batches_tracked += 1;
    }
    if (!options.momentum())
      factor = 1.0 / num_batches_tracked.item<double>();
  }
  // Evaluation without running statistics normalises with the batch's.
  const bool bn_training =
      training || (!running_mean.defined() && !running_var.defined());
  const bool pass_stats = !training || options.track_running_stats();
  return F::batch_norm(input, pass_stats ? running_mean : Tensor(),
                       pass_stats ? running_var : Tensor(),
                       F::BatchNormFuncOptions()
                           .weight(weight)
                           .bias(bias)
                           .training(bn_training)
                           .momentum(factor)
                           .eps(options.eps()));
}

template class BatchNormImplBase<1, BatchNorm1dImpl>;
template class BatchNormImplBase<2, BatchNorm2dImpl>;
template class BatchNormImplBase<3, BatchNorm3dImpl>;

void BatchNorm1dImpl::check_input_dim(const Tensor &input) const {
  EMBER_CHECK_VALUE(input.dim() == 2 || input.dim() == 3,
                    "expected 2D or 3D input (got ", input.dim(), "D input)");
}

void BatchNorm2dImpl::check_input_dim(const Tensor &input) const {
  EMBER_CHECK_VALUE(input.dim() == 4, "expected 4D input (got ", input.dim(),
                    "D input)");
}

void BatchNorm3dImpl::check_input_dim(const Tensor &input) const {
  EMBER_CHECK_VALUE(input.dim() == 5, "expected 5D input (got ", input.dim(),
                    "D input)");
}

// --- LayerNorm
// -----------------------------------------------------------------

LayerNormImpl::LayerNormImpl(LayerNormOptions options_)
    : options(std::move(options_)) {
  reset();
}

void LayerNormImpl::reset() {
  for (int64_t s : options.normalized_shape())
    EMBER_CHECK_VALUE(s >= 0,
                      "LayerNorm: normalized_shape must be "
                      "non-negative, got ",
                      IntArrayRef(options.normalized_shape()));
  if (options.elementwise_affine()) {
    weight =
        register_parameter("weight", ember::empty(options.normalized_shape()));
    bias = register_parameter("bias", ember::empty(options.normalized_shape()));
  } else {
    weight = register_parameter("weight", Tensor(), false);
    bias = register_parameter("bias", Tensor(), false);
  }
  reset_parameters();
}

void LayerNormImpl::reset_parameters() {
  if (options.elementwise_affine()) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}

void LayerNormImpl::pretty_print(std::ostream &stream) const {
  stream << std::boolalpha << "ember::nn::LayerNorm("
         << IntArrayRef(options.normalized_shape()) << ", eps=" << options.eps()
         << ", elementwise_affine=" << options.elementwise_affine() << ")";
}

Tensor LayerNormImpl::forward(const Tensor &input) {
  return F::layer_norm(input,
                       F::LayerNormFuncOptions(options.normalized_shape())
                           .weight(weight)
                           .bias(bias)
                           .eps(options.eps()));
}

} // namespace ember::nn
