#include "xl/nn/two_stream_attention.h"
#include "xl/runtime/autocast.h"

namespace xl::nn {

torch::Tensor xlnet_rel_shift(
    const torch::Tensor& x,
    const torch::Tensor& positions,
    int64_t klen) {
  TORCH_CHECK(
      x.dim() == 4 && x.size(3) > klen,
      "xlnet_rel_shift expects [B, H, Q, R > ",
      klen,
      "], got ",
      x.sizes());
  TORCH_CHECK(
      positions.dim() == 2 && positions.size(1) == x.size(2),
      "positions must be [B or 1, ",
      x.size(2),
      "], got ",
      positions.sizes());
  const int64_t qlen = x.size(3) - klen;
  // column of (query q, key j) = j + L - p
  const auto columns =
      torch::arange(klen, positions.options()).view({1, 1, klen}) + (qlen - positions).unsqueeze(2);
  return x.gather(3, columns.unsqueeze(1).expand({x.size(0), x.size(1), x.size(2), klen}));
}

TwoStreamAttentionImpl::TwoStreamAttentionImpl(const AttentionOptions& options_)
    : options(options_) {
  reset();
}

void TwoStreamAttentionImpl::reset() {
  TORCH_CHECK(!options.pre_lnorm(), "XLNet's attention is post-LN; pre_lnorm is unset");
  register_attention_modules(*this);
  r_net = register_module("r_net", position_projection(options));
  seg_embed =
      register_parameter("seg_embed", torch::empty({2, options.n_head(), options.d_head()}));
}

void TwoStreamAttentionImpl::reset_parameters(const InitOptions& init) {
  reset_attention_parameters(*this, init);
  init.linear(r_net);
  init.weight(seg_embed);
}

torch::Tensor TwoStreamAttentionImpl::attend_stream(
    const torch::Tensor& q,
    const StreamQueries& queries,
    const TwoStreamTerms& terms,
    const torch::Tensor& k_r,
    const Heads& heads) {
  const int64_t klen = heads.k.size(2);
  const auto query = [&](const torch::Tensor& bias) { return biased_query(options, q, bias); };
  const auto ac = torch::matmul(query(terms.r_w_bias), heads.k.transpose(2, 3)); // [B, H, Q, K]
  const auto q_r = query(terms.r_r_bias);
  const auto bd = xlnet_rel_shift(
      k_r.size(0) == 1 ? position_scores(q_r, k_r[0].transpose(1, 2))
                       : torch::matmul(q_r, k_r.transpose(2, 3)),
      queries.positions,
      klen);
  auto scores = ac + bd;
  if (queries.other_segment.defined()) {
    // [B, H, Q, 2]: the score of "same segment" and of "other segment" for each query
    const auto ef = torch::matmul(query(terms.r_s_bias), seg_embed.permute({1, 2, 0}));
    scores = scores + torch::where(queries.other_segment, ef.narrow(3, 1, 1), ef.narrow(3, 0, 1));
  }
  return attend(options, dropatt, scores, queries.mask, heads.v);
}

std::pair<torch::Tensor, torch::Tensor> TwoStreamAttentionImpl::forward(
    const torch::Tensor& h,
    const torch::Tensor& g,
    const TwoStreamTerms& terms,
    const torch::Tensor& mem,
    AttentionCache* cache) {
  TORCH_CHECK(
      h.dim() == 3 && h.size(2) == options.d_model(),
      "content stream must be [L, B, ",
      options.d_model(),
      "], got ",
      h.sizes());
  const int64_t bsz = h.size(1);
  const int64_t inner = options.n_head() * options.d_head();
  const auto& r = terms.r;
  const int64_t klen = h.size(0) + (mem.defined() ? mem.size(0) : 0);
  TORCH_CHECK(
      r.dim() == 3 && r.size(1) == klen + h.size(0) && r.size(2) == options.d_model() &&
          (r.size(0) == 1) == !terms.direction.defined(),
      "position embeddings must be [1 or 2 (with directions), ",
      klen + h.size(0),
      ", ",
      options.d_model(),
      "], got ",
      r.sizes());
  const Heads heads = project_qkv(options, qkv_net, layer_norm, h, mem, cache);
  // [G, R, H*Dh] -> [G, H, R, Dh], then each row's direction: [B or 1, H, R, Dh]
  auto k_r = project_positions(cache, r, [&] {
    return runtime::linear(*r_net, r)
        .view({r.size(0), r.size(1), options.n_head(), options.d_head()})
        .transpose(1, 2);
  });
  if (terms.direction.defined()) {
    k_r = k_r.index_select(0, terms.direction);
  }
  const auto h_vec = attend_stream(heads.q, terms.content, terms, k_r, heads);
  const auto h_out = finish(options, o_net, drop, layer_norm, h, h_vec);
  if (!g.defined()) {
    return {h_out, torch::Tensor()};
  }
  TORCH_CHECK(
      g.dim() == 3 && g.size(1) == bsz && g.size(2) == options.d_model(),
      "query stream must be [P, ",
      bsz,
      ", ",
      options.d_model(),
      "], got ",
      g.sizes());
  // The query stream's queries go through the same q projection (the first rows of qkv_net).
  const auto q_g = split_heads(
      torch::nn::functional::linear(
          g, runtime::product_weight(qkv_net->weight, g.device().type()).narrow(0, 0, inner)),
      options.n_head(),
      options.d_head());
  const auto g_vec = attend_stream(q_g, terms.query, terms, k_r, heads) * terms.query_valid;
  return {h_out, finish(options, o_net, drop, layer_norm, g, g_vec)};
}

} // namespace xl::nn
