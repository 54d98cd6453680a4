// The LAMB optimizer of NVIDIA's Transformer-XL recipe (train.optim: lamb).
#pragma once

#include <torch/torch.h>

#include <vector>

#include "xl/train/optimizer.h"
#include "xl/train/parameter_groups.h"

namespace xl::train {

/// LAMB as NVIDIA's Transformer-XL uses it (You et al. 2019, without bias
/// correction), per parameter tensor p of a group with rate factor s and decay wd:
///   m = b1 m + (1 - b1) g,   v = b2 v + (1 - b2) g^2,
///   r = m / (sqrt(v) + eps) + wd w,
///   trust = min(|w|, 10) / (|r| + eps)   (1 when |w| or |r| is 0),
///   w -= lr s trust r.
class Lamb : public Optimizer {
 public:
  Lamb(std::vector<ParameterGroup> groups, double lr, double beta1, double beta2, double eps);
  void step() override;
  std::vector<torch::Tensor> state_tensors() const override;
  void zero_grad() override;
  void set_lr(double lr) override {
    lr_ = lr;
  }
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

 private:
  /// every group's parameters in order, with their group's factor and decay
  std::vector<torch::Tensor> params_;
  std::vector<double> lr_scale_;
  std::vector<double> weight_decay_;
  std::vector<torch::Tensor> exp_avg_;
  std::vector<torch::Tensor> exp_avg_sq_;
  double lr_, beta1_, beta2_, eps_;
};

} // namespace xl::train
