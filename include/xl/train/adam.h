// Adam and AdamW (train.optim: adam, adamw), as LibTorch's, per parameter p of a group with rate
// factor s and decay wd, at step t from 1:
//   Adam:  g = grad + wd p                   AdamW:  g = grad,  p -= lr s wd p
//   m = b1 m + (1 - b1) g,   v = b2 v + (1 - b2) g^2,
//   p -= lr s (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps).
// AdamW keeps LibTorch's AdamW state (its own type in a checkpoint), Adam its Adam state.
#pragma once

#include <memory>
#include <vector>

#include "xl/train/optimizer.h"
#include "xl/train/parameter_groups.h"

namespace xl::train {

struct AdamSettings {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  /// AdamW: the weight decay decoupled from the gradient
  bool decoupled = false;
  /// train.fused_optim: every parameter of a group in one update (a CPU kernel or LibTorch's
  /// fused kernel), the step counts on the device so that step_unless waits for nothing
  bool fused = false;
};

/// Adam, or AdamW with settings.decoupled, over `groups`.
std::unique_ptr<Optimizer> make_adam(
    const std::vector<ParameterGroup>& groups,
    const AdamSettings& settings);

} // namespace xl::train
