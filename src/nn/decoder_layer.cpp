#include "xl/nn/decoder_layer.h"

namespace xl::nn {

DecoderLayerImpl::DecoderLayerImpl(const DecoderLayerOptions& options_)
    : options(options_) {
  reset();
}

void DecoderLayerImpl::reset() {
  const auto attention =
      AttentionOptions(options.d_model(), options.n_head(), options.d_head())
          .dropout(options.dropout())
          .dropatt(options.dropatt())
          .pre_lnorm(options.pre_lnorm())
          .layer_norm_eps(options.layer_norm_eps());
  if (options.relative()) {
    rel_attn = register_module("rel_attn", RelPartialAttention(attention));
  } else {
    attn = register_module("attn", VanillaAttention(attention));
  }
  pos_ff = register_module(
      "pos_ff",
      FeedForward(FeedForwardOptions(options.d_model(), options.d_inner())
                      .dropout(options.dropout())
                      .pre_lnorm(options.pre_lnorm())
                      .layer_norm_eps(options.layer_norm_eps())));
}

torch::Tensor DecoderLayerImpl::forward(
    const torch::Tensor& h,
    const torch::Tensor& mask,
    const torch::Tensor& mem,
    const torch::Tensor& r,
    const torch::Tensor& u,
    const torch::Tensor& v) {
  const auto out =
      options.relative() ? rel_attn(h, r, u, v, mask, mem) : attn(h, mask, mem);
  return pos_ff(out);
}

} // namespace xl::nn
