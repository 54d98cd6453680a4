// One Transformer-XL decoder layer: attention over [memory | segment], then the
// feed-forward.
#pragma once

#include <torch/torch.h>

#include "xl/nn/attention.h"
#include "xl/nn/feed_forward.h"

namespace xl::nn {

struct DecoderLayerOptions {
  DecoderLayerOptions(
      int64_t d_model,
      int64_t n_head,
      int64_t d_head,
      int64_t d_inner)
      : d_model_(d_model),
        n_head_(n_head),
        d_head_(d_head),
        d_inner_(d_inner) {}
  TORCH_ARG(int64_t, d_model);
  TORCH_ARG(int64_t, n_head);
  TORCH_ARG(int64_t, d_head);
  TORCH_ARG(int64_t, d_inner);
  TORCH_ARG(double, dropout) = 0.0;
  TORCH_ARG(double, dropatt) = 0.0;
  TORCH_ARG(bool, pre_lnorm) = false;
  TORCH_ARG(double, layer_norm_eps) = 1e-5;
  /// relative (Transformer-XL) attention; false: vanilla attention
  TORCH_ARG(bool, relative) = true;
};

class DecoderLayerImpl : public torch::nn::Cloneable<DecoderLayerImpl> {
 public:
  explicit DecoderLayerImpl(const DecoderLayerOptions& options);
  void reset() override;

  /// h [L, B, D], mask [L, S], mem [M, B, D] or undefined; r [S, D], u, v [H,
  /// Dh] for relative attention (ignored by vanilla attention) -> [L, B, D]
  torch::Tensor forward(
      const torch::Tensor& h,
      const torch::Tensor& mask,
      const torch::Tensor& mem,
      const torch::Tensor& r,
      const torch::Tensor& u,
      const torch::Tensor& v);

  DecoderLayerOptions options;
  RelPartialAttention rel_attn{nullptr};
  VanillaAttention attn{nullptr};
  FeedForward pos_ff{nullptr};
};
TORCH_MODULE(DecoderLayer);

} // namespace xl::nn
