#include "xl/models/xlnet/stream_terms.h"

namespace xl::models {

namespace {

// Keys the query stream may not see, [B, 1, L, K] (undefined: all visible): padding and the
// permutation's future; the memory is always visible.
torch::Tensor hidden_keys(const sources::Batch& batch, int64_t mlen) {
  const auto& tokens = batch.tokens;
  const int64_t qlen = tokens.size(0);
  const int64_t bsz = tokens.size(1);
  const int64_t klen = mlen + qlen;
  const auto bool_options = torch::dtype(torch::kBool).device(tokens.device());
  torch::Tensor hidden;
  if (batch.padding.defined()) {
    TORCH_CHECK(
        batch.padding.sizes() == tokens.sizes(),
        "padding must be [L, B] like tokens ",
        tokens.sizes(),
        ", got ",
        batch.padding.sizes());
    hidden =
        torch::cat({torch::zeros({bsz, mlen}, bool_options), batch.padding.t().to(torch::kBool)}, 1)
            .view({bsz, 1, 1, klen})
            .expand({bsz, 1, qlen, klen});
  }
  if (batch.perm_mask.defined()) {
    const auto& perm = batch.perm_mask;
    TORCH_CHECK(
        perm.dim() == 3 && perm.size(0) == qlen && perm.size(1) == qlen && perm.size(2) == bsz,
        "perm_mask must be [",
        qlen,
        ", ",
        qlen,
        ", ",
        bsz,
        "], got ",
        perm.sizes());
    const auto future = torch::cat(
                            {torch::zeros({bsz, qlen, mlen}, bool_options),
                             perm.permute({2, 0, 1}).to(torch::kBool)},
                            2)
                            .unsqueeze(1);
    hidden = hidden.defined() ? hidden.logical_or(future) : future;
  }
  return hidden;
}

// Whether query i and key j are in different segments, [B, 1, L, K] (undefined without
// segment ids). The memory counts as segment 0; only equality matters.
torch::Tensor other_segment(const sources::Batch& batch, int64_t mlen) {
  const auto& seg = batch.segment_ids;
  if (!seg.defined()) {
    return {};
  }
  TORCH_CHECK(
      seg.sizes() == batch.tokens.sizes(),
      "segment_ids must be [L, B] like tokens ",
      batch.tokens.sizes(),
      ", got ",
      seg.sizes());
  const auto keys = torch::cat({torch::zeros({mlen, seg.size(1)}, seg.options()), seg});
  return (seg.t().unsqueeze(2) != keys.t().unsqueeze(1)).unsqueeze(1);
}

// The query stream's positions, validity and masks: the rows of the content stream's that
// target_mapping selects. One-hot rows give the prediction's input position; all-zero rows are
// padding, which read position 0 and are zeroed by query_valid.
void add_query_terms(
    const sources::Batch& batch,
    int64_t klen,
    const torch::Tensor& hidden,
    nn::TwoStreamTerms& terms) {
  const auto& mapping = batch.target_mapping;
  const int64_t qlen = batch.tokens.size(0);
  const int64_t bsz = batch.tokens.size(1);
  TORCH_CHECK(
      mapping.dim() == 3 && mapping.size(1) == qlen && mapping.size(2) == bsz,
      "target_mapping must be [P, ",
      qlen,
      ", ",
      bsz,
      "], got ",
      mapping.sizes());
  const int64_t n_predict = mapping.size(0);
  terms.query.positions = mapping.argmax(1).t().contiguous(); // [B, P]
  const auto valid = mapping.sum(1);                          // [P, B]
  terms.query_valid = valid.unsqueeze(2);
  const auto rows =
      terms.query.positions.view({bsz, 1, n_predict, 1}).expand({bsz, 1, n_predict, klen});
  if (hidden.defined()) {
    terms.query.mask = hidden.gather(2, rows);
  }
  if (terms.content.other_segment.defined()) {
    terms.query.other_segment = terms.content.other_segment.gather(2, rows);
  }
}

// Calls `f(name, tensor)` on each tensor of `terms` that every layer reads alike.
template <class Terms, class F>
void each_term(Terms& t, F f) {
  f("r", t.r);
  f("direction", t.direction);
  f("content.positions", t.content.positions);
  f("content.mask", t.content.mask);
  f("content.other_segment", t.content.other_segment);
  f("query.positions", t.query.positions);
  f("query.mask", t.query.mask);
  f("query.other_segment", t.query.other_segment);
  f("query_valid", t.query_valid);
}

} // namespace

void add_stream_queries(const sources::Batch& batch, int64_t mlen, nn::TwoStreamTerms& terms) {
  const auto& tokens = batch.tokens;
  const int64_t qlen = tokens.size(0);
  const int64_t klen = mlen + qlen;
  const torch::Tensor hidden = hidden_keys(batch, mlen);
  terms.content.positions =
      torch::arange(qlen, torch::dtype(torch::kLong).device(tokens.device())).unsqueeze(0);
  if (hidden.defined()) {
    // The content stream sees its own position, whatever the permutation says.
    const auto self = torch::arange(klen, tokens.options()).unsqueeze(0) ==
        torch::arange(qlen, tokens.options()).unsqueeze(1) + mlen;
    terms.content.mask = hidden.logical_and(self.logical_not());
  }
  terms.content.other_segment = other_segment(batch, mlen);
  if (batch.target_mapping.defined()) {
    add_query_terms(batch, klen, hidden, terms);
  }
}

CallTensors call_tensors(const nn::TwoStreamTerms& terms) {
  std::vector<std::string> names;
  std::vector<torch::Tensor> tensors;
  each_term(terms, [&](const char* name, const torch::Tensor& t) {
    names.emplace_back(name);
    tensors.push_back(t);
  });
  return {std::move(names), std::move(tensors)};
}

nn::TwoStreamTerms terms_of(const CallTensors& tensors) {
  nn::TwoStreamTerms terms;
  each_term(terms, [&](const char* name, torch::Tensor& t) { t = tensors[name]; });
  return terms;
}

} // namespace xl::models
