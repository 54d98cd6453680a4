// Parameter initialisation, as Transformer-XL's reference code does it (kimiyoung's
// `weights_init`, Hugging Face's `_init_weights`): weights normal(0, std) or uniform(-range,
// range), projections of the adaptive embedding and softmax normal(0, proj_std), LayerNorm gains
// normal(1, std), biases 0. Each module applies the rules to its own parameters in
// reset_parameters(const InitOptions&), in registration order.
#pragma once

#include <torch/torch.h>

namespace xl::nn {

struct InitOptions {
  /// uniform(-range, range) instead of normal(0, normal_std) for weights
  TORCH_ARG(bool, uniform) = false;
  TORCH_ARG(double, range) = 0.1;
  TORCH_ARG(double, normal_std) = 0.02;
  /// std of the adaptive embedding's and softmax's projections
  TORCH_ARG(double, proj_std) = 0.01;
  /// LayerNorm gains exactly 1 (XLNet, BERT) instead of normal(1, normal_std) (Transformer-XL)
  TORCH_ARG(bool, unit_layer_norm) = false;

 public:
  /// A weight matrix, embedding table or bias vector that is not an additive bias (u, v).
  void weight(const torch::Tensor& t) const;
  /// A projection of the adaptive embedding or softmax.
  void projection(const torch::Tensor& t) const;
  /// Weight by the main rule, bias (if any) 0.
  void linear(const torch::nn::Linear& linear) const;
  /// Gain normal(1, normal_std) or 1, bias 0.
  void layer_norm(const torch::nn::LayerNorm& layer_norm) const;
};

} // namespace xl::nn
