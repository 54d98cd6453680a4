// The learning-rate schedules of the shared trainer (train.scheduler).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <limits>

#include "xl/config/schema.h"

namespace xl::train {

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
