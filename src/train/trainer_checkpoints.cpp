// Trainer's checkpoints: what it saves and loads (train/training_state.h holds the layout), when
// (validate_and_checkpoint, after a validation or on a stop signal) and the snapshots it keeps.
#include "training_run.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "xl/config/config.h"
#include "xl/run/checkpoint.h"
#include "xl/runtime/signals.h"
#include "xl/train/data_parallel.h"
#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/log.h"

namespace xl::train {

namespace {

// Whether every defined tensor holds only finite values.
bool all_finite(const std::vector<torch::Tensor>& tensors) {
  for (const auto& t : tensors) {
    if (t.defined() && t.is_floating_point() && !torch::isfinite(t).all().item<bool>()) {
      return false;
    }
  }
  return true;
}

} // namespace

std::string Trainer::last_good_checkpoint() const {
  std::error_code ec;
  return std::filesystem::exists(paths_.last_checkpoint(), ec)
      ? "The last good checkpoint is " + paths_.last_checkpoint().string() +
          "; lower train.lr or raise train.warmup_step and resume from it."
      : "No checkpoint was written yet; lower train.lr or raise train.warmup_step and start "
        "again.";
}

void TrainingRun::save(bool best) {
  // A diverged model is never saved: the checkpoint on disk stays the last good one.
  if (!all_finite(trainer_.model_->parameters()) || !all_finite(optimizer_->state_tensors())) {
    throw UserError(fmt::format(
        "training diverged by step {}: the {} hold non-finite values, so they were not "
        "saved. {}",
        step_,
        all_finite(trainer_.model_->parameters()) ? "optimizer state does" : "weights",
        trainer_.last_good_checkpoint()));
  }
  // Every rank takes part in the gathering; only the first writes.
  const RankStates ranks = gather_rank_states(mems_, trainer_.device_, trainer_.parallel_);
  if (!trainer_.writes_) {
    return;
  }
  const auto fill = [&](torch::serialize::OutputArchive& archive) {
    write_training_state(archive, parts(), ranks);
  };
  const run::CheckpointInfo info{
      run::kCheckpointFormat,
      step_,
      config::dump(trainer_.config_),
      trainer_.data_.vocabulary_fingerprint()};
  // A new best goes to best.pt first, then the same bytes to last.pt: a kill in between leaves
  // last.pt at an older step, from which a resume replays the same steps, and never a best.pt
  // older than the best step last.pt knows of.
  const auto& first = best ? trainer_.paths_.best_checkpoint() : trainer_.paths_.last_checkpoint();
  run::save_checkpoint(first, info, fill);
  if (best) {
    atomic_copy(first, trainer_.paths_.last_checkpoint(), "checkpoint");
  }
}

void TrainingRun::load() {
  torch::serialize::InputArchive archive;
  const std::string file = trainer_.paths_.last_checkpoint().string();
  const auto info = run::load_checkpoint(file, archive);
  changes_ = check_resume(file, info, trainer_.config_, trainer_.data_);
  mems_ = read_training_state(
      archive,
      parts(),
      trainer_.parallel_ != nullptr ? trainer_.parallel_->group().rank() : 0,
      trainer_.parallel_ != nullptr ? trainer_.parallel_->group().size() : 1,
      trainer_.device_,
      file);
  step_ = info.step;
}

void TrainingRun::validate_and_checkpoint(int64_t step, bool signalled) {
  if (step % trainer_.config_.train.eval_interval != 0 && step != last_step_ && !signalled) {
    return;
  }
  // The run's own validations count (the plateau schedule, train.early_stop, the best so far);
  // one at --stop-at-step between them is shown and recorded, but counting it would make the
  // resumed run go on from other ones than an uninterrupted run's.
  const bool counts =
      step % trainer_.config_.train.eval_interval == 0 || step == trainer_.config_.train.max_step;
  bool best = false;
  if (!signalled) {
    last_valid_ = validate(step);
    last_valid_step_ = step;
    double valid =
        last_valid_.empty() ? std::numeric_limits<double>::quiet_NaN() : last_valid_.front().mean();
    if (trainer_.parallel_ != nullptr) {
      // Bit-level differences between the ranks' evaluations must not split their schedules.
      auto value = torch::tensor({valid}, torch::kDouble);
      trainer_.parallel_->group().broadcast(value, 0);
      valid = value.item<double>();
    }
    if (trainer_.stop_requested()) { // during validation: save without judging it
      save(false);
      saved_step_ = step;
      logger().info("checkpoint step {} -> {}", step, trainer_.paths_.last_checkpoint().string());
      return;
    }
    if (!std::isfinite(valid)) {
      throw UserError(fmt::format(
          "training diverged by step {}: the validation loss is {}, so the model was not "
          "saved. {}",
          step,
          valid,
          trainer_.last_good_checkpoint()));
    }
    if (counts) {
      if (schedule_->observe(valid)) {
        logger().info(
            "validation loss stalled: learning rate x {}", trainer_.config_.train.decay_rate);
      }
      best = valid < loop_.best_valid;
      loop_.best_valid = std::min(loop_.best_valid, valid);
      loop_.stale_validations = best ? 0 : loop_.stale_validations + 1;
      stopped_early_ = stale();
    } else {
      // Until a validation that counts, this checkpoint is the best the tools can open.
      std::error_code ec;
      best = !std::filesystem::exists(trainer_.paths_.best_checkpoint(), ec);
    }
  }
  save(best);
  saved_step_ = step;
  logger().info(
      "checkpoint step {} -> {}{}",
      step,
      trainer_.paths_.last_checkpoint().string(),
      best ? " (best)" : "");
  if (!signalled && counts) {
    trainer_.keep_snapshot(step);
  }
}

bool TrainingRun::stale() const {
  const auto& limit = trainer_.config_.train.early_stop;
  return limit && loop_.stale_validations >= *limit;
}

void TrainingRun::checkpoint_on_request(int64_t step) {
  runtime::take_checkpoint_request();
  if (saved_step_ == step) {
    return; // this step was just checkpointed
  }
  flush(); // the steps' values, before the state they led to is saved
  save(false);
  saved_step_ = step;
  logger().info(
      "SIGUSR1: checkpointed step {} -> {}, going on",
      step,
      trainer_.paths_.last_checkpoint().string());
}

void Trainer::keep_snapshot(int64_t step) const {
  const int64_t keep = config_.train.keep_snapshots;
  if (keep == 0 || !writes_) {
    return;
  }
  atomic_copy(paths_.last_checkpoint(), paths_.snapshot(step), "checkpoint");
  // The oldest go; a resumed run's snapshot of a step it repeats replaced the old one above.
  auto all = paths_.snapshots();
  for (size_t i = 0; i + static_cast<size_t>(keep) < all.size(); ++i) {
    std::filesystem::remove(all[i]);
  }
}

} // namespace xl::train
