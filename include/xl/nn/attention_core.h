// The pieces every multi-head attention of xl is made of, public so that each variant (relative,
// vanilla, XLNet's two-stream) composes them instead of copying them:
//
//   project: q from the segment, k and v from [memory | segment] (one fused q/k/v projection)
//   attend:  scale, mask, softmax in float32, attention dropout, weighted sum of the values
//   finish:  output projection, dropout, residual, and LayerNorm after (post-LN)
//
// Tensors at the boundaries are [len, batch, ...] like the reference implementations; inside,
// heads are [batch, head, len, d_head] so that every product is a batched matmul.
#pragma once

#include <torch/torch.h>

#include <cmath>
#include <functional>
#include <vector>

#include "xl/nn/dropout.h"
#include "xl/nn/init.h"

namespace xl::nn {

struct AttentionOptions {
  AttentionOptions(int64_t d_model, int64_t n_head, int64_t d_head)
      : d_model_(d_model), n_head_(n_head), d_head_(d_head) {}
  TORCH_ARG(int64_t, d_model);
  TORCH_ARG(int64_t, n_head);
  /// size of each head; need not be d_model / n_head
  TORCH_ARG(int64_t, d_head);
  /// dropout on the attention output (and, in a decoder layer, inside the feed-forward)
  TORCH_ARG(double, dropout) = 0.0;
  /// dropout on the attention probabilities
  TORCH_ARG(double, dropatt) = 0.0;
  /// LayerNorm on the input ([memory | segment]) instead of after the residual
  TORCH_ARG(bool, pre_lnorm) = false;
  TORCH_ARG(double, layer_norm_eps) = 1e-5;
};

/// What one attention layer keeps between the calls of a generation or an evaluation: the key
/// and value projections of the rows it last read ([memory | segment]), whose rows before the
/// last `tail` end with those of the next call's memory, and the position projections with the
/// sizes of the position embeddings they came from. The keys and values are head-major views
/// ([B, H, S, Dh]) into a buffer with room for more rows, so that a call appends its segment in
/// place and the products read the memory without copying it.
struct AttentionCache {
  /// [B, H, S, Dh] each, views of `buffer`
  torch::Tensor k;
  torch::Tensor v;
  /// rows at the end of k and v that the next memory leaves out (ext_len, XLNet's rows not
  /// reused), which StackOutput::next_memory sets after each call
  int64_t tail = 0;
  torch::Tensor rk;
  std::vector<int64_t> r_sizes;
  /// [2, B, H, capacity, Dh]: the keys and values from row `start` on
  torch::Tensor buffer;
  int64_t start = 0;
};

/// Attention heads: q [B, H, L, Dh] from the segment, k and v [B, H, S, Dh] from
/// [memory | segment].
struct Heads {
  torch::Tensor q;
  torch::Tensor k;
  torch::Tensor v;
};

/// Checks h [L, B, D], mask [L, S] (S = M + L) and mem [M, B, D] (or undefined) against `o`,
/// with the actual sizes in the message.
void check_attention_inputs(
    const AttentionOptions& o,
    const torch::Tensor& h,
    const torch::Tensor& mask,
    const torch::Tensor& mem);

/// [len, B, H * Dh] -> [B, H, len, Dh]
torch::Tensor split_heads(const torch::Tensor& x, int64_t n_head, int64_t d_head);

/// q, k, v through one fused projection `qkv_net` (D -> 3 H Dh) of [mem | h]; with pre-LN the
/// keys' source is normalised first. With a `cache` whose rows end with the memory's, only h
/// is projected and the memory's keys and values come from the cache; the cache then holds
/// those of [mem | h]. A cache is for evaluation and generation: it refuses gradients.
Heads project_qkv(
    const AttentionOptions& o,
    torch::nn::Linear& qkv_net,
    torch::nn::LayerNorm& layer_norm,
    const torch::Tensor& h,
    const torch::Tensor& mem,
    AttentionCache* cache = nullptr);

/// The projection `project` makes of the position embeddings `r`, or the one `cache` kept from
/// embeddings of the same sizes (outside training they are a function of their sizes); kept in
/// `cache` when there is one.
torch::Tensor project_positions(
    AttentionCache* cache,
    const torch::Tensor& r,
    const std::function<torch::Tensor()>& project);

/// q [B, H, L, Dh] against position keys rk [H, Dh, S] shared by the batch -> [B, H, L, S], as
/// one product per head (broadcasting rk over the batch would copy it B times).
torch::Tensor position_scores(const torch::Tensor& q, const torch::Tensor& rk);

/// The scale of the attention scores, 1 / sqrt(Dh). attend() takes scores already scaled: callers
/// scale their queries ([L, Dh] entries) rather than the scores ([L, S]).
inline double attention_scale(const AttentionOptions& o) {
  return 1.0 / std::sqrt(static_cast<double>(o.d_head()));
}

/// A global attention bias (Transformer-XL's u and v, XLNet's r_*_bias), uninitialised: [H, Dh]
/// shared by the layers, or [n_layer, H, Dh] with one per layer.
inline torch::Tensor global_bias(const AttentionOptions& o, int64_t n_layer, bool per_layer) {
  return per_layer ? torch::empty({n_layer, o.n_head(), o.d_head()})
                   : torch::empty({o.n_head(), o.d_head()});
}

/// Layer `layer`'s [H, Dh] of a bias made by global_bias.
inline torch::Tensor layer_bias(const torch::Tensor& bias, int64_t layer) {
  return bias.dim() == 3 ? bias[layer] : bias;
}

/// q [B, H, L, Dh] with a global bias [H, Dh] (Transformer-XL's u and v, XLNet's r_*_bias),
/// scaled by attention_scale: the queries of a scaled score.
inline torch::Tensor biased_query(
    const AttentionOptions& o,
    const torch::Tensor& q,
    const torch::Tensor& bias) {
  return (q + bias.unsqueeze(1)) * attention_scale(o);
}

/// scores [B, H, L, S] (scaled by attention_scale; a temporary of the caller's, which attend
/// overwrites), mask broadcastable to them (true = hidden; undefined: none hidden), v [B, H, S,
/// Dh] -> attention vectors [L, B, H * Dh]. Scores are normalised in float32, also under bf16
/// autocast; a row that keeps no key attends uniformly, as in the reference implementations.
torch::Tensor attend(
    const AttentionOptions& o,
    Dropout& dropatt,
    const torch::Tensor& scores,
    const torch::Tensor& mask,
    const torch::Tensor& v);

/// h [L, B, D], attention vectors [L, B, H * Dh] -> [L, B, D]: h + drop(o_net(vec)), then
/// LayerNorm unless pre-LN.
torch::Tensor finish(
    const AttentionOptions& o,
    torch::nn::Linear& o_net,
    Dropout& drop,
    torch::nn::LayerNorm& layer_norm,
    const torch::Tensor& h,
    const torch::Tensor& attn_vec);

/// The sub-modules that the fused-projection variants share, registered on `m` under the names
/// the reference checkpoints use: qkv_net and o_net (no biases), layer_norm, drop, dropatt.
template <class Impl>
void register_attention_modules(Impl& m) {
  const AttentionOptions& o = m.options;
  const int64_t inner = o.n_head() * o.d_head();
  m.qkv_net = m.register_module(
      "qkv_net", torch::nn::Linear(torch::nn::LinearOptions(o.d_model(), 3 * inner).bias(false)));
  m.o_net = m.register_module(
      "o_net", torch::nn::Linear(torch::nn::LinearOptions(inner, o.d_model()).bias(false)));
  m.layer_norm = m.register_module(
      "layer_norm",
      torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.d_model()}).eps(o.layer_norm_eps())));
  m.drop = m.register_module("drop", Dropout(o.dropout()));
  m.dropatt = m.register_module("dropatt", Dropout(o.dropatt()));
}

/// The projection of relative position embeddings onto the heads: D -> H * Dh, no bias.
inline torch::nn::Linear position_projection(const AttentionOptions& o) {
  return torch::nn::Linear(
      torch::nn::LinearOptions(o.d_model(), o.n_head() * o.d_head()).bias(false));
}

/// Draws what register_attention_modules() registered, in its order.
template <class Impl>
void reset_attention_parameters(Impl& m, const InitOptions& init) {
  init.linear(m.qkv_net);
  init.linear(m.o_net);
  init.layer_norm(m.layer_norm);
}

} // namespace xl::nn
