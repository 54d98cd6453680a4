#include "xl/nn/rel_decoder_layer.h"

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
  return pos_ff(rel_attn->forward(h, rel, mask, mem, cache));
}

} // namespace xl::nn
