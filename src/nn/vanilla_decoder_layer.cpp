#include "xl/nn/vanilla_decoder_layer.h"

namespace xl::nn {

VanillaDecoderLayerImpl::VanillaDecoderLayerImpl(const DecoderLayerOptions& options_)
    : options(options_) {
  reset();
}

void VanillaDecoderLayerImpl::reset() {
  attn = register_module("attn", VanillaAttention(options.attention()));
  pos_ff = register_module("pos_ff", FeedForward(options.feed_forward()));
}

void VanillaDecoderLayerImpl::reset_parameters(const InitOptions& init) {
  attn->reset_parameters(init);
  pos_ff->reset_parameters(init);
}

torch::Tensor VanillaDecoderLayerImpl::forward(
    const torch::Tensor& h,
    const torch::Tensor& mask,
    const torch::Tensor& mem,
    AttentionCache* cache) {
  return pos_ff(attn->forward(h, mask, mem, cache));
}

} // namespace xl::nn
