// Optimizers and learning-rate schedules of the shared trainer.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "xl/config/schema.h"
#include "xl/train/parameter_groups.h"

namespace xl::train {

/// What the trainer needs from an optimizer, whichever it is.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual void step() = 0;
  /// The update, unless `skip` (a float scalar on the parameters' device) is 1: a step whose
  /// loss or gradient was not finite makes none. The fused Adam and AdamW decide on the device,
  /// without making the host wait; the others read `skip` first.
  virtual void step_unless(const torch::Tensor& skip) {
    if (skip.item<float>() == 0.0F) {
      step();
    }
  }
  virtual void zero_grad() = 0;
  /// The schedule's rate: each parameter group trains at it times the group's lr_scale.
  virtual void set_lr(double lr) = 0;
  virtual void save(torch::serialize::OutputArchive& archive) const = 0;
  virtual void load(torch::serialize::InputArchive& archive) = 0;
  /// Every tensor of the optimizer's state (moments, momentum buffers).
  virtual std::vector<torch::Tensor> state_tensors() const = 0;
};

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

/// adam, adamw, sgd (with train.mom) or lamb over the parameter groups (plan_parameters).
std::unique_ptr<Optimizer> make_optimizer(
    const config::TrainConfig& train,
    std::vector<ParameterGroup> groups);

/// The same over one group: every parameter at the schedule's rate and train.weight_decay.
std::unique_ptr<Optimizer> make_optimizer(
    const config::TrainConfig& train,
    std::vector<torch::Tensor> params);

/// The learning rate of each step, and the plateau state.
///
/// For optimizer step t = 1, 2, ..., max_step with base rate lr and w = warmup_step:
///   cosine, poly, constant, plateau: t <= w gives lr t / w (linear warmup), then
///     cosine:   eta_min + (lr - eta_min) (1 + cos(pi (t - w) / (max_step - w))) / 2
///               (counted after the warmup, as NVIDIA does),
///     poly:     eta_min + (lr - eta_min) (1 - (t - w) / (max_step - w)), TensorFlow's
///               polynomial_decay of power 1 after the warmup (zihangdai/xlnet, ratsgo),
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
