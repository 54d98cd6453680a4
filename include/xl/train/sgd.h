// SGD with momentum (train.optim: sgd, train.mom), as LibTorch's SGD (dampening 0, no Nesterov),
// per parameter p of a group with rate factor s and decay wd:
//   g = grad + wd p,
//   b = g at the first step, then b = mom b + g   (no buffer when mom is 0: b = g),
//   p -= lr s b.
#pragma once

#include <memory>
#include <vector>

#include "xl/train/optimizer.h"
#include "xl/train/parameter_groups.h"

namespace xl::train {

/// SGD over `groups` at `lr` with `momentum`; `fused` (train.fused_optim): every parameter of
/// a group in one multi-tensor update, skipped on the device by step_unless.
std::unique_ptr<Optimizer> make_sgd(
    const std::vector<ParameterGroup>& groups,
    double lr,
    double momentum,
    bool fused);

} // namespace xl::train
