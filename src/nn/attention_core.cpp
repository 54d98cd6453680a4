#include "xl/nn/attention_core.h"

#include <cmath>

#include "xl/nn/fp32_islands.h"

namespace xl::nn {

void check_attention_inputs(
    const AttentionOptions& o,
    const torch::Tensor& h,
    const torch::Tensor& mask,
    const torch::Tensor& mem) {
  TORCH_CHECK(
      h.dim() == 3 && h.size(2) == o.d_model(),
      "attention input must be [L, B, ",
      o.d_model(),
      "], got ",
      h.sizes());
  const int64_t mlen = mem.defined() ? mem.size(0) : 0;
  if (mem.defined()) {
    TORCH_CHECK(
        mem.dim() == 3 && mem.size(1) == h.size(1) && mem.size(2) == h.size(2),
        "memory must be [M, ",
        h.size(1),
        ", ",
        h.size(2),
        "], got ",
        mem.sizes());
  }
  TORCH_CHECK(
      mask.dim() == 2 && mask.size(0) == h.size(0) &&
          mask.size(1) == mlen + h.size(0),
      "mask must be [",
      h.size(0),
      ", ",
      mlen + h.size(0),
      "], got ",
      mask.sizes());
}

torch::Tensor split_heads(
    const torch::Tensor& x,
    int64_t n_head,
    int64_t d_head) {
  return x.reshape({x.size(0), x.size(1), n_head, d_head})
      .permute({1, 2, 0, 3});
}

Heads project_qkv(
    const AttentionOptions& o,
    torch::nn::Linear& qkv_net,
    torch::nn::LayerNorm& layer_norm,
    const torch::Tensor& h,
    const torch::Tensor& mem,
    AttentionCache* cache) {
  const int64_t qlen = h.size(0);
  const int64_t mlen = mem.defined() ? mem.size(0) : 0;
  const int64_t inner = o.n_head() * o.d_head();
  const auto heads = [&](const torch::Tensor& q, const torch::Tensor& kv) {
    if (cache != nullptr) {
      cache->kv = kv;
    }
    return Heads{
        split_heads(q, o.n_head(), o.d_head()),
        split_heads(kv.narrow(2, 0, inner), o.n_head(), o.d_head()),
        split_heads(kv.narrow(2, inner, inner), o.n_head(), o.d_head())};
  };
  // Each row is projected on its own (LayerNorm and Linear are row-wise), so the memory's
  // rows project as they did when they were the segment.
  if (cache != nullptr && mlen > 0 && cache->kv.defined() &&
      cache->kv.size(0) >= cache->tail + mlen &&
      cache->kv.size(1) == h.size(1)) {
    const auto proj =
        qkv_net->forward(o.pre_lnorm() ? layer_norm_fp32(layer_norm, h) : h);
    const int64_t end = cache->kv.size(0) - cache->tail;
    return heads(
        proj.narrow(2, 0, inner),
        torch::cat(
            {cache->kv.narrow(0, end - mlen, mlen),
             proj.narrow(2, inner, 2 * inner)}));
  }
  auto cat = mlen > 0 ? torch::cat({mem, h}, 0) : h;
  if (o.pre_lnorm()) {
    cat = layer_norm_fp32(layer_norm, cat);
  }
  const auto proj = qkv_net->forward(cat);
  return heads(
      proj.narrow(0, mlen, qlen).narrow(2, 0, inner),
      proj.narrow(2, inner, 2 * inner));
}

torch::Tensor project_positions(
    AttentionCache* cache,
    const torch::Tensor& r,
    const std::function<torch::Tensor()>& project) {
  if (cache != nullptr && cache->rk.defined() && cache->r_sizes == r.sizes()) {
    return cache->rk;
  }
  auto rk = project();
  if (cache != nullptr) {
    cache->rk = rk;
    cache->r_sizes = r.sizes().vec();
  }
  return rk;
}

torch::Tensor attend(
    const AttentionOptions& o,
    torch::nn::Dropout& dropatt,
    const torch::Tensor& scores,
    const torch::Tensor& mask,
    const torch::Tensor& v) {
  const auto scaled =
      scores.mul(1.0 / std::sqrt(static_cast<double>(o.d_head())));
  auto logits = scaled.to(torch::kFloat);
  if (mask.defined()) {
    // A finite floor (the reference implementations' -1e30) rather than -inf: identical
    // wherever a row keeps a key, and a row that keeps none attends uniformly instead of NaN.
    logits = logits.masked_fill(mask, -1e30);
  }
  auto probs = torch::softmax(logits, -1).to(v.scalar_type());
  probs = dropatt->forward(probs);
  const auto out = torch::matmul(probs, v); // [B, H, L, Dh]
  return out.permute({2, 0, 1, 3})
      .reshape({out.size(2), out.size(0), o.n_head() * o.d_head()});
}

torch::Tensor finish(
    const AttentionOptions& o,
    torch::nn::Linear& o_net,
    torch::nn::Dropout& drop,
    torch::nn::LayerNorm& layer_norm,
    const torch::Tensor& h,
    const torch::Tensor& attn_vec) {
  const auto out = drop->forward(o_net->forward(attn_vec));
  return o.pre_lnorm() ? h + out : layer_norm_fp32(layer_norm, h + out);
}

} // namespace xl::nn
