#include "xl/models/char_transformer/aux_schedule.h"

#include <c10/util/Exception.h>

namespace xl::models {

std::vector<double> layer_weights(const LayerSchedule& s, int64_t step) {
  TORCH_CHECK(
      s.n_layer >= 1 && s.max_step >= 1 && step >= 1,
      "layer schedule: need n_layer, max_step and step >= 1, got ",
      s.n_layer,
      ", ",
      s.max_step,
      ", ",
      step);
  const int64_t n = s.n_layer;
  const int64_t done = step - 1;
  std::vector<double> weights(static_cast<size_t>(n), 0.0);
  weights.back() = 1.0;
  int64_t active = 1;
  for (int64_t l = 1; s.intermediate && l < n; ++l) {
    // done / max_step < l / (2n), in integers: exact at the boundaries.
    if (done * 2 * n >= l * s.max_step) {
      continue;
    }
    double& w = weights[static_cast<size_t>(l - 1)];
    w = s.decay == LayerDecay::kStep
        ? 1.0
        : 1.0 - static_cast<double>(done * 2 * n) / static_cast<double>(l * s.max_step);
    ++active;
  }
  if (s.mean) {
    for (double& w : weights) {
      w /= static_cast<double>(active);
    }
  }
  return weights;
}

} // namespace xl::models
