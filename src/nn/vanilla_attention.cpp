#include "xl/nn/vanilla_attention.h"

#include "xl/nn/init.h"

namespace xl::nn {

VanillaAttentionImpl::VanillaAttentionImpl(const AttentionOptions& options_) : options(options_) {
  reset();
}

void VanillaAttentionImpl::reset() {
  register_attention_modules(*this);
}

void VanillaAttentionImpl::reset_parameters(const InitOptions& init) {
  reset_attention_parameters(*this, init);
}

torch::Tensor VanillaAttentionImpl::forward(
    const torch::Tensor& h,
    const torch::Tensor& mask,
    const torch::Tensor& mem,
    AttentionCache* cache) {
  check_attention_inputs(options, h, mask, mem);
  const Heads heads = project_qkv(options, qkv_net, layer_norm, h, mem, cache);
  const auto attn_vec = attend(
      options,
      dropatt,
      torch::matmul(heads.q * attention_scale(options), heads.k.transpose(2, 3)),
      mask,
      heads.v);
  return finish(options, o_net, drop, layer_norm, h, attn_vec);
}

} // namespace xl::nn
