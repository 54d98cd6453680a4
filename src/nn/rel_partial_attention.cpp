#include "xl/nn/rel_partial_attention.h"

#include "xl/nn/init.h"
#include "xl/runtime/autocast.h"

namespace xl::nn {

torch::Tensor rel_shift(const torch::Tensor& x) {
  TORCH_CHECK(x.dim() == 4, "rel_shift expects [B, H, L, S], got ", x.sizes());
  const int64_t b = x.size(0), n = x.size(1), l = x.size(2), s = x.size(3);
  if (!x.requires_grad() && x.stride(3) == 1 && x.stride(2) == s) {
    // Without gradients the shift is a view, read in place by the sum with the content
    // scores: row i starts L - 1 - i entries into row i of x, and its entries past the row's
    // end (the masked ones) are the next row's. (With gradients, overlapping views would make
    // the backward pass slow.)
    return x.as_strided(
        {b, n, l, s}, {x.stride(0), x.stride(1), s - 1, 1}, x.storage_offset() + l - 1);
  }
  const auto padded = torch::cat({x.new_zeros({b, n, l, 1}), x}, 3);
  return padded.view({b, n, s + 1, l}).narrow(2, 1, s).reshape({b, n, l, s});
}

RelPartialAttentionImpl::RelPartialAttentionImpl(const AttentionOptions& options_)
    : options(options_) {
  reset();
}

void RelPartialAttentionImpl::reset() {
  register_attention_modules(*this);
  r_net = register_module("r_net", position_projection(options));
}

void RelPartialAttentionImpl::reset_parameters(const InitOptions& init) {
  reset_attention_parameters(*this, init);
  init.linear(r_net);
}

torch::Tensor RelPartialAttentionImpl::forward(
    const torch::Tensor& h,
    const RelativeTerms& rel,
    const torch::Tensor& mask,
    const torch::Tensor& mem,
    AttentionCache* cache) {
  const auto& r = rel.r;
  check_attention_inputs(options, h, mask, mem);
  const int64_t klen = mask.size(1);
  TORCH_CHECK(
      r.dim() == 2 && r.size(0) == klen && r.size(1) == options.d_model(),
      "position embeddings must be [",
      klen,
      ", ",
      options.d_model(),
      "], got ",
      r.sizes());
  const Heads heads = project_qkv(options, qkv_net, layer_norm, h, mem, cache);
  const auto rk = project_positions(cache, r, [&] { // [S, H*Dh] -> [H, Dh, S]
    return runtime::linear(*r_net, r)
        .view({klen, options.n_head(), options.d_head()})
        .permute({1, 2, 0});
  });
  const auto ac = torch::matmul(biased_query(options, heads.q, rel.u), heads.k.transpose(2, 3));
  const auto bd = rel_shift(position_scores(biased_query(options, heads.q, rel.v), rk));
  const auto attn_vec = attend(options, dropatt, ac + bd, mask, heads.v);
  return finish(options, o_net, drop, layer_norm, h, attn_vec);
}

} // namespace xl::nn
