// A Transformer-XL decoder layer: relative attention over [memory | segment], then the
// feed-forward.
#pragma once

#include <torch/torch.h>

#include "xl/nn/decoder_layer_options.h"
#include "xl/nn/rel_partial_attention.h"

namespace xl::nn {

class RelDecoderLayerImpl : public torch::nn::Cloneable<RelDecoderLayerImpl> {
 public:
  explicit RelDecoderLayerImpl(const DecoderLayerOptions& options);
  void reset() override;
  void reset_parameters(const InitOptions& init);

  /// h [L, B, D], rel (r [S, D], u, v [H, Dh]), mask [L, S], mem [M, B, D] or undefined ->
  /// [L, B, D]; `cache`: generation's (see AttentionCache)
  torch::Tensor forward(
      const torch::Tensor& h,
      const RelativeTerms& rel,
      const torch::Tensor& mask,
      const torch::Tensor& mem,
      AttentionCache* cache = nullptr);

  DecoderLayerOptions options;
  RelPartialAttention rel_attn{nullptr};
  FeedForward pos_ff{nullptr};
};
TORCH_MODULE(RelDecoderLayer);

} // namespace xl::nn
