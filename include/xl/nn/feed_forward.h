// Position-wise feed-forward: Linear(D, Di) -> activation -> Dropout (inner_dropout) ->
// Linear(Di, D) -> Dropout,
// with the residual and LayerNorm after (post-LN) or LayerNorm on the input (pre-LN).
#pragma once

#include <torch/torch.h>

#include <optional>

#include "xl/nn/dropout.h"
#include "xl/nn/init.h"

namespace xl::nn {

/// ReLU (Transformer-XL, XLNet's TF default), exact erf GELU (Hugging Face's "gelu"), or its tanh
/// approximation (XLNet's TF "gelu", Hugging Face's "gelu_new").
enum class Activation { kRelu, kGelu, kGeluTanh };

struct FeedForwardOptions {
  FeedForwardOptions(int64_t d_model, int64_t d_inner) : d_model_(d_model), d_inner_(d_inner) {}
  TORCH_ARG(int64_t, d_model);
  TORCH_ARG(int64_t, d_inner);
  TORCH_ARG(double, dropout) = 0.0;
  /// after the activation (tensor2tensor's relu_dropout); unset: `dropout`
  TORCH_ARG(std::optional<double>, inner_dropout);
  TORCH_ARG(bool, pre_lnorm) = false;
  TORCH_ARG(double, layer_norm_eps) = 1e-5;
  TORCH_ARG(Activation, activation) = Activation::kRelu;
};

class FeedForwardImpl : public torch::nn::Cloneable<FeedForwardImpl> {
 public:
  explicit FeedForwardImpl(const FeedForwardOptions& options);
  void reset() override;
  void reset_parameters(const InitOptions& init);

  /// x [..., D] -> [..., D]
  torch::Tensor forward(const torch::Tensor& x);

  FeedForwardOptions options;
  torch::nn::Linear fc1{nullptr};
  torch::nn::Linear fc2{nullptr};
  torch::nn::LayerNorm layer_norm{nullptr};
  Dropout drop{nullptr};
  Dropout inner_drop{nullptr};

 private:
  torch::Tensor activate(const torch::Tensor& x) const;
};
TORCH_MODULE(FeedForward);

} // namespace xl::nn
