// The float32 islands of a bf16-autocast forward that autocast does not make on every device:
// CUDA's autocast runs LayerNorm in float32, the CPU's runs it in its input's dtype. Casting
// here makes both devices compute alike (a no-op outside autocast, where inputs are float32).
// Softmax and log-softmax are cast where they are computed (attend, the output layers).
#pragma once

#include <torch/nn/modules/normalization.h>

namespace xl::nn {

/// `layer_norm` of `x` in float32: [..., d] -> [..., d] float32.
inline torch::Tensor layer_norm_fp32(torch::nn::LayerNorm& layer_norm, const torch::Tensor& x) {
  return layer_norm->forward(x.to(torch::kFloat));
}

} // namespace xl::nn
