#pragma once
/// Basic layers (libtorch's torch/nn/modules/{linear,dropout,embedding,
/// activation}.h): Identity, Linear, Flatten, Dropout, Embedding and the
/// activations ReLU, GELU, SiLU, Tanh, Sigmoid, Softmax.
///
/// Each layer is an `XImpl` module with public `options` and parameter
/// members, and `X` is its holder (EMBER_MODULE):
///   ember::nn::Linear fc(ember::nn::LinearOptions(3, 2).bias(false));
///   ember::Tensor y = fc(x);    // fc->forward(x); fc->weight is (2, 3)

#include "eager/nn/Cloneable.h"
#include "eager/nn/Functional.h"
#include "eager/nn/Options.h"

#include <optional>

namespace ember::nn {

// =============================================================================
// Identity
// =============================================================================

/// Returns its input (torch::nn::Identity); a placeholder in architectures.
class IdentityImpl : public Cloneable<IdentityImpl> {
public:
  void reset() override {}
  void pretty_print(std::ostream &stream) const override;
  Tensor forward(const Tensor &input);
};
EMBER_MODULE(Identity);

// =============================================================================
// Linear
// =============================================================================

/// Options of Linear.
struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  /// Size of each input sample.
  EMBER_ARG(int64_t, in_features);
  /// Size of each output sample.
  EMBER_ARG(int64_t, out_features);
  /// Whether to learn an additive bias.
  EMBER_ARG(bool, bias) = true;
};

/// y = x W^T + b, with W (out_features, in_features) initialised from
/// kaiming_uniform_(a = sqrt(5)) and b from U(-1/sqrt(in), 1/sqrt(in)), as
/// PyTorch (torch::nn::Linear).
class LinearImpl : public Cloneable<LinearImpl> {
public:
  LinearImpl(int64_t in_features, int64_t out_features)
      : LinearImpl(LinearOptions(in_features, out_features)) {}
  explicit LinearImpl(const LinearOptions &options);

  void reset() override;
  /// Re-draws weight and bias from the default initialisation.
  void reset_parameters();
  void pretty_print(std::ostream &stream) const override;
  /// Input (*, in_features) -> output (*, out_features).
  Tensor forward(const Tensor &input);

  LinearOptions options;
  Tensor weight;
  /// Undefined when options.bias() is false.
  Tensor bias;
};
EMBER_MODULE(Linear);

// =============================================================================
// Flatten
// =============================================================================

/// Options of Flatten.
struct FlattenOptions {
  EMBER_ARG(int64_t, start_dim) = 1;
  EMBER_ARG(int64_t, end_dim) = -1;
};

/// Flattens dims start_dim..end_dim into one (torch::nn::Flatten).
class FlattenImpl : public Cloneable<FlattenImpl> {
public:
  explicit FlattenImpl(const FlattenOptions &options = {});
  void reset() override {}
  void pretty_print(std::ostream &stream) const override;
  Tensor forward(const Tensor &input);

  FlattenOptions options;
};
EMBER_MODULE(Flatten);

// =============================================================================
// Dropout
// =============================================================================

/// Options of Dropout.
struct DropoutOptions {
  DropoutOptions(double p = 0.5) : p_(p) {}
  /// Probability of zeroing an element.
  EMBER_ARG(double, p);
  /// Overwrite the input.
  EMBER_ARG(bool, inplace) = false;
};

/// Options of Dropout2d (as libtorch, those of Dropout).
using Dropout2dOptions = DropoutOptions;

/// Checks a dropout module's p (reset()) and prints it as
/// `ember::nn::<name>(p=0.5, inplace=false)`.
void check_dropout_options(const DropoutOptions &options);
void print_dropout(std::ostream &stream, const char *name,
                   const DropoutOptions &options);

/// What the dropout modules share (libtorch's _DropoutNd): the options,
/// their check, the constructors and the printed form. Derived names itself
/// (kName), inherits the constructors and implements forward.
template <class Derived> class DropoutNdImpl : public Cloneable<Derived> {
public:
  explicit DropoutNdImpl(double p) : DropoutNdImpl(DropoutOptions(p)) {}
  explicit DropoutNdImpl(const DropoutOptions &options_ = {})
      : options(options_) {
    check_dropout_options(options);
  }
  void reset() override { check_dropout_options(options); }
  void pretty_print(std::ostream &stream) const override {
    print_dropout(stream, Derived::kName, options);
  }

  DropoutOptions options;
};

/// Zeroes elements with probability p and scales the others by 1 / (1 - p)
/// in training mode; the identity in evaluation mode (torch::nn::Dropout).
class DropoutImpl : public DropoutNdImpl<DropoutImpl> {
public:
  static constexpr const char *kName = "Dropout";
  using DropoutNdImpl::DropoutNdImpl;
  Tensor forward(const Tensor &input);
};
EMBER_MODULE(Dropout);

/// Zeroes whole channels of (N, C, H, W) or (C, H, W) input with probability
/// p and scales the others by 1 / (1 - p) in training mode (F::dropout2d);
/// the identity in evaluation mode (torch::nn::Dropout2d).
class Dropout2dImpl : public DropoutNdImpl<Dropout2dImpl> {
public:
  static constexpr const char *kName = "Dropout2d";
  using DropoutNdImpl::DropoutNdImpl;
  Tensor forward(const Tensor &input);
};
EMBER_MODULE(Dropout2d);

// =============================================================================
// Embedding
// =============================================================================

/// Options of Embedding.
struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  /// Size of the dictionary.
  EMBER_ARG(int64_t, num_embeddings);
  /// Size of each embedding vector.
  EMBER_ARG(int64_t, embedding_dim);
  /// This row is initialised to zeros and receives no gradient; negative
  /// values count from the end.
  EMBER_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  /// Rows looked up are renormalised to at most this norm.
  EMBER_ARG(std::optional<double>, max_norm) = std::nullopt;
  EMBER_ARG(double, norm_type) = 2.;
  EMBER_ARG(bool, scale_grad_by_freq) = false;
  EMBER_ARG(bool, sparse) = false;
  /// An initial weight (num_embeddings, embedding_dim) instead of N(0, 1).
  EMBER_ARG(Tensor, _weight) = Tensor();
};

/// A lookup table of num_embeddings vectors (torch::nn::Embedding): integer
/// indices of any shape -> their rows. weight starts as N(0, 1).
class EmbeddingImpl : public Cloneable<EmbeddingImpl> {
public:
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingImpl(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  explicit EmbeddingImpl(EmbeddingOptions options);

  void reset() override;
  void reset_parameters();
  void pretty_print(std::ostream &stream) const override;
  Tensor forward(const Tensor &indices);

  EmbeddingOptions options;
  Tensor weight;
};
EMBER_MODULE(Embedding);

// =============================================================================
// Activations
// =============================================================================

using ReLUOptions = functional::ReLUFuncOptions;
/// max(x, 0) (torch::nn::ReLU).
class ReLUImpl : public Cloneable<ReLUImpl> {
public:
  explicit ReLUImpl(const ReLUOptions &options = {});
  void reset() override {}
  void pretty_print(std::ostream &stream) const override;
  Tensor forward(const Tensor &input);

  ReLUOptions options;
};
EMBER_MODULE(ReLU);

using GELUOptions = functional::GELUFuncOptions;
/// x * Phi(x), exact ("none") or with the tanh approximation
/// (torch::nn::GELU).
class GELUImpl : public Cloneable<GELUImpl> {
public:
  explicit GELUImpl(GELUOptions options = {});
  void reset() override;
  void pretty_print(std::ostream &stream) const override;
  Tensor forward(const Tensor &input);

  GELUOptions options;
};
EMBER_MODULE(GELU);

/// x * sigmoid(x) (torch::nn::SiLU).
class SiLUImpl : public Cloneable<SiLUImpl> {
public:
  void reset() override {}
  void pretty_print(std::ostream &stream) const override;
  Tensor forward(const Tensor &input);
};
EMBER_MODULE(SiLU);

/// tanh(x) (torch::nn::Tanh).
class TanhImpl : public Cloneable<TanhImpl> {
public:
  void reset() override {}
  void pretty_print(std::ostream &stream) const override;
  Tensor forward(const Tensor &input);
};
EMBER_MODULE(Tanh);

/// 1 / (1 + exp(-x)) (torch::nn::Sigmoid).
class SigmoidImpl : public Cloneable<SigmoidImpl> {
public:
  void reset() override {}
  void pretty_print(std::ostream &stream) const override;
  Tensor forward(const Tensor &input);
};
EMBER_MODULE(Sigmoid);

/// Options of Softmax: the dim that sums to one.
struct SoftmaxOptions {
  SoftmaxOptions(int64_t dim) : dim_(dim) {}
  EMBER_ARG(int64_t, dim);
};

/// softmax along options.dim (torch::nn::Softmax).
class SoftmaxImpl : public Cloneable<SoftmaxImpl> {
public:
  explicit SoftmaxImpl(int64_t dim) : SoftmaxImpl(SoftmaxOptions(dim)) {}
  explicit SoftmaxImpl(const SoftmaxOptions &options);
  void reset() override {}
  void pretty_print(std::ostream &stream) const override;
  Tensor forward(const Tensor &input);

  SoftmaxOptions options;
};
EMBER_MODULE(Softmax);

} // namespace ember::nn
