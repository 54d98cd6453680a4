#include "xl/models/transformer_xl/flops.h"

#include <fmt/format.h>

#include "xl/models/transformer_xl/config.h"
#include "xl/util/error.h"

namespace xl::models {

namespace {

std::vector<int64_t> bin_bounds(const TransformerXLConfig& x, int64_t n_token) {
  std::vector<int64_t> bounds{0};
  bounds.insert(bounds.end(), x.cutoffs.begin(), x.cutoffs.end());
  bounds.push_back(n_token);
  return bounds;
}

// FLOPs of one forward pass per token of a segment of q new tokens attending to k positions;
// `memory_projections`: the memory's keys, values and (relative attention) positions are
// projected again, as every training step and an evaluation without kept projections do.
double forward_flops_per_token(
    const config::Config& c,
    int64_t n_token,
    const std::vector<double>& bin_share,
    double q,
    double k,
    bool memory_projections) {
  const auto& m = c.model;
  const auto& x = m.section<TransformerXLConfig>();
  const auto bounds = bin_bounds(x, n_token);
  const size_t bins = bounds.size() - 1;
  if (bin_share.size() != bins) {
    throw UserError(fmt::format("FLOP count: {} bin shares for {} bins", bin_share.size(), bins));
  }
  const auto d = static_cast<double>(m.d_model);
  const auto inner = static_cast<double>(m.d_inner);
  const auto a = static_cast<double>(m.n_head * m.d_head);
  const bool relative = x.attn_type == AttnType::kRelative;
  // Per token of the segment: its query, key and value, scores, the weighted sum, the output
  // projection and the feed-forward network; relative attention adds the BD term.
  double layer = 2 * d * a * 3 + 2 * 2 * k * a + 2 * a * d + 2 * 2 * d * inner;
  if (relative) {
    layer += 2 * k * a;
  }
  if (memory_projections) { // keys and values of the memory, positions of all k
    layer += 2 * d * 2 * a * (k - q) / q + (relative ? 2 * d * a * k / q : 0.0);
  }
  // Adaptive input and softmax: bin i has size d_embed / div_val^i and a projection when that
  // differs from d_model or div_val > 1. The head scores its words and one logit per cluster;
  // a target in tail bin i adds that bin's logits.
  const double d_embed = static_cast<double>(x.d_embed.value_or(m.d_model));
  double io = 0;
  double d_i = d_embed;
  for (size_t i = 0; i < bins; ++i) {
    const bool proj = x.div_val > 1 || d_i != d;
    const double words = static_cast<double>(bounds[i + 1] - bounds[i]) +
        (i == 0 ? static_cast<double>(bins - 1) : 0.0);
    const double logits = 2 * d_i * words + (proj ? 2 * d * d_i : 0.0);
    io += (i == 0 ? 1.0 : bin_share[i]) * logits;
    // The embedding's projection, for the inputs in this bin.
    io += proj ? bin_share[i] * 2 * d * d_i : 0.0;
    d_i /= static_cast<double>(x.div_val);
  }
  return static_cast<double>(m.n_layer) * layer + io;
}

} // namespace

std::vector<double> uniform_bin_share(const config::Config& c, int64_t n_token) {
  const auto bounds = bin_bounds(c.model.section<TransformerXLConfig>(), n_token);
  std::vector<double> share;
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    share.push_back(static_cast<double>(bounds[i + 1] - bounds[i]) / static_cast<double>(n_token));
  }
  return share;
}

double training_flops_per_token(
    const config::Config& c,
    int64_t n_token,
    const std::vector<double>& bin_share) {
  const auto q = static_cast<double>(c.train.tgt_len);
  const auto k = q + static_cast<double>(c.model.section<TransformerXLConfig>().mem_len);
  return 3 * forward_flops_per_token(c, n_token, bin_share, q, k, true);
}

double evaluation_flops_per_token(
    const config::Config& c,
    int64_t n_token,
    const std::vector<double>& bin_share,
    int64_t tgt_len,
    int64_t mem_len,
    bool projections_kept) {
  const auto q = static_cast<double>(tgt_len);
  return forward_flops_per_token(
      c, n_token, bin_share, q, q + static_cast<double>(mem_len), !projections_kept);
}

} // namespace xl::models
