// model.char_transformer: the keys only the character transformer of Al-Rfou et al. has
// (learned positions and the auxiliary losses), and the rules between them and the rest of the
// config. The family registers them with the config layer (family.cpp), which knows them only
// through that.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "xl/config/config.h"
#include "xl/models/char_transformer/aux_schedule.h"

namespace xl::models {

enum class PositionTables { kPerLayer, kInput };
enum class LayerReduce { kSum, kMean };

} // namespace xl::models

namespace xl::config {
// clang-format off
template <> struct Choices<models::PositionTables> {
  static constexpr std::array<Choice<models::PositionTables>, 2> all{{{models::PositionTables::kPerLayer, "per_layer"}, {models::PositionTables::kInput, "input"}}};
};
template <> struct Choices<models::LayerDecay> {
  static constexpr std::array<Choice<models::LayerDecay>, 2> all{{{models::LayerDecay::kStep, "step"}, {models::LayerDecay::kLinear, "linear"}}};
};
template <> struct Choices<models::LayerReduce> {
  static constexpr std::array<Choice<models::LayerReduce>, 2> all{{{models::LayerReduce::kSum, "sum"}, {models::LayerReduce::kMean, "mean"}}};
};
// clang-format on
} // namespace xl::config

namespace xl::models {

/// model.char_transformer: the deep character transformer of Al-Rfou et al. (T12, T64): learned
/// positions, and the auxiliary losses of its training (docs/char-transformer.md).
struct CharTransformerConfig {
  int64_t n_ctx = 512;
  PositionTables positions = PositionTables::kPerLayer;
  double relu_dropout = 0.0;
  bool multiple_positions = true;
  bool intermediate_layers = true;
  LayerDecay layer_decay = LayerDecay::kStep;
  LayerReduce layer_reduce = LayerReduce::kSum;
  std::vector<double> target_weights{1.0, 0.5};

  template <class Self, class V>
  static void fields(Self& s, V& v) {
    // clang-format off
    v("n_ctx", s.n_ctx, "rows of the learned position tables: the longest window (train.tgt_len)", config::at_least(1));
    v("positions", s.positions, "per_layer: a learned table added to every layer's input (the paper); input: one table at the input");
    v("relu_dropout", s.relu_dropout, "dropout after the feed-forward's ReLU (model.dropout: residual, model.dropatt: attention)", config::fraction());
    v("multiple_positions", s.multiple_positions, "training loss at every position of the window (false: the last only)");
    v("intermediate_layers", s.intermediate_layers, "heads on every layer; layer l of n stops at l/(2n) of train.max_step");
    v("layer_decay", s.layer_decay, "an intermediate layer's weight until it stops: step (1) or linear (1 down to 0)");
    v("layer_reduce", s.layer_reduce, "sum or mean of the active layers' losses");
    v("target_weights", s.target_weights, "weights of the t+1, t+2, ... targets in each layer's loss (one head each)", config::greater_than(0));
    // clang-format on
  }
};

/// The rules between model.char_transformer and the rest of `config` (a ConfigError naming the
/// key where one is broken).
void validate_char_transformer(const config::Config& config);

} // namespace xl::models
