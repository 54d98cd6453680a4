// Trainer's checkpoints: what it saves and loads (train/training_state.h holds the layout), when
// (validate_and_checkpoint, after a validation or on a stop signal) and the snapshots it keeps.
#include "trainer_state.h"

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

void Trainer::save(State& s, bool best) {
  // A diverged model is never saved: the checkpoint on disk stays the last good one.
  if (!all_finite(model_->parameters()) || !all_finite(s.optimizer->state_tensors())) {
    throw UserError(fmt::format(
        "training diverged by step {}: the {} hold non-finite values, so they were not "
        "saved. {}",
        s.step,
        all_finite(model_->parameters()) ? "optimizer state does" : "weights",
        last_good_checkpoint()));
  }
  // Every rank takes part in the gathering; only the first writes.
  const RankStates ranks = gather_rank_states(s.mems, device_, parallel_);
  if (!writes_) {
    return;
  }
  const auto fill = [&](torch::serialize::OutputArchive& archive) {
    write_training_state(archive, parts(s), ranks);
  };
  const run::CheckpointInfo info{
      run::kCheckpointFormat, s.step, config::dump(config_), data_.vocabulary_fingerprint()};
  // A new best goes to best.pt first, then the same bytes to last.pt: a kill in between leaves
  // last.pt at an older step, from which a resume replays the same steps, and never a best.pt
  // older than the best step last.pt knows of.
  const auto& first = best ? paths_.best_checkpoint() : paths_.last_checkpoint();
  run::save_checkpoint(first, info, fill);
  if (best) {
    atomic_copy(first, paths_.last_checkpoint(), "checkpoint");
  }
}

void Trainer::load(State& s) {
  torch::serialize::InputArchive archive;
  const std::string file = paths_.last_checkpoint().string();
  const auto info = run::load_checkpoint(file, archive);
  s.changes = check_resume(file, info, config_, data_);
  s.mems = read_training_state(
      archive,
      parts(s),
      parallel_ != nullptr ? parallel_->group().rank() : 0,
      parallel_ != nullptr ? parallel_->group().size() : 1,
      device_,
      file);
  s.step = info.step;
}

void Trainer::validate_and_checkpoint(State& s, int64_t step, bool signalled) {
  if (step % config_.train.eval_interval != 0 && step != s.last_step && !signalled) {
    return;
  }
  // The run's own validations count (the plateau schedule, train.early_stop, the best so far);
  // one at --stop-at-step between them is shown and recorded, but counting it would make the
  // resumed run go on from other ones than an uninterrupted run's.
  const bool counts = step % config_.train.eval_interval == 0 || step == config_.train.max_step;
  bool best = false;
  if (!signalled) {
    s.last_valid = validate(s, step);
    s.last_valid_step = step;
    double valid = s.last_valid.empty() ? std::numeric_limits<double>::quiet_NaN()
                                        : s.last_valid.front().mean();
    if (parallel_ != nullptr) {
      // Bit-level differences between the ranks' evaluations must not split their schedules.
      auto value = torch::tensor({valid}, torch::kDouble);
      parallel_->group().broadcast(value, 0);
      valid = value.item<double>();
    }
    if (stop_requested()) { // during validation: save without judging it
      save(s, false);
      s.saved_step = step;
      logger().info("checkpoint step {} -> {}", step, paths_.last_checkpoint().string());
      return;
    }
    if (!std::isfinite(valid)) {
      throw UserError(fmt::format(
          "training diverged by step {}: the validation loss is {}, so the model was not "
          "saved. {}",
          step,
          valid,
          last_good_checkpoint()));
    }
    if (counts) {
      if (s.schedule->observe(valid)) {
        logger().info("validation loss stalled: learning rate x {}", config_.train.decay_rate);
      }
      best = valid < s.loop.best_valid;
      s.loop.best_valid = std::min(s.loop.best_valid, valid);
      s.loop.stale_validations = best ? 0 : s.loop.stale_validations + 1;
      s.stopped_early = stale(s);
    } else {
      // Until a validation that counts, this checkpoint is the best the tools can open.
      std::error_code ec;
      best = !std::filesystem::exists(paths_.best_checkpoint(), ec);
    }
  }
  save(s, best);
  s.saved_step = step;
  logger().info(
      "checkpoint step {} -> {}{}", step, paths_.last_checkpoint().string(), best ? " (best)" : "");
  if (!signalled && counts) {
    keep_snapshot(step);
  }
}

bool Trainer::stale(const State& s) const {
  const auto& limit = config_.train.early_stop;
  return limit && s.loop.stale_validations >= *limit;
}

void Trainer::checkpoint_on_request(State& s, int64_t step) {
  runtime::take_checkpoint_request();
  if (s.saved_step == step) {
    return; // this step was just checkpointed
  }
  flush(s); // the steps' values, before the state they led to is saved
  save(s, false);
  s.saved_step = step;
  logger().info(
      "SIGUSR1: checkpointed step {} -> {}, going on", step, paths_.last_checkpoint().string());
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
