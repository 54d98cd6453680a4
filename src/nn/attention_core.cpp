#include "xl/nn/attention_core.h"

#include <cmath>

#include "xl/nn/fp32_islands.h"
#include "xl/runtime/autocast.h"

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
      mask.dim() == 2 && mask.size(0) == h.size(0) && mask.size(1) == mlen + h.size(0),
      "mask must be [",
      h.size(0),
      ", ",
      mlen + h.size(0),
      "], got ",
      mask.sizes());
}

torch::Tensor split_heads(const torch::Tensor& x, int64_t n_head, int64_t d_head) {
  return x.reshape({x.size(0), x.size(1), n_head, d_head}).permute({1, 2, 0, 3});
}

namespace {

// Keeps the `keep` rows of the cache that end `tail` rows before its last, followed by the keys
// and values `kv` [L, B, 2 H Dh] of a segment, head-major. The segment's rows are written once,
// after the kept ones, so that the kept rows move once every few calls rather than every call.
void append_rows(
    AttentionCache& cache,
    const torch::Tensor& kv,
    int64_t keep,
    int64_t n_head,
    int64_t d_head) {
  const int64_t len = kv.size(0), bsz = kv.size(1);
  const auto heads =
      kv.reshape({len, bsz, 2, n_head, d_head}).permute({2, 1, 3, 0, 4}); // [2, B, H, L, Dh]
  int64_t begin = keep > 0 ? cache.start + cache.k.size(2) - cache.tail - keep : 0;
  const int64_t rows = keep + len;
  if (!cache.buffer.defined() || 3 * rows > 2 * cache.buffer.size(3)) {
    // Twice the rows: new buffers (new pages) only while the memory grows.
    auto buffer = torch::empty({2, bsz, n_head, 2 * rows, d_head}, kv.options());
    if (keep > 0) {
      buffer.narrow(3, 0, keep).copy_(cache.buffer.narrow(3, begin, keep));
    }
    cache.buffer = buffer;
    begin = 0;
  } else if (begin + rows > cache.buffer.size(3)) {
    // At least a third of the buffer is free: the kept rows move to its start once every
    // (capacity - rows) / L calls, through a copy (the ranges overlap).
    cache.buffer.narrow(3, 0, keep).copy_(cache.buffer.narrow(3, begin, keep).clone());
    begin = 0;
  }
  cache.buffer.narrow(3, begin + keep, len).copy_(heads);
  cache.start = begin;
  const auto kept = cache.buffer.narrow(3, begin, keep + len);
  cache.k = kept[0];
  cache.v = kept[1];
}

} // namespace

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
  TORCH_CHECK(
      cache == nullptr || !torch::GradMode::is_enabled(),
      "a projection cache is for evaluation and generation, without gradients");
  // Each row is projected on its own (LayerNorm and Linear are row-wise), so with a cache
  // whose rows end with the memory's, only the segment is projected.
  const bool cached = cache != nullptr && mlen > 0 && cache->k.defined() &&
      cache->k.size(2) >= cache->tail + mlen && cache->k.size(0) == h.size(1);
  auto source = cached || mlen == 0 ? h : torch::cat({mem, h}, 0);
  if (o.pre_lnorm()) {
    source = layer_norm_fp32(layer_norm, source);
  }
  const auto proj = runtime::linear(*qkv_net, source);
  const auto q = split_heads(
      proj.narrow(0, proj.size(0) - qlen, qlen).narrow(2, 0, inner), o.n_head(), o.d_head());
  if (cache == nullptr) {
    return Heads{
        q,
        split_heads(proj.narrow(2, inner, inner), o.n_head(), o.d_head()),
        split_heads(proj.narrow(2, 2 * inner, inner), o.n_head(), o.d_head())};
  }
  if (!cached) {
    cache->buffer = torch::Tensor();
  }
  append_rows(*cache, proj.narrow(2, inner, 2 * inner), cached ? mlen : 0, o.n_head(), o.d_head());
  return Heads{q, cache->k, cache->v};
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

torch::Tensor position_scores(const torch::Tensor& q, const torch::Tensor& rk) {
  const int64_t bsz = q.size(0), n_head = q.size(1), qlen = q.size(2);
  TORCH_CHECK(
      rk.dim() == 3 && rk.size(0) == n_head && rk.size(1) == q.size(3),
      "position keys must be [",
      n_head,
      ", ",
      q.size(3),
      ", S], got ",
      rk.sizes());
  return torch::matmul(q.transpose(0, 1).reshape({n_head, bsz * qlen, q.size(3)}), rk)
      .view({n_head, bsz, qlen, rk.size(2)})
      .transpose(0, 1);
}

torch::Tensor attend(
    const AttentionOptions& o,
    Dropout& dropatt,
    const torch::Tensor& scores,
    const torch::Tensor& mask,
    const torch::Tensor& v) {
  auto logits = scores.to(torch::kFloat); // float32 scores: themselves, masked in place
  if (mask.defined()) {
    // A finite floor (the reference implementations' -1e30) rather than -inf: identical
    // wherever a row keeps a key, and a row that keeps none attends uniformly instead of NaN.
    // Added rather than filled in (a vectorised pass; a score plus -1e30 rounds to -1e30), with
    // the floor made once for the batch and the heads.
    logits.add_(torch::zeros(mask.sizes(), logits.options()).masked_fill_(mask, -1e30));
  }
  auto probs = torch::softmax(logits, -1).to(v.scalar_type());
  probs = dropatt->forward(probs);
  const auto out = torch::matmul(probs, v); // [B, H, L, Dh]
  return out.permute({2, 0, 1, 3}).reshape({out.size(2), out.size(0), o.n_head() * o.d_head()});
}

torch::Tensor finish(
    const AttentionOptions& o,
    torch::nn::Linear& o_net,
    Dropout& drop,
    torch::nn::LayerNorm& layer_norm,
    const torch::Tensor& h,
    const torch::Tensor& attn_vec) {
  const auto out = drop->forward(runtime::linear(*o_net, attn_vec));
  return o.pre_lnorm() ? h + out : layer_norm_fp32(layer_norm, h + out);
}

} // namespace xl::nn
