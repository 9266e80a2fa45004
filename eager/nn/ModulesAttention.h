#pragma once
/// MultiheadAttention (libtorch's torch/nn/modules/activation.h, with
/// PyTorch's batch_first option).
///
///   ember::nn::MultiheadAttention mha(
///       ember::nn::MultiheadAttentionOptions(64, 8).batch_first(true));
///   auto [out, weights] = mha->forward(x, x, x);

#include "eager/nn/ModulesLayers.h"

#include <tuple>

namespace ember::nn {

/// Options of MultiheadAttention.
struct MultiheadAttentionOptions {
  MultiheadAttentionOptions(int64_t embed_dim, int64_t num_heads)
      : embed_dim_(embed_dim), num_heads_(num_heads), kdim_(embed_dim),
        vdim_(embed_dim) {}
  /// Total dimension of the model (split across the heads).
  EMBER_ARG(int64_t, embed_dim);
  /// Number of parallel heads; must divide embed_dim.
  EMBER_ARG(int64_t, num_heads);
  /// Dropout probability on the attention weights (training only).
  EMBER_ARG(double, dropout) = 0.0;
  /// Biases on the input and output projections.
  EMBER_ARG(bool, bias) = true;
  /// Learned biases appended to the key and value sequences.
  EMBER_ARG(bool, add_bias_kv) = false;
  /// A zero key and value appended to the sequences.
  EMBER_ARG(bool, add_zero_attn) = false;
  /// Features of the keys and values (default embed_dim).
  EMBER_ARG(int64_t, kdim);
  EMBER_ARG(int64_t, vdim);
  /// Inputs and output are (batch, seq, feature) instead of (seq, batch,
  /// feature).
  EMBER_ARG(bool, batch_first) = false;
};

/// Multi-head attention (torch::nn::MultiheadAttention): softmax(Q K^T /
/// sqrt(head_dim) + masks) V per head, from projections of query, key and
/// value, then an output projection. Parameters: in_proj_weight (3E, E) or
/// q/k/v_proj_weight when kdim or vdim differ from E (xavier_uniform_),
/// in_proj_bias (zeros), out_proj (Linear(E, E), bias zeros), bias_k and
/// bias_v (xavier_normal_) with add_bias_kv.
class MultiheadAttentionImpl : public Cloneable<MultiheadAttentionImpl> {
public:
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads)
      : MultiheadAttentionImpl(
            MultiheadAttentionOptions(embed_dim, num_heads)) {}
  explicit MultiheadAttentionImpl(const MultiheadAttentionOptions &options);

  void reset() override;
  void pretty_print(std::ostream &stream) const override;

  /// query (L, N, E), key (S, N, kdim), value (S, N, vdim) (batch first
  /// with batch_first; unbatched (L, E), ... also accepted).
  /// key_padding_mask (N, S): true (or -inf) marks keys to ignore.
  /// attn_mask (L, S) or (N * num_heads, L, S): true marks pairs that may
  /// not attend; a float mask is added to the scores. Returns the output
  /// (L, N, E) and, when need_weights, the attention weights (N, L, S)
  /// averaged over heads, or (N, num_heads, L, S) when not
  /// average_attn_weights; else an undefined tensor.
  std::tuple<Tensor, Tensor>
  forward(const Tensor &query, const Tensor &key, const Tensor &value,
          const Tensor &key_padding_mask = {}, bool need_weights = true,
          const Tensor &attn_mask = {}, bool average_attn_weights = true);

  MultiheadAttentionOptions options;
  bool _qkv_same_embed_dim = true;
  Tensor in_proj_weight, in_proj_bias;
  Tensor bias_k, bias_v;
  Linear out_proj = nullptr;
  Tensor q_proj_weight, k_proj_weight, v_proj_weight;
  int64_t head_dim = 0;

protected:
  void _reset_parameters();
};
EMBER_MODULE(MultiheadAttention);

} // namespace ember::nn
