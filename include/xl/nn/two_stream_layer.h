// An XLNet layer: two-stream relative attention, then the feed-forward, both streams through the
// same weights.
#pragma once

#include <torch/torch.h>

#include <utility>

#include "xl/nn/decoder_layer_options.h"
#include "xl/nn/two_stream_attention.h"

namespace xl::nn {

class TwoStreamLayerImpl : public torch::nn::Cloneable<TwoStreamLayerImpl> {
 public:
  explicit TwoStreamLayerImpl(const DecoderLayerOptions& options);
  void reset() override;
  void reset_parameters(const InitOptions& init);

  /// h [L, B, D], g [P, B, D] or undefined, mem [M, B, D] or undefined -> (h', g');
  /// `cache`: see AttentionCache
  std::pair<torch::Tensor, torch::Tensor> forward(
      const torch::Tensor& h,
      const torch::Tensor& g,
      const TwoStreamTerms& terms,
      const torch::Tensor& mem,
      AttentionCache* cache = nullptr);

  DecoderLayerOptions options;
  TwoStreamAttention rel_attn{nullptr};
  FeedForward ff{nullptr};
};
TORCH_MODULE(TwoStreamLayer);

} // namespace xl::nn
