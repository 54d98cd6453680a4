// Multi-head attention over [memory | segment], in two variants selected by
// model.attn_type:
//
//  - RelPartialAttention: Transformer-XL's relative attention (Dai et al. 2019,
//  eq. in §3.3).
//    score[i,j] = (q_i + u)·k_j  (content + global content bias, "AC")
//               + (q_i + v)·W_R R_{i-j}  (position + global position bias,
//               "BD"),
//    with R the sinusoid of the relative distance, computed for all keys at
//    once and aligned by rel_shift.
//  - VanillaAttention: standard scaled dot-product attention; positions enter
//  only through
//    absolute embeddings added to the input (the paper's "vanilla Transformer"
//    baseline).
//
// Both: no biases in the q/k/v/r/o projections, dropout on the output,
// `dropatt` on the probabilities, residual + LayerNorm after (post-LN) or
// LayerNorm on the input (pre-LN). Tensors are [len, batch, ...] like the
// reference implementations; internally the scores are [batch, head, query,
// key] so that every product is a batched matmul.
#pragma once

#include <torch/torch.h>

namespace xl::nn {

/// The zero-pad relative shift. x [B, H, L, S] holds, for query i, the scores
/// against the relative-position rows 0..S-1 of R (R row r encodes distance
/// S-1-r). Returns y with y[..., i, j] = x[..., i, j + L - 1 - i] wherever j <=
/// S - L + i (distance (S-L+i) - j >= 0); the other entries are garbage that
/// the causal mask removes.
torch::Tensor rel_shift(const torch::Tensor& x);

struct AttentionOptions {
  AttentionOptions(int64_t d_model, int64_t n_head, int64_t d_head)
      : d_model_(d_model), n_head_(n_head), d_head_(d_head) {}
  TORCH_ARG(int64_t, d_model);
  TORCH_ARG(int64_t, n_head);
  TORCH_ARG(int64_t, d_head);
  /// dropout on the attention output
  TORCH_ARG(double, dropout) = 0.0;
  /// dropout on the attention probabilities
  TORCH_ARG(double, dropatt) = 0.0;
  /// LayerNorm before attention (on [memory | segment]) instead of after the
  /// residual
  TORCH_ARG(bool, pre_lnorm) = false;
  TORCH_ARG(double, layer_norm_eps) = 1e-5;
};

class RelPartialAttentionImpl
    : public torch::nn::Cloneable<RelPartialAttentionImpl> {
 public:
  explicit RelPartialAttentionImpl(const AttentionOptions& options);
  void reset() override;

  /// h [L, B, D] segment, r [S, D] position embeddings (S = M + L, distance S-1
  /// .. 0), u, v [H, Dh] biases, mask [L, S] (true = masked), mem [M, B, D] or
  /// undefined
  /// -> [L, B, D]
  torch::Tensor forward(
      const torch::Tensor& h,
      const torch::Tensor& r,
      const torch::Tensor& u,
      const torch::Tensor& v,
      const torch::Tensor& mask,
      const torch::Tensor& mem = {});

  AttentionOptions options;
  torch::nn::Linear qkv_net{nullptr};
  torch::nn::Linear r_net{nullptr};
  torch::nn::Linear o_net{nullptr};
  torch::nn::LayerNorm layer_norm{nullptr};
  torch::nn::Dropout drop{nullptr};
  torch::nn::Dropout dropatt{nullptr};
};
TORCH_MODULE(RelPartialAttention);

class VanillaAttentionImpl : public torch::nn::Cloneable<VanillaAttentionImpl> {
 public:
  explicit VanillaAttentionImpl(const AttentionOptions& options);
  void reset() override;

  /// h [L, B, D], mask [L, S] (true = masked), mem [M, B, D] or undefined ->
  /// [L, B, D]
  torch::Tensor forward(
      const torch::Tensor& h,
      const torch::Tensor& mask,
      const torch::Tensor& mem = {});

  AttentionOptions options;
  torch::nn::Linear qkv_net{nullptr};
  torch::nn::Linear o_net{nullptr};
  torch::nn::LayerNorm layer_norm{nullptr};
  torch::nn::Dropout drop{nullptr};
  torch::nn::Dropout dropatt{nullptr};
};
TORCH_MODULE(VanillaAttention);

} // namespace xl::nn
