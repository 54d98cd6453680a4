// Transformer-XL's relative multi-head attention (Dai et al. 2019, §3.3): for query i and key j,
//   score[i, j] = (q_i + u) . k_j               content term with the global content bias ("AC")
//               + (q_i + v) . W_R R_{i-j}       position term with the global position bias ("BD")
// with R the sinusoid of the relative distance, computed for all keys at once and aligned by
// rel_shift. No biases in the q/k/v/r/o projections.
#pragma once

#include <torch/torch.h>

#include "xl/nn/attention_core.h"
#include "xl/nn/dropout.h"

namespace xl::nn {

/// The zero-pad relative shift. x [B, H, L, S] holds, for query i, the scores against the
/// relative-position rows 0..S-1 of R (row r encodes distance S-1-r). Returns y with
///   y[..., i, j] = x[..., i, j + L - 1 - i]   wherever j <= S - L + i (distance >= 0);
/// the other entries are garbage that the causal mask removes. Without gradients it is a view of
/// x (which then must not change while y is read). XLNet's bidirectional shift is
/// another function.
torch::Tensor rel_shift(const torch::Tensor& x);

/// What relative attention adds to the content: the position embeddings r [S, D] of the
/// distances S-1 .. 0, and the global content and position biases u, v [H, Dh].
struct RelativeTerms {
  torch::Tensor r;
  torch::Tensor u;
  torch::Tensor v;
};

class RelPartialAttentionImpl : public torch::nn::Cloneable<RelPartialAttentionImpl> {
 public:
  explicit RelPartialAttentionImpl(const AttentionOptions& options);
  void reset() override;
  void reset_parameters(const InitOptions& init);

  /// h [L, B, D] segment, rel: r [S, D] (S = M + L), u and v [H, Dh], mask [L, S] (true =
  /// hidden), mem [M, B, D] or undefined -> [L, B, D]; `cache`: generation's (see
  /// AttentionCache), which also keeps the position projections of r while S stays the same
  torch::Tensor forward(
      const torch::Tensor& h,
      const RelativeTerms& rel,
      const torch::Tensor& mask,
      const torch::Tensor& mem = {},
      AttentionCache* cache = nullptr);

  AttentionOptions options;
  torch::nn::Linear qkv_net{nullptr};
  torch::nn::Linear o_net{nullptr};
  torch::nn::LayerNorm layer_norm{nullptr};
  Dropout drop{nullptr};
  Dropout dropatt{nullptr};
  torch::nn::Linear r_net{nullptr};
};
TORCH_MODULE(RelPartialAttention);

} // namespace xl::nn
