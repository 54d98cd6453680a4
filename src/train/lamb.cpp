#include "xl/train/lamb.h"

#include <algorithm>

namespace xl::train {

std::vector<torch::Tensor> Lamb::state_tensors() const {
  std::vector<torch::Tensor> out = exp_avg_;
  out.insert(out.end(), exp_avg_sq_.begin(), exp_avg_sq_.end());
  return out;
}

Lamb::Lamb(std::vector<ParameterGroup> groups, double lr, double beta1, double beta2, double eps)
    : lr_(lr), beta1_(beta1), beta2_(beta2), eps_(eps) {
  for (auto& group : groups) {
    for (auto& p : group.params) {
      exp_avg_.push_back(torch::zeros_like(p));
      exp_avg_sq_.push_back(torch::zeros_like(p));
      params_.push_back(std::move(p));
      lr_scale_.push_back(group.lr_scale);
      weight_decay_.push_back(group.weight_decay);
    }
  }
}

void Lamb::step() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& p = params_[i];
    if (!p.grad().defined()) {
      continue;
    }
    const auto g = p.grad();
    exp_avg_[i].mul_(beta1_).add_(g, 1.0 - beta1_);
    exp_avg_sq_[i].mul_(beta2_).addcmul_(g, g, 1.0 - beta2_);
    auto r = exp_avg_[i] / (exp_avg_sq_[i].sqrt() + eps_);
    if (weight_decay_[i] != 0.0) {
      r.add_(p, weight_decay_[i]);
    }
    const double w_norm = std::min(p.norm().item<double>(), 10.0);
    const double r_norm = r.norm().item<double>();
    const double trust = (w_norm == 0.0 || r_norm == 0.0) ? 1.0 : w_norm / (r_norm + eps_);
    p.add_(r, -lr_ * lr_scale_[i] * trust);
  }
}

void Lamb::zero_grad() {
  for (auto& p : params_) {
    if (p.grad().defined()) {
      p.grad().zero_();
    }
  }
}

void Lamb::save(torch::serialize::OutputArchive& archive) const {
  for (size_t i = 0; i < params_.size(); ++i) {
    archive.write("lamb.exp_avg." + std::to_string(i), exp_avg_[i]);
    archive.write("lamb.exp_avg_sq." + std::to_string(i), exp_avg_sq_[i]);
  }
}

void Lamb::load(torch::serialize::InputArchive& archive) {
  for (size_t i = 0; i < params_.size(); ++i) {
    archive.read("lamb.exp_avg." + std::to_string(i), exp_avg_[i]);
    archive.read("lamb.exp_avg_sq." + std::to_string(i), exp_avg_sq_[i]);
  }
}

} // namespace xl::train
