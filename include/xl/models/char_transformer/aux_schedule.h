// The intermediate-layer schedule of Al-Rfou et al.'s character transformer: "if there are n
// layers total, then the l-th intermediate layer stops contributing any losses after finishing
// l/2n of the training", so every intermediate loss is gone at half of training. A pure function
// of the step, so that it is tested at its boundaries and resumes exactly.
#pragma once

#include <cstdint>
#include <vector>

namespace xl::models {

/// An intermediate layer's weight while it contributes: 1 until it stops (the paper's reading),
/// or falling linearly from 1 to 0 at its stop ("less and less").
enum class LayerDecay { kStep, kLinear };

struct LayerSchedule {
  int64_t n_layer = 1;
  /// training steps in all (train.max_step): the horizon of the l/(2n) points
  int64_t max_step = 1;
  /// false: only the last layer has a loss
  bool intermediate = true;
  LayerDecay decay = LayerDecay::kStep;
  /// divide by the number of contributing layers (mean) instead of summing
  bool mean = false;
};

/// The weight of each layer's loss at training step `step` (1-based: step - 1 steps are done), in
/// layer order; the last layer always contributes, layer l < n (1-based) while
/// (step - 1) / max_step < l / (2n). 0: the layer contributes nothing (its heads need not run).
std::vector<double> layer_weights(const LayerSchedule& schedule, int64_t step);

} // namespace xl::models
