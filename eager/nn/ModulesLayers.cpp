#include "eager/nn/ModulesLayers.h"

#include "eager/Factory.h"
#include "eager/autograd/GradMode.h"
#include "eager/nn/Init.h"

#include <cmath>

namespace ember::nn {

namespace F = functional;

// --- Identity
// ------------------------------------------------------------------

void IdentityImpl::pretty_print(std::ostream &stream) const {
  stream << "ember::nn::Identity()";
}

Tensor IdentityImpl::forward(const Tensor &input) { return input; }

// --- Linear
// --------------------------------------------------------------------

LinearImpl::LinearImpl(const LinearOptions &options_) : options(options_) {
  reset();
}

void LinearImpl::reset() {
  EMBER_CHECK_VALUE(options.in_features() >= 0 && options.out_features() >= 0,
                    "Linear: in_features and out_features must be "
                    "non-negative, got ",
                    options.in_features(), " and ", options.out_features());
  weight = register_parameter(
      "weight", ember::empty({options.out_features(), options.in_features()}));
  if (options.bias())
    bias = register_parameter("bias", ember::empty({options.out_features()}));
  else
    bias = register_parameter("bias", Tensor(), /*requires_grad=*/false);
  reset_parameters();
}

void LinearImpl::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    int64_t fan_in = std::get<0>(init::_calculate_fan_in_and_fan_out(weight));
    double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

void LinearImpl::pretty_print(std::ostream &stream) const {
  stream << std::boolalpha
         << "ember::nn::Linear(in_features=" << options.in_features()
         << ", out_features=" << options.out_features()
         << ", bias=" << options.bias() << ")";
}

Tensor LinearImpl::forward(const Tensor &input) {
  return F::linear(input, weight, bias);
}

// --- Flatten
// -------------------------------------------------------------------

FlattenImpl::FlattenImpl(const FlattenOptions &options_) : options(options_) {}

void FlattenImpl::pretty_print(std::ostream &stream) const {
  stream << "ember::nn::Flatten(start_dim=" << options.start_dim()
         << ", end_dim=" << options.end_dim() << ")";
}

Tensor FlattenImpl::forward(const Tensor &input) {
  return input.flatten(options.start_dim(), options.end_dim());
}

// --- Dropout
// -------------------------------------------------------------------

void check_dropout_options(const DropoutOptions &options) {
  EMBER_CHECK_VALUE(options.p() >= 0 && options.p() <= 1,
                    "dropout probability has to be between 0 and 1, but got ",
                    options.p());
}

void print_dropout(std::ostream &stream, const char *name,
                   const DropoutOptions &options) {
  stream << std::boolalpha << "ember::nn::" << name << "(p=" << options.p()
         << ", inplace=" << options.inplace() << ")";
}

namespace {
F::DropoutFuncOptions dropoutFuncOptions(const DropoutOptions &options,
                                         bool training) {
  return F::DropoutFuncOptions(options.p())
      .training(training)
      .inplace(options.inplace());
}
} // namespace

Tensor DropoutImpl::forward(const Tensor &input) {
  return F::dropout(input, dropoutFuncOptions(options, is_training()));
}

Tensor Dropout2dImpl::forward(const Tensor &input) {
  return F::dropout2d(input, dropoutFuncOptions(options, is_training()));
}

// --- Embedding
// -----------------------------------------------------------------

EmbeddingImpl::EmbeddingImpl(EmbeddingOptions options_)
    : options(std::move(options_)) {
  reset();
}

void EmbeddingImpl::reset() {
  const int64_t n = options.num_embeddings();
  EMBER_CHECK_VALUE(n >= 0 && options.embedding_dim() >= 0,
                    "Embedding: num_embeddings and embedding_dim must be "
                    "non-negative, got ",
                    n, " and ", options.embedding_dim());
  if (options.padding_idx()) {
    int64_t p = *options.padding_idx();
    EMBER_CHECK_VALUE(p < n && p >= -n,
                      "Padding_idx must be within num_embeddings (got "
                      "padding_idx=",
                      p, " for num_embeddings=", n, ")");
    if (p < 0)
      options.padding_idx(n + p);
  }
  if (!options._weight().defined()) {
    weight = register_parameter("weight",
                                ember::empty({n, options.embedding_dim()}));
    reset_parameters();
  } else {
    EMBER_CHECK_VALUE(
        options._weight().sizes() == IntArrayRef({n, options.embedding_dim()}),
        "Shape of _weight does not match num_embeddings and embedding_dim: "
        "expected [",
        n, ", ", options.embedding_dim(), "], got ", options._weight().sizes());
    weight = register_parameter("weight", options._weight());
  }
}

void EmbeddingImpl::reset_parameters() {
  init::normal_(weight);
  if (options.padding_idx()) {
    NoGradGuard no_grad;
    weight[*options.padding_idx()].fill_(0);
  }
}

void EmbeddingImpl::pretty_print(std::ostream &stream) const {
  stream << "ember::nn::Embedding(num_embeddings=" << options.num_embeddings()
         << ", embedding_dim=" << options.embedding_dim();
  if (options.padding_idx())
    stream << ", padding_idx=" << *options.padding_idx();
  if (options.max_norm())
    stream << ", max_norm=" << *options.max_norm();
  if (options.norm_type() != 2)
    stream << ", norm_type=" << options.norm_type();
  if (options.scale_grad_by_freq())
    stream << ", scale_grad_by_freq=" << std::boolalpha
           << options.scale_grad_by_freq();
  if (options.sparse())
    stream << ", sparse=" << std::boolalpha << options.sparse();
  stream << ")";
}

Tensor EmbeddingImpl::forward(const Tensor &indices) {
  return F::embedding(indices, weight,
                      F::EmbeddingFuncOptions()
                          .padding_idx(options.padding_idx())
                          .max_norm(options.max_norm())
                          .norm_type(options.norm_type())
                          .scale_grad_by_freq(options.scale_grad_by_freq())
                          .sparse(options.sparse()));
}

// --- activations
// ---------------------------------------------------------------

ReLUImpl::ReLUImpl(const ReLUOptions &options_) : options(options_) {}

void ReLUImpl::pretty_print(std::ostream &stream) const {
  stream << "ember::nn::ReLU(";
  if (options.inplace())
    stream << std::boolalpha << "inplace=" << options.inplace();
  stream << ")";
}

Tensor ReLUImpl::forward(const Tensor &input) {
  return F::relu(input, options);
}

GELUImpl::GELUImpl(GELUOptions options_) : options(std::move(options_)) {
  reset();
}

void GELUImpl::reset() {
  EMBER_CHECK_VALUE(options.approximate() == "none" ||
                        options.approximate() == "tanh",
                    "GELU: approximate must be 'none' or 'tanh', got '",
                    options.approximate(), "'");
}

void GELUImpl::pretty_print(std::ostream &stream) const {
  stream << "ember::nn::GELU(";
  if (options.approximate() != "none")
    stream << "approximate='" << options.approximate() << "'";
  stream << ")";
}

Tensor GELUImpl::forward(const Tensor &input) {
  return F::gelu(input, options);
}

void SiLUImpl::pretty_print(std::ostream &stream) const {
  stream << "ember::nn::SiLU()";
}

Tensor SiLUImpl::forward(const Tensor &input) { return F::silu(input); }

void TanhImpl::pretty_print(std::ostream &stream) const {
  stream << "ember::nn::Tanh()";
}

Tensor TanhImpl::forward(const Tensor &input) { return input.tanh(); }

void SigmoidImpl::pretty_print(std::ostream &stream) const {
  stream << "ember::nn::Sigmoid()";
}

Tensor SigmoidImpl::forward(const Tensor &input) { return input.sigmoid(); }

SoftmaxImpl::SoftmaxImpl(const SoftmaxOptions &options_) : options(options_) {}

void SoftmaxImpl::pretty_print(std::ostream &stream) const {
  stream << "ember::nn::Softmax(dim=" << options.dim() << ")";
}

Tensor SoftmaxImpl::forward(const Tensor &input) {
  return F::softmax(input, options.dim());
}

} // namespace ember::nn
