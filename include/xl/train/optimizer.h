// Optimizers and learning-rate schedules of the shared trainer.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "xl/config/schema.h"

namespace xl::train {

/// What the trainer needs from an optimizer, whichever it is.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual void step() = 0;
  virtual void zero_grad() = 0;
  virtual void set_lr(double lr) = 0;
  virtual void save(torch::serialize::OutputArchive& archive) const = 0;
  virtual void load(torch::serialize::InputArchive& archive) = 0;
  /// Every tensor of the optimizer's state (moments, momentum buffers).
  virtual std::vector<torch::Tensor> state_tensors() const = 0;
};

/// LAMB as NVIDIA's Transformer-XL uses it (You et al. 2019, without bias
/// correction):
///   m = b1 m + (1 - b1) g,   v = b2 v + (1 - b2) g^2,
///   r = m / (sqrt(v) + eps) + wd w,
///   trust = min(|w|, 10) / (|r| + eps)   (1 when |w| or |r| is 0),
///   w -= lr trust r,   per parameter tensor.
class Lamb : public Optimizer {
 public:
  Lamb(
      std::vector<torch::Tensor> params,
      double lr,
      double beta1,
      double beta2,
      double eps,
      double weight_decay);
  void step() override;
  std::vector<torch::Tensor> state_tensors() const override;
  void zero_grad() override;
  void set_lr(double lr) override {
    lr_ = lr;
  }
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

 private:
  std::vector<torch::Tensor> params_;
  std::vector<torch::Tensor> exp_avg_;
  std::vector<torch::Tensor> exp_avg_sq_;
  double lr_, beta1_, beta2_, eps_, weight_decay_;
};

/// adam, adamw, sgd (with train.mom) or lamb over `params`.
std::unique_ptr<Optimizer> make_optimizer(
    const config::TrainConfig& train,
    std::vector<torch::Tensor> params);

/// The learning rate of each step, and the plateau state.
///
/// For optimizer step t = 1, 2, ..., max_step with base rate lr and w = warmup_step:
///   cosine, constant, plateau: t <= w gives lr t / w (linear warmup), then
///     cosine:   eta_min + (lr - eta_min) (1 + cos(pi (t - w) / (max_step - w))) / 2
///               (counted after the warmup, as NVIDIA does),
///     constant: lr,
///     plateau:  lr decay_rate^k, at least lr_min, where k counts the validations after which
///               the loss had not improved for more than `patience` validations;
///   inv_sqrt (kimiyoung's rule): lr t / w^1.5 for t <= w, else lr / sqrt(t).
class LRSchedule {
 public:
  explicit LRSchedule(const config::TrainConfig& train);

  double lr(int64_t step) const;
  /// Reports a validation loss (plateau only); returns whether the rate was
  /// just reduced.
  bool observe(double valid_loss);

  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);

 private:
  config::TrainConfig train_;
  double factor_ = 1.0;
  double best_ = std::numeric_limits<double>::infinity();
  int64_t bad_evals_ = 0;
};

} // namespace xl::train
