// The optimizers of the shared trainer: one interface, and the factory of train.optim over
// Adam and AdamW (train/adam.h), SGD (train/sgd.h) and LAMB (train/lamb.h), each in its file
// with its update rule; the learning-rate schedules are in train/schedule.h.
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

/// adam, adamw, sgd (with train.mom) or lamb over the parameter groups (plan_parameters).
std::unique_ptr<Optimizer> make_optimizer(
    const config::TrainConfig& train,
    std::vector<ParameterGroup> groups);

/// The same over one group: every parameter at the schedule's rate and train.weight_decay.
std::unique_ptr<Optimizer> make_optimizer(
    const config::TrainConfig& train,
    std::vector<torch::Tensor> params);

} // namespace xl::train
