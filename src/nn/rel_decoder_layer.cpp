#include "xl/nn/rel_decoder_layer.h"

#include "xl/nn/fused_rel_layer.h"

namespace xl::nn {

RelDecoderLayerImpl::RelDecoderLayerImpl(const DecoderLayerOptions& options_) : options(options_) {
  reset();
}

void RelDecoderLayerImpl::reset() {
  rel_attn = register_module("rel_attn", RelPartialAttention(options.attention()));
  pos_ff = register_module("pos_ff", FeedForward(options.feed_forward()));
}

void RelDecoderLayerImpl::reset_parameters(const InitOptions& init) {
  rel_attn->reset_parameters(init);
  pos_ff->reset_parameters(init);
}

torch::Tensor RelDecoderLayerImpl::forward(
    const torch::Tensor& h,
    const RelativeTerms& rel,
    const torch::Tensor& mask,
    const torch::Tensor& mem,
    AttentionCache* cache) {
  // Training (also the gradient-free first pass of activation checkpointing, whose replay must
  // draw the same dropout masks) and gradients fuse; evaluation runs the modules, with its
  // projection cache.
  if (cache == nullptr && (is_training() || torch::GradMode::is_enabled()) &&
      fused_rel_layer_applies(options)) {
    const auto& a = *rel_attn;
    const auto& f = *pos_ff;
    return fused_rel_layer(
        options,
        {a.qkv_net->weight,
         a.r_net->weight,
         a.o_net->weight,
         a.layer_norm->weight,
         a.layer_norm->bias,
         f.fc1->weight,
         f.fc1->bias,
         f.fc2->weight,
         f.fc2->bias,
         f.layer_norm->weight,
         f.layer_norm->bias},
        is_training(),
        h,
        rel,
        mask,
        mem);
  }
  return pos_ff(rel_attn->forward(h, rel, mask, mem, cache));
}

} // namespace xl::nn
