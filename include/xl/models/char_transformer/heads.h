// The training-time classifiers of the character transformer: one untied Linear(D, V) per
// (layer, target offset) that the auxiliary losses use, that is every layer's t+1, t+2, ... heads
// except the last layer's t+1 head (the model's own output, which inference keeps). Only
// training reads them, so the inference parameter count is the model's minus this module's.
#pragma once

#include <torch/torch.h>

#include "xl/nn/init.h"

namespace xl::models {

struct CharHeadsOptions {
  CharHeadsOptions(int64_t d_model, int64_t n_token, int64_t n_layer)
      : d_model_(d_model), n_token_(n_token), n_layer_(n_layer) {}
  TORCH_ARG(int64_t, d_model);
  TORCH_ARG(int64_t, n_token);
  TORCH_ARG(int64_t, n_layer);
  /// targets t+1 .. t+n_target per layer
  TORCH_ARG(int64_t, n_target) = 1;
  /// heads on the intermediate layers too (else the last layer's only)
  TORCH_ARG(bool, intermediate) = false;
};

class CharHeadsImpl : public torch::nn::Cloneable<CharHeadsImpl> {
 public:
  explicit CharHeadsImpl(const CharHeadsOptions& options);
  void reset() override;
  void reset_parameters(const nn::InitOptions& init);

  /// Whether layer `layer` (0-based) has a head for target t+1+`offset`.
  bool has(int64_t layer, int64_t offset) const;
  /// h [T, B, D] of layer `layer` -> logits [T, B, V] of target t+1+`offset`.
  torch::Tensor forward(int64_t layer, int64_t offset, const torch::Tensor& h);

  CharHeadsOptions options;
  /// in (layer, offset) order, the last layer's t+1 left out
  torch::nn::ModuleList heads{nullptr};

 private:
  /// index into heads, or -1
  int64_t index(int64_t layer, int64_t offset) const;
};
TORCH_MODULE(CharHeads);

} // namespace xl::models
