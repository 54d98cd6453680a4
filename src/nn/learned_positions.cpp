#include "xl/nn/learned_positions.h"

namespace xl::nn {

LearnedPositionsImpl::LearnedPositionsImpl(const LearnedPositionsOptions& options_)
    : options(options_) {
  reset();
}

void LearnedPositionsImpl::reset() {
  TORCH_CHECK(
      options.n_table() >= 1 && options.n_ctx() >= 1 && options.d_model() >= 1,
      "position tables need n_table, n_ctx and d_model >= 1, got ",
      options.n_table(),
      ", ",
      options.n_ctx(),
      ", ",
      options.d_model());
  table = register_parameter(
      "table", torch::empty({options.n_table(), options.n_ctx(), options.d_model()}));
}

void LearnedPositionsImpl::reset_parameters(const InitOptions& init) {
  torch::NoGradGuard no_grad;
  init.weight(table);
}

torch::Tensor LearnedPositionsImpl::forward(int64_t index, int64_t first, int64_t len) {
  TORCH_CHECK(
      index >= 0 && index < options.n_table(), "position table ", index, " of ", options.n_table());
  TORCH_CHECK(
      first >= 0 && len >= 0 && first + len <= options.n_ctx(),
      "positions ",
      first,
      "..",
      first + len - 1,
      " (a span of ",
      len,
      ") do not fit the position tables of n_ctx ",
      options.n_ctx(),
      " rows");
  return table[index].narrow(0, first, len).unsqueeze(1);
}

} // namespace xl::nn
