#include "eager/nn/ModulesAttention.h"
#include "eager/Capturing.h"

#include "eager/Factory.h"
#include "eager/nn/Init.h"

#include <cmath>
#include <limits>

namespace ember::nn {

namespace F = functional;

MultiheadAttentionImpl::MultiheadAttentionImpl(
    const MultiheadAttentionOptions &options_)
    : options(options_) {
  reset();
}

void MultiheadAttentionImpl::reset() {
  const int64_t E = options.embed_dim();
  EMBER_CHECK_VALUE(E > 0 && options.num_heads() > 0,
                    "embed_dim and num_heads must be greater than 0, got "
                    "embed_dim=",
                    E, " and num_heads=", options.num_heads());
  EMBER_CHECK_VALUE(options.kdim() > 0 && options.vdim() > 0,
                    "kdim and vdim must be greater than 0, got kdim=",
                    options.kdim(), " and vdim=", options.vdim());
  EMBER_CHECK_VALUE(options.dropout() >= 0 && options.dropout() <= 1,
                    "dropout probability has to be between 0 and 1, but got ",
                    options.dropout());
  _qkv_same_embed_dim = options.kdim() == E && options.vdim() == E;
  head_dim = E / options.num_heads();
  EMBER_CHECK_VALUE(head_dim * options.num_heads() == E,
                    "embed_dim must be divisible by num_heads (got embed_dim=",
                    E, " and num_heads=", options.num_heads(), ")");
  if (!_qkv_same_embed_dim) {
    q_proj_weight = register_parameter("q_proj_weight", ember::empty({E, E}));
    k_proj_weight =
        register_parameter("k_proj_weight", ember::empty({E, options.kdim()}));
    v_proj_weight =
        register_parameter("v_proj_weight", ember::empty({E, options.vdim()}));
    in_proj_weight = register_parameter("in_proj_weight", Tensor(), false);
  } else {
    in_proj_weight =
        register_parameter("in_proj_weight", ember::empty({3 * E, E}));
    q_proj_weight = register_parameter("q_proj_weight", Tensor(), false);
    k_proj_weight = register_parameter("k_proj_weight", Tensor(), false);
    v_proj_weight = register_parameter("v_proj_weight", Tensor(), false);
  }
  if (options.bias())
    in_proj_bias = register_parameter("in_proj_bias", ember::empty({3 * E}));
  else
    in_proj_bias = register_parameter("in_proj_bias", Tensor(), false);
  out_proj = register_module("out_proj",
                             Linear(LinearOptions(E, E).bias(options.bias())));
  if (options.add_bias_kv()) {
    bias_k = register_parameter("bias_k", ember::empty({1, 1, E}));
    bias_v = register_parameter("bias_v", ember::empty({1, 1, E}));
  } else {
    bias_k.reset();
    bias_v.reset();
  }
  _reset_parameters();
}

void MultiheadAttentionImpl::_reset_parameters() {
  if (_qkv_same_embed_dim) {
    init::xavier_uniform_(in_proj_weight);
  } else {
    init::xavier_uniform_(q_proj_weight);
    init::xavier_uniform_(k_proj_weight);
    init::xavier_uniform_(v_proj_weight);
  }
  if (in_proj_bias.defined()) {
    init::constant_(in_proj_bias, 0);
    init::constant_(out_proj->bias, 0);
  }
  if (bias_k.defined())
    init::xavier_normal_(bias_k);
  if (bias_v.defined())
    init::xavier_normal_(bias_v);
}

void MultiheadAttentionImpl::pretty_print(std::ostream &stream) const {
  stream << "ember::nn::MultiheadAttention";
}

namespace {

/// A bool mask (true = masked out) as an additive float mask of `dtype`
/// (-inf where masked); float masks are converted to `dtype`.
Tensor canonical_mask(const Tensor &mask, ScalarType dtype, const char *name) {
  if (!mask.defined())
    return mask;
  ember::detail::LibraryFactories library_factories; // (zeros: a constant)
  if (mask.dtype() == kBool)
    return ember::zeros(mask.sizes(),
                        TensorOptions(dtype).device(mask.device()))
        .masked_fill(mask, -std::numeric_limits<double>::infinity());
  EMBER_CHECK_TYPE(mask.is_floating_point(), "only bool and floating types of ",
                   name, " are supported, got ", mask.dtype());
  return mask.to(dtype);
}

} // namespace

std::tuple<Tensor, Tensor> MultiheadAttentionImpl::forward(
    const Tensor &query_in, const Tensor &key_in, const Tensor &value_in,
    const Tensor &key_padding_mask, bool need_weights, const Tensor &attn_mask,
    bool average_attn_weights) {
  const int64_t E = options.embed_dim(), H = options.num_heads();
  EMBER_CHECK_VALUE(query_in.dim() == 3 || query_in.dim() == 2,
                    "query should be unbatched 2D or batched 3D tensor but "
                    "received ",
                    query_in.dim(), "-D query tensor");
  const bool batched = query_in.dim() == 3;
  const int64_t want = batched ? 3 : 2;
  EMBER_CHECK_VALUE(key_in.dim() == want && value_in.dim() == want, "For ",
                    batched ? "batched (3-D)" : "unbatched (2-D)",
                    " `query`, expected `key` and `value` to be ", want,
                    "-D but found ", key_in.dim(), "-D and ", value_in.dim(),
                    "-D tensors respectively");
  if (key_padding_mask.defined())
    EMBER_CHECK_VALUE(key_padding_mask.dim() == want - 1, "For ",
                      batched ? "batched (3-D)" : "unbatched (2-D)",
                      " `query`, expected `key_padding_mask` to be `None` or ",
                      want - 1, "-D but found ", key_padding_mask.dim(),
                      "-D tensor instead");
  if (attn_mask.defined())
    EMBER_CHECK_VALUE(attn_mask.dim() == 2 || attn_mask.dim() == 3, "For ",
                      batched ? "batched (3-D)" : "unbatched (2-D)",
                      " `query`, expected `attn_mask` to be `None`, 2-D or "
                      "3-D but found ",
                      attn_mask.dim(), "-D tensor instead");

  Tensor query = query_in, key = key_in, value = value_in;
  Tensor kpm = key_padding_mask;
  if (batched && options.batch_first()) {
    query = query.transpose(0, 1);
    key = key.transpose(0, 1);
    value = value.transpose(0, 1);
  }
  if (!batched) {
    query = query.unsqueeze(1);
    key = key.unsqueeze(1);
    value = value.unsqueeze(1);
    if (kpm.defined())
      kpm = kpm.unsqueeze(0);
  }
  const int64_t L = query.size(0), N = query.size(1);
  EMBER_CHECK_VALUE(query.size(2) == E, "was expecting embedding dimension of ",
                    E, ", but got ", query.size(2));
  EMBER_CHECK_VALUE(key.size(0) == value.size(0) && key.size(1) == N &&
                        value.size(1) == N,
                    "key shape ", key.sizes(), " does not match value shape ",
                    value.sizes(), " (or the batch size ", N, " of query)");
  EMBER_CHECK_VALUE(
      key.size(2) == options.kdim() && value.size(2) == options.vdim(),
      "expected key and value feature sizes kdim=", options.kdim(),
      " and vdim=", options.vdim(), ", got ", key.size(2), " and ",
      value.size(2));
  int64_t S = key.size(0);

  const ScalarType dtype = query.dtype();
  Tensor mask = canonical_mask(attn_mask, dtype, "attn_mask");
  kpm = canonical_mask(kpm, dtype, "key_padding_mask");

  // Input projections.
  Tensor q, k, v;
  std::vector<Tensor> b(3);
  if (in_proj_bias.defined())
    b = in_proj_bias.chunk(3);
  if (_qkv_same_embed_dim) {
    std::vector<Tensor> w = in_proj_weight.chunk(3);
    q = F::linear(query, w[0], b[0]);
    k = F::linear(key, w[1], b[1]);
    v = F::linear(value, w[2], b[2]);
  } else {
    q = F::linear(query, q_proj_weight, b[0]);
    k = F::linear(key, k_proj_weight, b[1]);
    v = F::linear(value, v_proj_weight, b[2]);
  }

  if (mask.defined()) {
    if (mask.dim() == 2) {
      EMBER_CHECK_VALUE(mask.size(0) == L && mask.size(1) == S,
                        "The shape of the 2D attn_mask is ", mask.sizes(),
                        ", but should be [", L, ", ", S, "].");
      mask = mask.unsqueeze(0);
    } else {
      EMBER_CHECK_VALUE(mask.size(0) == N * H && mask.size(1) == L &&
                            mask.size(2) == S,
                        "The shape of the 3D attn_mask is ", mask.sizes(),
                        ", but should be [", N * H, ", ", L, ", ", S, "].");
    }
  }

  if (bias_k.defined()) {
    k = ember::cat({k, bias_k.repeat({1, N, 1})}, 0);
    v = ember::cat({v, bias_v.repeat({1, N, 1})}, 0);
    if (mask.defined())
      mask = F::pad(mask, F::PadFuncOptions({0, 1}));
    if (kpm.defined())
      kpm = F::pad(kpm, F::PadFuncOptions({0, 1}));
  }

  // (seq, N, E) -> (N * H, seq, head_dim)
  q = q.reshape({L, N * H, head_dim}).transpose(0, 1);
  k = k.reshape({k.size(0), N * H, head_dim}).transpose(0, 1);
  v = v.reshape({v.size(0), N * H, head_dim}).transpose(0, 1);

  if (options.add_zero_attn()) {
    k = ember::cat({k, ember::zeros({N * H, 1, head_dim}, k.options())}, 1);
    v = ember::cat({v, ember::zeros({N * H, 1, head_dim}, v.options())}, 1);
    if (mask.defined())
      mask = F::pad(mask, F::PadFuncOptions({0, 1}));
    if (kpm.defined())
      kpm = F::pad(kpm, F::PadFuncOptions({0, 1}));
  }
  S = k.size(1);

  if (kpm.defined()) {
    EMBER_CHECK_VALUE(kpm.size(0) == N && kpm.size(1) == S,
                      "expecting key_padding_mask shape of [", N, ", ", S,
                      "], but got ", kpm.sizes());
    kpm = kpm.view({N, 1, 1, S}).expand({N, H, 1, S}).reshape({N * H, 1, S});
    mask = mask.defined() ? mask + kpm : kpm;
  }

  const double dropout_p = is_training() ? options.dropout() : 0.0;
  Tensor out, weights;
  if (need_weights) {
    Tensor qs = q * std::sqrt(1.0 / double(head_dim)), kt = k.transpose(1, 2);
    // As PyTorch: the mask is baddbmm's addend, so that autocast casts it
    // with the product (the weights stay in the region's dtype).
    Tensor scores = mask.defined() ? ember::baddbmm(mask, qs, kt) : qs.bmm(kt);
    weights = F::softmax(scores, -1);
    if (dropout_p > 0)
      weights = F::dropout(weights, dropout_p, /*training=*/true);
    out = weights.bmm(v); // (N * H, L, head_dim)
    out = out.transpose(0, 1).contiguous().view({L * N, E});
    weights = weights.view({N, H, L, S});
    if (average_attn_weights)
      weights = weights.mean(1);
    if (!batched)
      weights = weights.squeeze(0);
  } else {
    if (mask.defined()) {
      if (mask.size(0) == 1 && mask.dim() == 3)
        mask = mask.unsqueeze(0);
      else
        mask = mask.view({N, H, -1, S});
    }
    Tensor qh = q.reshape({N, H, L, head_dim});
    Tensor kh = k.reshape({N, H, S, head_dim});
    Tensor vh = v.reshape({N, H, S, head_dim});
    out = F::scaled_dot_product_attention(qh, kh, vh, mask, dropout_p);
    out = out.permute({2, 0, 1, 3}).contiguous().view({L * N, E});
  }
  out = F::linear(out, out_proj->weight, out_proj->bias).view({L, N, E});
  if (!batched)
    out = out.squeeze(1);
  else if (options.batch_first())
    out = out.transpose(0, 1);
  return {out, weights};
}

} // namespace ember::nn
