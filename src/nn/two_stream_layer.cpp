#include "xl/nn/two_stream_layer.h"

namespace xl::nn {

TwoStreamLayerImpl::TwoStreamLayerImpl(const DecoderLayerOptions& options_) : options(options_) {
  reset();
}

void TwoStreamLayerImpl::reset() {
  rel_attn = register_module("rel_attn", TwoStreamAttention(options.attention()));
  ff = register_module("ff", FeedForward(options.feed_forward()));
}

void TwoStreamLayerImpl::reset_parameters(const InitOptions& init) {
  rel_attn->reset_parameters(init);
  ff->reset_parameters(init);
}

std::pair<torch::Tensor, torch::Tensor> TwoStreamLayerImpl::forward(
    const torch::Tensor& h,
    const torch::Tensor& g,
    const TwoStreamTerms& terms,
    const torch::Tensor& mem,
    AttentionCache* cache) {
  const auto [h_out, g_out] = rel_attn(h, g, terms, mem, cache);
  return {ff(h_out), g_out.defined() ? ff(g_out) : g_out};
}

} // namespace xl::nn
