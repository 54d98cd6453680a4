// Standard scaled dot-product multi-head attention over [memory | segment]: positions enter only
// through what the model adds to the inputs (Transformer-XL's absolute-position ablation; the
// character transformer's learned per-layer positions).
#pragma once

#include <torch/torch.h>

#include "xl/nn/attention_core.h"
#include "xl/nn/dropout.h"

namespace xl::nn {

class VanillaAttentionImpl : public torch::nn::Cloneable<VanillaAttentionImpl> {
 public:
  explicit VanillaAttentionImpl(const AttentionOptions& options);
  void reset() override;
  void reset_parameters(const InitOptions& init);

  /// h [L, B, D], mask [L, S] (true = hidden), mem [M, B, D] or undefined -> [L, B, D];
  /// `cache`: the keys and values of the rows read before (see AttentionCache)
  torch::Tensor forward(
      const torch::Tensor& h,
      const torch::Tensor& mask,
      const torch::Tensor& mem = {},
      AttentionCache* cache = nullptr);

  AttentionOptions options;
  torch::nn::Linear qkv_net{nullptr};
  torch::nn::Linear o_net{nullptr};
  torch::nn::LayerNorm layer_norm{nullptr};
  Dropout drop{nullptr};
  Dropout dropatt{nullptr};
};
TORCH_MODULE(VanillaAttention);

} // namespace xl::nn
