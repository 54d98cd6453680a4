#include "xl/train/schedule.h"

#include <algorithm>
#include <cmath>

#include "xl/io/archive.h"

namespace xl::train {

LRSchedule::LRSchedule(const config::TrainConfig& train) : train_(train) {}

double LRSchedule::lr(int64_t step) const {
  const double base = train_.lr;
  const auto t = static_cast<double>(step);
  const auto w = static_cast<double>(train_.warmup_step);
  if (train_.scheduler == config::Scheduler::kInvSqrt) {
    if (train_.warmup_step == 0) {
      return base / std::sqrt(std::max(t, 1.0));
    }
    return t <= w ? base * t / std::pow(w, 1.5) : base / std::sqrt(t);
  }
  if (train_.warmup_step > 0 && step <= train_.warmup_step) {
    return base * t / w;
  }
  const double span = static_cast<double>(train_.max_step) - w;
  const double progress = span > 0 ? std::min((t - w) / span, 1.0) : 1.0;
  if (train_.scheduler == config::Scheduler::kCosine) {
    return train_.eta_min + (base - train_.eta_min) * (1.0 + std::cos(M_PI * progress)) / 2.0;
  }
  if (train_.scheduler == config::Scheduler::kPoly) {
    return train_.eta_min + (base - train_.eta_min) * (1.0 - progress);
  }
  if (train_.scheduler == config::Scheduler::kPlateau) {
    return std::max(base * factor_, train_.lr_min);
  }
  return base;
}

bool LRSchedule::observe(double valid_loss) {
  if (train_.scheduler != config::Scheduler::kPlateau) {
    return false;
  }
  // ReduceLROnPlateau's default: an improvement must beat the best by a
  // relative 1e-4.
  if (valid_loss < best_ * (1.0 - 1e-4)) {
    best_ = valid_loss;
    bad_evals_ = 0;
    return false;
  }
  if (++bad_evals_ > train_.patience) {
    factor_ *= train_.decay_rate;
    bad_evals_ = 0;
    return true;
  }
  return false;
}

void LRSchedule::save(torch::serialize::OutputArchive& archive) const {
  io::write_double(archive, "schedule.factor", factor_);
  io::write_double(archive, "schedule.best", best_);
  io::write_int(archive, "schedule.bad_evals", bad_evals_);
}

void LRSchedule::load(torch::serialize::InputArchive& archive) {
  factor_ = io::read_double(archive, "schedule.factor");
  best_ = io::read_double(archive, "schedule.best");
  bad_evals_ = io::read_int(archive, "schedule.bad_evals");
}

} // namespace xl::train
