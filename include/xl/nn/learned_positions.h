// Learned absolute positions (Al-Rfou et al. 2018): a table of n_ctx rows per layer (or one
// table for the input), added to a layer's input. The character transformer reads rows 0..L-1
// of its windows; Transformer-XL's absolute-position ablation (kimiyoung's attn_type 3) reads
// the rows of its [memory | segment] keys, counted back from the table's end.
#pragma once

#include <torch/torch.h>

#include "xl/nn/init.h"

namespace xl::nn {

struct LearnedPositionsOptions {
  LearnedPositionsOptions(int64_t n_table, int64_t n_ctx, int64_t d_model)
      : n_table_(n_table), n_ctx_(n_ctx), d_model_(d_model) {}
  /// tables: one per layer, or 1
  TORCH_ARG(int64_t, n_table);
  /// rows per table: the longest span of positions
  TORCH_ARG(int64_t, n_ctx);
  TORCH_ARG(int64_t, d_model);
};

class LearnedPositionsImpl : public torch::nn::Cloneable<LearnedPositionsImpl> {
 public:
  explicit LearnedPositionsImpl(const LearnedPositionsOptions& options);
  void reset() override;
  void reset_parameters(const InitOptions& init);

  /// Rows [first, first + len) of table `index` -> [len, 1, D], to add to an input [len, B, D].
  torch::Tensor forward(int64_t index, int64_t first, int64_t len);

  LearnedPositionsOptions options;
  /// [n_table, n_ctx, D]
  torch::Tensor table;
};
TORCH_MODULE(LearnedPositions);

} // namespace xl::nn
