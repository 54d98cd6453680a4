// What a decoder layer (attention over [memory | segment], then the position-wise feed-forward)
// is built from: the attention's options, nested, and the feed-forward's inner size and
// activation; the feed-forward takes d_model, dropout, pre-LN and eps from the attention.
#pragma once

#include <torch/torch.h>

#include "xl/nn/attention_core.h"
#include "xl/nn/feed_forward.h"

namespace xl::nn {

struct DecoderLayerOptions {
  DecoderLayerOptions(AttentionOptions attention, int64_t d_inner)
      : attention_(attention), d_inner_(d_inner) {}
  TORCH_ARG(AttentionOptions, attention);
  /// inner size of the feed-forward
  TORCH_ARG(int64_t, d_inner);
  TORCH_ARG(Activation, activation) = Activation::kRelu;
  /// the feed-forward's dropout after the activation; unset: the attention's dropout
  TORCH_ARG(std::optional<double>, inner_dropout);
  /// training runs the layer as one autograd node where it can (nn/fused_rel_layer.h: relative
  /// attention, post-LN, ReLU); false: the composed modules
  TORCH_ARG(bool, fused) = true;

 public:
  FeedForwardOptions feed_forward() const {
    return FeedForwardOptions(attention().d_model(), d_inner())
        .dropout(attention().dropout())
        .pre_lnorm(attention().pre_lnorm())
        .layer_norm_eps(attention().layer_norm_eps())
        .activation(activation())
        .inner_dropout(inner_dropout());
  }
};

} // namespace xl::nn
