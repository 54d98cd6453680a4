#include "xl/nn/attention.h"

#include <cmath>

namespace xl::nn {

namespace {

struct Heads {
  torch::Tensor q; // [B, H, L, Dh]
  torch::Tensor k; // [B, H, S, Dh]
  torch::Tensor v; // [B, H, S, Dh]
};

void check_inputs(
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

// q from the segment, k and v from [memory | segment]; pre-LN normalises the
// keys' source.
Heads project(
    const AttentionOptions& o,
    torch::nn::Linear& qkv_net,
    torch::nn::LayerNorm& layer_norm,
    const torch::Tensor& h,
    const torch::Tensor& mem) {
  const int64_t qlen = h.size(0);
  const int64_t bsz = h.size(1);
  auto cat = mem.defined() && mem.size(0) > 0 ? torch::cat({mem, h}, 0) : h;
  if (o.pre_lnorm()) {
    cat = layer_norm(cat);
  }
  const int64_t klen = cat.size(0);
  auto heads = qkv_net(cat).chunk(3, -1);
  const auto split = [&](const torch::Tensor& x, int64_t len) {
    return x.reshape({len, bsz, o.n_head(), o.d_head()}).permute({1, 2, 0, 3});
  };
  return Heads{
      split(heads[0].narrow(0, klen - qlen, qlen), qlen),
      split(heads[1], klen),
      split(heads[2], klen)};
}

// scores [B, H, L, S] (unscaled) -> attention output [L, B, H*Dh]
torch::Tensor attend(
    const AttentionOptions& o,
    torch::nn::Dropout& dropatt,
    torch::Tensor scores,
    const torch::Tensor& mask,
    const torch::Tensor& v) {
  scores = scores.mul(1.0 / std::sqrt(static_cast<double>(o.d_head())));
  // Softmax in float32 even under bf16 autocast: masked scores are -inf, and
  // every row keeps at least its diagonal key, so no row is all -inf.
  auto probs =
      torch::softmax(
          scores.to(torch::kFloat)
              .masked_fill(mask, -std::numeric_limits<float>::infinity()),
          -1)
          .to(v.scalar_type());
  probs = dropatt(probs);
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
  const auto out = drop(o_net(attn_vec));
  return o.pre_lnorm() ? h + out : layer_norm(h + out);
}

// The sub-modules both attention variants have: q/k/v and output projections
// (no biases), LayerNorm, output dropout and attention dropout.
template <class Impl>
void register_common(Impl& m) {
  const AttentionOptions& o = m.options;
  const int64_t inner = o.n_head() * o.d_head();
  m.qkv_net = m.register_module(
      "qkv_net",
      torch::nn::Linear(
          torch::nn::LinearOptions(o.d_model(), 3 * inner).bias(false)));
  m.o_net = m.register_module(
      "o_net",
      torch::nn::Linear(
          torch::nn::LinearOptions(inner, o.d_model()).bias(false)));
  m.layer_norm = m.register_module(
      "layer_norm",
      torch::nn::LayerNorm(
          torch::nn::LayerNormOptions({o.d_model()}).eps(o.layer_norm_eps())));
  m.drop = m.register_module("drop", torch::nn::Dropout(o.dropout()));
  m.dropatt = m.register_module("dropatt", torch::nn::Dropout(o.dropatt()));
}

} // namespace

torch::Tensor rel_shift(const torch::Tensor& x) {
  TORCH_CHECK(x.dim() == 4, "rel_shift expects [B, H, L, S], got ", x.sizes());
  const int64_t b = x.size(0), n = x.size(1), l = x.size(2), s = x.size(3);
  const auto padded = torch::cat({x.new_zeros({b, n, l, 1}), x}, 3);
  return padded.view({b, n, s + 1, l}).narrow(2, 1, s).reshape({b, n, l, s});
}

// ============================================================================
// RelPartialAttention
// ============================================================================

RelPartialAttentionImpl::RelPartialAttentionImpl(
    const AttentionOptions& options_)
    : options(options_) {
  reset();
}

void RelPartialAttentionImpl::reset() {
  register_common(*this);
  r_net = register_module(
      "r_net",
      torch::nn::Linear(
          torch::nn::LinearOptions(
              options.d_model(), options.n_head() * options.d_head())
              .bias(false)));
}

torch::Tensor RelPartialAttentionImpl::forward(
    const torch::Tensor& h,
    const torch::Tensor& r,
    const torch::Tensor& u,
    const torch::Tensor& v,
    const torch::Tensor& mask,
    const torch::Tensor& mem) {
  check_inputs(options, h, mask, mem);
  const int64_t klen = mask.size(1);
  TORCH_CHECK(
      r.dim() == 2 && r.size(0) == klen && r.size(1) == options.d_model(),
      "position embeddings must be [",
      klen,
      ", ",
      options.d_model(),
      "], got ",
      r.sizes());
  const Heads heads = project(options, qkv_net, layer_norm, h, mem);
  // [S, H*Dh] -> [H, Dh, S]
  const auto rk = r_net(r)
                      .view({klen, options.n_head(), options.d_head()})
                      .permute({1, 2, 0});
  const auto ac =
      torch::matmul(heads.q + u.unsqueeze(1), heads.k.transpose(2, 3));
  const auto bd = rel_shift(torch::matmul(heads.q + v.unsqueeze(1), rk));
  const auto attn_vec = attend(options, dropatt, ac + bd, mask, heads.v);
  return finish(options, o_net, drop, layer_norm, h, attn_vec);
}

// ============================================================================
// VanillaAttention
// ============================================================================

VanillaAttentionImpl::VanillaAttentionImpl(const AttentionOptions& options_)
    : options(options_) {
  reset();
}

void VanillaAttentionImpl::reset() {
  register_common(*this);
}

torch::Tensor VanillaAttentionImpl::forward(
    const torch::Tensor& h,
    const torch::Tensor& mask,
    const torch::Tensor& mem) {
  check_inputs(options, h, mask, mem);
  const Heads heads = project(options, qkv_net, layer_norm, h, mem);
  const auto scores = torch::matmul(heads.q, heads.k.transpose(2, 3));
  const auto attn_vec = attend(options, dropatt, scores, mask, heads.v);
  return finish(options, o_net, drop, layer_norm, h, attn_vec);
}

} // namespace xl::nn
