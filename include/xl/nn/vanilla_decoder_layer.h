// A decoder layer with standard attention over [memory | segment], then the feed-forward:
// Transformer-XL's absolute-position ablation, and the character transformer's layers.
#pragma once

#include <torch/torch.h>

#include "xl/nn/decoder_layer_options.h"
#include "xl/nn/vanilla_attention.h"

namespace xl::nn {

class VanillaDecoderLayerImpl : public torch::nn::Cloneable<VanillaDecoderLayerImpl> {
 public:
  explicit VanillaDecoderLayerImpl(const DecoderLayerOptions& options);
  void reset() override;
  void reset_parameters(const InitOptions& init);

  /// h [L, B, D], mask [L, S], mem [M, B, D] or undefined -> [L, B, D]; `cache`: see
  /// AttentionCache
  torch::Tensor forward(
      const torch::Tensor& h,
      const torch::Tensor& mask,
      const torch::Tensor& mem,
      AttentionCache* cache = nullptr);

  DecoderLayerOptions options;
  VanillaAttention attn{nullptr};
  FeedForward pos_ff{nullptr};
};
TORCH_MODULE(VanillaDecoderLayer);

} // namespace xl::nn
