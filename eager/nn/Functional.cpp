// nn::functional: activations, linear, dropout, embedding, normalization,
// padding and attention, as compositions of ember ops (see Functional.h).
// Convolution and pooling live in FunctionalConv.cpp, losses in
// FunctionalLoss.cpp.
#include "eager/nn/Functional.h"
#include "eager/nn/OpArgs.h"

#include "eager/Dtype.h"
#include "eager/Factory.h"
#include "eager/Indexing.h"
#include "eager/WrapDim.h"
#include "eager/autograd/GradMode.h"
#include "eager/generated/NativeFunctions.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ember::nn::functional {

namespace {

/// Half and BFloat16 inputs of normalizations compute their statistics in
/// float (as PyTorch's kernels do); the result is cast back.
ScalarType statsType(ScalarType t) {
  return t == kHalf || t == kBFloat16 ? kFloat : t;
}

void checkFloating(const Tensor &t, const char *op, const char *what) {
  EMBER_CHECK_TYPE(isFloatingType(t.dtype()), op, ": expected a floating ",
                   what, ", but got a tensor of dtype ", toString(t.dtype()),
                   " (convert it with .to(ember::kFloat))");
}

std::vector<int64_t> shapeVec(IntArrayRef s) {
  return std::vector<int64_t>(s.begin(), s.end());
}

} // namespace

// --- activations -------------------------------------------------------------

Tensor relu(const Tensor &input, const ReLUFuncOptions &options) {
  if (options.inplace())
    return input.relu_();
  return ember::relu(input);
}

Tensor hardtanh(const Tensor &input, const HardtanhFuncOptions &options) {
  EMBER_CHECK_VALUE(options.max_val() >= options.min_val(),
                    "hardtanh: max_val (", options.max_val(),
                    ") must be greater than or equal to min_val (",
                    options.min_val(), ")");
  EMBER_CHECK_TYPE(!input.defined() || input.dtype() != kBool,
                   "Bool inputs not supported for hardtanh");
  // An integer input keeps its dtype (PyTorch's hardtanh writes into a
  // tensor like its input): the bounds are truncated, which for integer x
  // gives trunc(clamp(x, lo, hi)).
  Scalar lo = options.min_val(), hi = options.max_val();
  if (input.defined() && !isFloatingType(input.dtype())) {
    dispatch_dtype(input.dtype(), "hardtanh", [&]<class T>() {
      auto bound = [](double v) {
        double lowest = double(std::numeric_limits<T>::lowest());
        double highest = double(std::numeric_limits<T>::max());
        return Scalar(int64_t(std::clamp(std::trunc(v), lowest, highest)));
      };
      lo = bound(options.min_val());
      hi = bound(options.max_val());
    });
  }
  // ember::_hardtanh's gradient is PyTorch's hardtanh_backward: zero at the
  // bounds themselves (relu6 at 0 has a gradient of 0), where clamp's passes.
  if (options.inplace())
    return ember::_hardtanh_(input, lo, hi);
  return ember::_hardtanh(input, lo, hi);
}

Tensor relu6(const Tensor &input, const ReLU6FuncOptions &options) {
  return hardtanh(input, HardtanhFuncOptions().min_val(0).max_val(6).inplace(
                             options.inplace()));
}

Tensor leaky_relu(const Tensor &input, const LeakyReLUFuncOptions &options) {
  if (input.defined()) {
    if (!isFloatingType(input.dtype())) // as PyTorch's (no promotion)
      throw_unsupported_dtype("leaky_relu", input.dtype());
    // As PyTorch's kernel, the slope must fit the input's dtype (1e39 would
    // be inf for float32, and 0 * inf NaN).
    dispatch_dtype(input.dtype(), "leaky_relu", [&]<class T>() {
      (void)Scalar(options.negative_slope()).checked_to<T>();
    });
  }
  Tensor out = ember::where(input > 0, input, input * options.negative_slope());
  if (options.inplace())
    return input.copy_(out);
  return out;
}

Tensor elu(const Tensor &input, const ELUFuncOptions &options) {
  if (options.inplace())
    return ember::elu_(input, options.alpha());
  return ember::elu(input, options.alpha());
}

Tensor gelu(const Tensor &input, const GELUFuncOptions &options) {
  return ember::gelu(input, options.approximate());
}

Tensor silu(const Tensor &input) { return ember::silu(input); }

Tensor softplus(const Tensor &input, const SoftplusFuncOptions &options) {
  return ember::softplus(input, options.beta(), options.threshold());
}

Tensor logsigmoid(const Tensor &input) {
  if (input.defined() &&
      !isFloatingType(input.dtype())) // as PyTorch's (no promotion)
    throw_unsupported_dtype("log_sigmoid", input.dtype());
  return ember::log_sigmoid(input); // (ops.yaml: its form and gradient)
}

Tensor softmax(const Tensor &input, const SoftmaxFuncOptions &options) {
  return ember::softmax(input, options.dim(), options.dtype());
}
Tensor softmax(const Tensor &input, int64_t dim,
               std::optional<ScalarType> dtype) {
  return ember::softmax(input, dim, dtype);
}
Tensor log_softmax(const Tensor &input, const LogSoftmaxFuncOptions &options) {
  return ember::log_softmax(input, options.dim(), options.dtype());
}
Tensor log_softmax(const Tensor &input, int64_t dim,
                   std::optional<ScalarType> dtype) {
  return ember::log_softmax(input, dim, dtype);
}

// --- linear, dropout, embedding ---------------------------------------------

Tensor linear(const Tensor &input, const Tensor &weight, const Tensor &bias) {
  return ember::linear(input, weight, op_args::optional_of(bias));
}

// Note [Dropout masks]
// The mask is drawn in float (rand over the input's shape) as
// keep = u < 1 - p, i.e. Bernoulli(1 - p), then scaled by 1 / (1 - p) and
// multiplied in: the product is an ember op, so the gradient is the same mask.
// p = 1 multiplies by zero (as PyTorch, inf and NaN inputs give NaN).
Tensor dropout(const Tensor &input, const DropoutFuncOptions &options) {
  double p = options.p();
  EMBER_CHECK_VALUE(p >= 0 && p <= 1,
                    "dropout probability has to be between 0 and 1, but got ",
                    p);
  if (!options.training() || p == 0)
    return input;
  checkFloating(input, "dropout", "input");
  Tensor noise;
  if (p == 1) {
    noise = zeros({}, input.options());
  } else {
    Tensor keep =
        rand(input.sizes(), TensorOptions(kFloat).device(input.device())) <
        (1.0 - p);
    noise = keep.to(input.dtype()) / (1.0 - p);
  }
  if (options.inplace())
    return input.mul_(noise);
  return input * noise;
}

Tensor dropout(const Tensor &input, double p, bool training) {
  return dropout(input, DropoutFuncOptions(p).training(training));
}

Tensor dropout2d(const Tensor &input, const Dropout2dFuncOptions &options) {
  EMBER_CHECK_VALUE(input.dim() == 3 || input.dim() == 4,
                    "dropout2d: expected a 4-D (N, C, H, W) input or a 3-D "
                    "(C, H, W) one, but got an input of shape ",
                    input.sizes());
  // ember::feature_dropout draws per (dim 0, dim 1): unbatched input gains
  // a batch dim.
  bool batched = input.dim() == 4;
  Tensor x = batched ? input : input.unsqueeze(0);
  double p = options.p();
  bool train = options.training();
  if (options.inplace()) {
    ember::feature_dropout_(x, p, train);
    return input;
  }
  Tensor out = ember::feature_dropout(x, p, train);
  return batched ? out : out.squeeze(0);
}

// Note [Embedding padding_idx]
// padding_idx only changes the gradient: the rows looked up for padding_idx
// are returned as they are but receive no gradient. The output is
// where(index != padding_idx, rows, rows.detach()): the same values, with
// the gradient flowing only through the non-padding lookups.
Tensor embedding(const Tensor &input, const Tensor &weight,
                 const EmbeddingFuncOptions &options) {
  EMBER_CHECK_TYPE(input.dtype() == kLong || input.dtype() == kInt,
                   "Expected tensor for argument #1 'indices' to have one of "
                   "the following scalar types: Long, Int; but got ",
                   toString(input.dtype()), " instead (embedding)");
  EMBER_CHECK_VALUE(weight.dim() == 2, "'weight' must be 2-D, but got a ",
                    weight.dim(), "-d weight of shape ", weight.sizes());
  // A sparse gradient would hold the same values as the dense one ember
  // computes; scaling by frequency would change them.
  if (options.scale_grad_by_freq())
    throw NotImplementedError(
        "embedding: scale_grad_by_freq=true is not implemented in ember");
  int64_t num = weight.size(0);
  std::optional<int64_t> padding_idx = options.padding_idx();
  if (padding_idx) {
    EMBER_CHECK_VALUE(*padding_idx < num && *padding_idx >= -num,
                      "Padding_idx must be within num_embeddings (got "
                      "padding_idx=",
                      *padding_idx, " for ", num, " embeddings)");
    if (*padding_idx < 0)
      *padding_idx += num;
  }
  Tensor flat = input.reshape({-1});
  if (options.max_norm()) {
    // Renormalise the looked-up rows in place, outside autograd (as
    // torch.embedding_renorm_). Repeated indices write the same row twice.
    NoGradGuard guard;
    Tensor rows = weight.index_select(0, flat);
    Tensor norms = ember::norm(rows, Scalar(options.norm_type()), {1}, true);
    double maxNorm = *options.max_norm();
    Tensor scale = ember::where(norms > maxNorm, maxNorm / (norms + 1e-7),
                                ones_like(norms));
    Tensor w = weight; // a handle: index_put_ writes through it
    w.index_put_({flat}, rows * scale);
  }
  std::vector<int64_t> outShape = shapeVec(input.sizes());
  outShape.push_back(weight.size(1));
  Tensor out = weight.index_select(0, flat);
  if (padding_idx) {
    Tensor keep = (flat != *padding_idx).unsqueeze(1);
    out = ember::where(keep, out, out.detach());
  }
  return out.view(outShape);
}

Tensor one_hot(const Tensor &tensor, int64_t num_classes) {
  return ember::one_hot(tensor, num_classes);
}

// --- normalization -----------------------------------------------------------

Tensor layer_norm(const Tensor &input, const LayerNormFuncOptions &options) {
  // One kernel forward and one backward (Note [Native layer_norm]).
  const Tensor &w = options.weight(), &b = options.bias();
  return std::get<0>(ember::native_layer_norm(
      input, options.normalized_shape(), op_args::optional_of(w),
      op_args::optional_of(b), options.eps()));
}

namespace {
/// Shape (1, C, 1, ..., 1) that broadcasts a per-channel vector over an
/// (N, C, *) input.
std::vector<int64_t> channelShape(const Tensor &input) {
  std::vector<int64_t> s(size_t(input.dim()), 1);
  s[1] = input.size(1);
  return s;
}

void checkPerChannel(const Tensor &t, int64_t C, const char *name) {
  if (t.defined())
    EMBER_CHECK_VALUE(t.numel() == C, name, " should contain ", C,
                      " elements not ", t.numel());
}
} // namespace

Tensor batch_norm(const Tensor &input, const Tensor &running_mean,
                  const Tensor &running_var,
                  const BatchNormFuncOptions &options) {
  EMBER_CHECK_VALUE(input.dim() >= 2,
                    "batch_norm: expected an input of shape (N, C, *) with at "
                    "least 2 dims, but got a ",
                    input.dim(), "-d input of shape ", input.sizes());
  checkFloating(input, "batch_norm", "input");
  int64_t C = input.size(1);
  checkPerChannel(running_mean, C, "running_mean");
  checkPerChannel(running_var, C, "running_var");
  checkPerChannel(options.weight(), C, "weight");
  checkPerChannel(options.bias(), C, "bias");
  EMBER_CHECK_VALUE(running_mean.defined() == running_var.defined(),
                    "batch_norm: running_mean and running_var must both be "
                    "given or both be undefined");
  std::vector<int64_t> cs = channelShape(input);
  Tensor x = input.to(statsType(input.dtype()));
  Tensor mean, var;
  if (options.training()) {
    int64_t perChannel = C == 0 ? 0 : input.numel() / C;
    EMBER_CHECK_VALUE(perChannel != 1,
                      "Expected more than 1 value per channel when training, "
                      "got input size ",
                      input.sizes());
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < input.dim(); ++d)
      if (d != 1)
        dims.push_back(d);
    mean = x.mean(dims, true);
    var = x.var(dims, Scalar(0), true);
    if (running_mean.defined()) {
      EMBER_CHECK_VALUE(options.momentum().has_value(),
                        "batch_norm: momentum must be set to update the "
                        "running statistics (a module with momentum=None "
                        "passes 1 / num_batches_tracked)");
      double m = *options.momentum();
      NoGradGuard guard;
      // The running variance is unbiased (as PyTorch), the normalization
      // uses the biased one.
      double n = double(perChannel);
      Tensor unbiased = var.detach() * (n / std::max(n - 1, 1.0));
      running_mean.mul_(1 - m).add_(
          (mean.detach().reshape({C}) * m).to(running_mean.dtype()));
      running_var.mul_(1 - m).add_(
          (unbiased.reshape({C}) * m).to(running_var.dtype()));
    }
  } else {
    EMBER_CHECK_VALUE(running_mean.defined(),
                      "batch_norm: running_mean and running_var must be "
                      "defined in evaluation mode (training=false)");
    mean = running_mean.reshape(cs).to(x.dtype());
    var = running_var.reshape(cs).to(x.dtype());
  }
  Tensor y = (x - mean) * ember::rsqrt(var + options.eps());
  if (options.weight().defined())
    y = y * options.weight().reshape(cs);
  if (options.bias().defined())
    y = y + options.bias().reshape(cs);
  return y.to(input.dtype());
}

static Tensor groupNorm(const Tensor &input,
                        const GroupNormFuncOptions &options) {
  EMBER_CHECK_VALUE(input.dim() >= 2,
                    "group_norm: expected an input of shape (N, C, *) with at "
                    "least 2 dims, but got a ",
                    input.dim(), "-d input of shape ", input.sizes());
  checkFloating(input, "group_norm", "input");
  int64_t G = options.num_groups(), N = input.size(0), C = input.size(1);
  EMBER_CHECK_VALUE(G > 0 && C % G == 0,
                    "Expected number of channels in input to be divisible by "
                    "num_groups, but got input of shape ",
                    input.sizes(), " and num_groups=", G);
  checkPerChannel(options.weight(), C, "weight");
  checkPerChannel(options.bias(), C, "bias");
  int64_t groupSize = C / G;
  for (int64_t d = 2; d < input.dim(); ++d)
    groupSize *= input.size(d);
  Tensor x = input.to(statsType(input.dtype())).reshape({N, G, groupSize});
  Tensor mean = x.mean({2}, true);
  Tensor var = x.var({2}, Scalar(0), true);
  Tensor y =
      ((x - mean) * ember::rsqrt(var + options.eps())).reshape(input.sizes());
  std::vector<int64_t> cs = channelShape(input);
  if (options.weight().defined())
    y = y * options.weight().reshape(cs);
  if (options.bias().defined())
    y = y + options.bias().reshape(cs);
  return y.to(input.dtype());
}

// --- padding -----------------------------------------------------------------

// Note [Non-constant padding]
// reflect / replicate / circular padding of one dim is one index_select with
// an index built on the host: output position k of a dim of size n padded
// by (a, b) reads input position q = k - a mapped back into [0, n) by the
// mode (reflect: -q, 2(n-1)-q; replicate: clamp; circular: q mod n).
// Negative amounts crop. index_select is differentiable (its gradient is
// index_add), so so is pad.
static Tensor padIndexed(const Tensor &input, const PadFuncOptions &options) {
  const std::vector<int64_t> &p = options.pad();
  PadMode mode = options.mode();
  if (mode.kind() == PadMode::Constant)
    return ember::constant_pad_nd(input, p, options.value());
  EMBER_CHECK_VALUE(p.size() % 2 == 0, "Padding length must be divisible by 2");
  int64_t npd = int64_t(p.size()) / 2;
  EMBER_CHECK_VALUE(npd >= 1 && npd <= 3,
                    "Only 2D, 3D, 4D, 5D padding with non-constant padding "
                    "are supported for now (got a pad of length ",
                    p.size(), " with mode '", mode.name(), "')");
  EMBER_CHECK_VALUE(input.dim() == npd + 1 || input.dim() == npd + 2,
                    "Padding mode '", mode.name(), "' with a pad of length ",
                    p.size(), " expects a ", npd + 1, "-D or ", npd + 2,
                    "-D input (an optional batch dim, channels, then the ", npd,
                    " padded dims), but got a ", input.dim(),
                    "-D input of shape ", input.sizes());
  Tensor out = input;
  for (int64_t i = 0; i < npd; ++i) {
    int64_t d = input.dim() - 1 - i;
    int64_t n = input.size(d);
    int64_t a = p[size_t(2 * i)], b = p[size_t(2 * i + 1)];
    if (a == 0 && b == 0)
      continue;
    int64_t m = n + a + b;
    EMBER_CHECK_VALUE(m >= 0, "The input size ", n, ", plus negative padding ",
                      a, " and ", b,
                      " resulted in a negative output size, which is invalid. "
                      "Check dimension ",
                      d, " of your input.");
    // (as PyTorch: reflect and replicate never crop a dimension away)
    EMBER_CHECK_VALUE(mode.kind() == PadMode::Circular || n == 0 || m >= 1,
                      "padding mode '", mode.name(), "': input (size ", n,
                      " at dimension ", d,
                      ") is too small. Calculated output size: ", m,
                      ", which must be at least 1");
    switch (mode.kind()) {
    case PadMode::Reflect:
      EMBER_CHECK_VALUE(a < n && b < n,
                        "Argument #4: Padding size should be less than the "
                        "corresponding input dimension, but got: padding (",
                        a, ", ", b, ") at dimension ", d, " of input ",
                        input.sizes());
      break;
    case PadMode::Replicate:
      EMBER_CHECK_VALUE(n > 0 || m == 0,
                        "padding mode 'replicate' needs a non-empty dimension ",
                        d, " to pad, but the input has shape ", input.sizes());
      break;
    default:
      EMBER_CHECK_VALUE(a <= n && b <= n,
                        "Padding value causes wrapping around more than once "
                        "(padding (",
                        a, ", ", b, ") at dimension ", d, " of input ",
                        input.sizes(), ")");
      break;
    }
    // Circular padding crops first (negative amounts), then wraps the
    // cropped dim, as PyTorch's.
    const int64_t lo = std::max<int64_t>(-a, 0), hi = std::max<int64_t>(-b, 0);
    const int64_t c = n - lo - hi;
    if (mode.kind() == PadMode::Circular)
      EMBER_CHECK_VALUE(c > 0 || m == 0, "circular padding of dimension ", d,
                        " wraps around an empty dimension (size ", n,
                        " cropped by ", lo, " and ", hi, ")");
    std::vector<int64_t> ip(size_t(m), 0);
    for (int64_t k = 0; k < m; ++k) {
      int64_t q = k - a;
      switch (mode.kind()) {
      case PadMode::Reflect:
        q = q < 0 ? -q : q >= n ? 2 * (n - 1) - q : q;
        break;
      case PadMode::Replicate:
        q = std::clamp<int64_t>(q, 0, n - 1);
        break;
      default: {
        int64_t r = k - std::max<int64_t>(a, 0);
        q = lo + ((r % c) + c) % c;
        break;
      }
      }
      ip[size_t(k)] = q;
    }
    // (a factory: compile() takes the index as a constant on the device)
    out = out.index_select(
        d, tensor(ip, TensorOptions(kLong).device(out.device())));
  }
  return out;
}

// --- attention ---------------------------------------------------------------

static Tensor attention(const Tensor &query, const Tensor &key,
                        const Tensor &value, const Tensor &attn_mask,
                        double dropout_p, bool is_causal,
                        std::optional<double> scale) {
  EMBER_CHECK_VALUE(query.dim() >= 2 && key.dim() >= 2 && value.dim() >= 2,
                    "scaled_dot_product_attention: expected query, key and "
                    "value of at least 2 dims (..., L, E), but got query.dim() "
                    "= ",
                    query.dim(), ", key.dim() = ", key.dim(),
                    " and value.dim() = ", value.dim());
  EMBER_CHECK_TYPE(
      query.dtype() == key.dtype() && query.dtype() == value.dtype(),
      "Expected query, key, and value to have the same dtype, "
      "but got query.dtype: ",
      toString(query.dtype()), " key.dtype: ", toString(key.dtype()),
      " and value.dtype: ", toString(value.dtype()), " instead.");
  checkFloating(query, "scaled_dot_product_attention", "query");
  EMBER_CHECK_VALUE(query.size(-1) == key.size(-1),
                    "scaled_dot_product_attention: query and key must have "
                    "the same embedding size, but got query.size(-1) = ",
                    query.size(-1), " and key.size(-1) = ", key.size(-1));
  EMBER_CHECK_VALUE(key.size(-2) == value.size(-2),
                    "scaled_dot_product_attention: key and value must have "
                    "the same sequence length, but got key.size(-2) = ",
                    key.size(-2), " and value.size(-2) = ", value.size(-2));
  EMBER_CHECK_VALUE(dropout_p >= 0 && dropout_p <= 1,
                    "dropout probability has to be between 0 and 1, but got ",
                    dropout_p);
  EMBER_CHECK_VALUE(!(is_causal && attn_mask.defined()),
                    "_scaled_dot_product_attention: Explicit attn_mask should "
                    "not be set when is_causal=True");
  if (attn_mask.defined())
    EMBER_CHECK_TYPE(
        attn_mask.dtype() == kBool || attn_mask.dtype() == query.dtype(),
        "Expected attn_mask dtype to be bool or float or to "
        "match query dtype, but got attn_mask.dtype: ",
        toString(attn_mask.dtype()),
        " and query.dtype: ", toString(query.dtype()), " instead.");
  int64_t L = query.size(-2), S = key.size(-2);
  double s = scale ? *scale : 1.0 / std::sqrt(double(query.size(-1)));
  Tensor scores = ember::matmul(query, key.transpose(-2, -1)) * s;
  Tensor mask = attn_mask;
  if (is_causal)
    mask = ones({L, S}, TensorOptions(kBool).device(query.device())).tril(0);
  if (mask.defined()) {
    if (mask.dtype() == kBool)
      scores = scores.masked_fill(mask.logical_not(),
                                  -std::numeric_limits<double>::infinity());
    else
      scores = scores + mask;
  }
  // Note [Fully masked attention rows]
  // A query that may attend to no key has only -inf scores; as PyTorch's
  // math backend (_safe_softmax), its weights are 0 rather than NaN, and so
  // are the gradients through them: the row's scores are replaced by zeros
  // before the softmax (whose backward would otherwise multiply NaN weights
  // by zero), and its weights by zeros after it.
  Tensor none;
  if (mask.defined()) {
    none = (scores == -std::numeric_limits<double>::infinity()).all(-1, true);
    scores = ember::where(none, zeros({}, scores.options()), scores);
  }
  Tensor attn = ember::softmax(scores, -1);
  if (none.defined())
    attn = ember::where(none, zeros({}, attn.options()), attn);
  if (dropout_p > 0)
    attn = functional::dropout(attn, dropout_p, true);
  return ember::matmul(attn, value);
}

// F:: forms through their op (Note [Functional forms through the op table]
// in FunctionalLoss.cpp); the natives below run the math above.
Tensor group_norm(const Tensor &input, const GroupNormFuncOptions &options) {
  const Tensor &w = options.weight(), &b = options.bias();
  return ember::group_norm(input, options.num_groups(), op_args::optional_of(w),
                           op_args::optional_of(b), options.eps());
}

Tensor pad(const Tensor &input, const PadFuncOptions &options) {
  // reflect and replicate of 1 to 3 dims are ops of their own, as in
  // PyTorch's F.pad (reflection_pad2d, ...).
  PadMode mode = options.mode();
  const std::vector<int64_t> &p = options.pad();
  bool reflect = mode.kind() == PadMode::Reflect,
       replicate = mode.kind() == PadMode::Replicate;
  if ((reflect || replicate) && p.size() % 2 == 0 && !p.empty() &&
      p.size() <= 6) {
    switch (p.size() / 2) {
    case 1:
      return reflect ? ember::reflection_pad1d(input, p)
                     : ember::replication_pad1d(input, p);
    case 2:
      return reflect ? ember::reflection_pad2d(input, p)
                     : ember::replication_pad2d(input, p);
    default:
      return reflect ? ember::reflection_pad3d(input, p)
                     : ember::replication_pad3d(input, p);
    }
  }
  return padIndexed(input, options);
}

Tensor scaled_dot_product_attention(const Tensor &query, const Tensor &key,
                                    const Tensor &value,
                                    const Tensor &attn_mask, double dropout_p,
                                    bool is_causal,
                                    std::optional<double> scale) {
  return ember::scaled_dot_product_attention(query, key, value,
                                             op_args::optional_of(attn_mask),
                                             dropout_p, is_causal, scale);
}

} // namespace ember::nn::functional

namespace ember::native {

namespace F = ember::nn::functional;

namespace {
/// reflection_padNd / replication_padNd: 2 * D amounts.
Tensor padNd(const char *name, size_t D, const Tensor &self,
             IntArrayRef padding, nn::PadMode mode) {
  EMBER_CHECK_VALUE(padding.size() == 2 * D, name, ": expected a padding of ",
                    2 * D, " values (before and after each of the last ", D,
                    " dims), but got ", padding.size());
  return F::padIndexed(self, F::PadFuncOptions(padding.vec()).mode(mode));
}

/// scaled_dot_product_attention with enable_gqa: key and value heads
/// (dim -3) repeated so that each serves query.size(-3) / heads queries.
Tensor repeatHeads(const Tensor &t, int64_t queryHeads, const char *what) {
  EMBER_CHECK_VALUE(t.dim() >= 3 && queryHeads % t.size(-3) == 0,
                    "scaled_dot_product_attention: with enable_gqa, the ", what,
                    " heads (dim -3) must divide the query heads, but got "
                    "query heads ",
                    queryHeads, " and ", what, " of shape ", t.sizes());
  int64_t groups = queryHeads / t.size(-3);
  if (groups == 1)
    return t;
  std::vector<int64_t> expanded(t.sizes().begin(), t.sizes().end());
  expanded.insert(expanded.end() - 2, groups);
  std::vector<int64_t> merged(t.sizes().begin(), t.sizes().end());
  merged[merged.size() - 3] = queryHeads;
  return t.unsqueeze(-3).expand(expanded).reshape(merged);
}
} // namespace

Tensor group_norm(const Tensor &input, int64_t num_groups,
                  const std::optional<Tensor> &weight,
                  const std::optional<Tensor> &bias, double eps,
                  bool /*cudnn_enabled*/) {
  return F::groupNorm(input, F::GroupNormFuncOptions(num_groups)
                                 .weight(weight.value_or(Tensor()))
                                 .bias(bias.value_or(Tensor()))
                                 .eps(eps));
}

Tensor reflection_pad1d(const Tensor &self, IntArrayRef padding) {
  return padNd("reflection_pad1d", 1, self, padding, kReflect);
}
Tensor reflection_pad2d(const Tensor &self, IntArrayRef padding) {
  return padNd("reflection_pad2d", 2, self, padding, kReflect);
}
Tensor reflection_pad3d(const Tensor &self, IntArrayRef padding) {
  return padNd("reflection_pad3d", 3, self, padding, kReflect);
}
Tensor replication_pad1d(const Tensor &self, IntArrayRef padding) {
  return padNd("replication_pad1d", 1, self, padding, kReplicate);
}
Tensor replication_pad2d(const Tensor &self, IntArrayRef padding) {
  return padNd("replication_pad2d", 2, self, padding, kReplicate);
}
Tensor replication_pad3d(const Tensor &self, IntArrayRef padding) {
  return padNd("replication_pad3d", 3, self, padding, kReplicate);
}

Tensor scaled_dot_product_attention(const Tensor &query, const Tensor &key,
                                    const Tensor &value,
                                    const std::optional<Tensor> &attn_mask,
                                    double dropout_p, bool is_causal,
                                    std::optional<double> scale,
                                    bool enable_gqa) {
  Tensor k = key, v = value;
  if (enable_gqa) {
    EMBER_CHECK_VALUE(query.dim() >= 3,
                      "scaled_dot_product_attention: enable_gqa needs "
                      "(..., heads, L, E) queries, but got a query of shape ",
                      query.sizes());
    k = repeatHeads(key, query.size(-3), "key");
    v = repeatHeads(value, query.size(-3), "value");
  }
  return F::attention(query, k, v, attn_mask.value_or(Tensor()), dropout_p,
                      is_causal, scale);
}

} // namespace ember::native
