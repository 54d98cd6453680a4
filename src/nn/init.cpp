#include "xl/nn/init.h"

namespace xl::nn {

void InitOptions::weight(const torch::Tensor& t) const {
  torch::NoGradGuard no_grad;
  if (uniform()) {
    t.uniform_(-range(), range());
  } else {
    t.normal_(0.0, normal_std());
  }
}

void InitOptions::projection(const torch::Tensor& t) const {
  torch::NoGradGuard no_grad;
  t.normal_(0.0, proj_std());
}

void InitOptions::linear(const torch::nn::Linear& linear) const {
  torch::NoGradGuard no_grad;
  weight(linear->weight);
  if (linear->bias.defined()) {
    linear->bias.zero_();
  }
}

void InitOptions::layer_norm(const torch::nn::LayerNorm& layer_norm) const {
  torch::NoGradGuard no_grad;
  if (unit_layer_norm()) {
    layer_norm->weight.fill_(1.0);
  } else {
    layer_norm->weight.normal_(1.0, normal_std());
  }
  layer_norm->bias.zero_();
}

} // namespace xl::nn
