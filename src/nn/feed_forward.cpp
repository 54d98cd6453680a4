#include "xl/nn/feed_forward.h"

#include "xl/nn/fp32_islands.h"
#include "xl/runtime/autocast.h"

namespace xl::nn {

FeedForwardImpl::FeedForwardImpl(const FeedForwardOptions& options_) : options(options_) {
  reset();
}

void FeedForwardImpl::reset() {
  fc1 = register_module("fc1", torch::nn::Linear(options.d_model(), options.d_inner()));
  fc2 = register_module("fc2", torch::nn::Linear(options.d_inner(), options.d_model()));
  layer_norm = register_module(
      "layer_norm",
      torch::nn::LayerNorm(
          torch::nn::LayerNormOptions({options.d_model()}).eps(options.layer_norm_eps())));
  drop = register_module("drop", Dropout(options.dropout()));
  inner_drop =
      register_module("inner_drop", Dropout(options.inner_dropout().value_or(options.dropout())));
}

void FeedForwardImpl::reset_parameters(const InitOptions& init) {
  init.linear(fc1);
  init.linear(fc2);
  init.layer_norm(layer_norm);
}

torch::Tensor FeedForwardImpl::activate(const torch::Tensor& x) const {
  switch (options.activation()) {
    case Activation::kRelu:
      return torch::relu(x);
    case Activation::kGelu:
      return torch::gelu(x);
    case Activation::kGeluTanh:
      return torch::gelu(x, "tanh");
  }
  TORCH_CHECK(false, "unhandled activation");
}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x) {
  TORCH_CHECK(
      x.size(-1) == options.d_model(),
      "feed-forward input must end in ",
      options.d_model(),
      ", got ",
      x.sizes());
  const auto core = [&](const torch::Tensor& in) {
    const auto inner = activate(runtime::linear(*fc1, in));
    return drop(runtime::linear(*fc2, inner_drop(inner)));
  };
  return options.pre_lnorm() ? x + core(layer_norm_fp32(layer_norm, x))
                             : layer_norm_fp32(layer_norm, x + core(x));
}

} // namespace xl::nn
