#include "xl/train/trainer.h"

#include "training_run.h"

#include <fmt/format.h>

#include <csignal>

#include "xl/config/config.h"
#include "xl/eval/report.h"
#include "xl/eval/setup.h"
#include "xl/models/factory.h"
#include "xl/run/checkpoint.h"
#include "xl/run/metrics.h"
#include "xl/run/progress.h"
#include "xl/runtime/memory_use.h"
#include "xl/runtime/signals.h"
#include "xl/train/optimizer.h"
#include "xl/train/parameter_groups.h"
#include "xl/train/schedule.h"
#include "xl/train/step.h"
#include "xl/train/training_state.h"
#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/log.h"

namespace xl::train {

Trainer::Trainer(
    config::Config config,
    run::RunPaths paths,
    sources::Dataset& data,
    models::LanguageModel model,
    torch::Device device,
    DataParallel* parallel)
    : config_(std::move(config)),
      paths_(std::move(paths)),
      data_(data),
      model_(std::move(model)),
      device_(device),
      parallel_(parallel),
      writes_(parallel == nullptr || parallel->group().rank() == 0) {}

TrainingParts TrainingRun::parts() {
  return {*trainer_.model_, *optimizer_, *schedule_, *source_, loop_};
}

std::vector<models::TermTotal> TrainingRun::validate(int64_t step) {
  auto setup = eval::eval_setup(
      trainer_.config_, trainer_.data_.eval_batches("valid", true), true, trainer_.device_);
  setup.options.stop = [] { return runtime::stop_signal().load() != 0; };
  setup.options.unigram = trainer_.data_.unigram_baseline();
  const auto result = eval::evaluate(*trainer_.model_, *setup.source, setup.options);
  if (result.stopped) {
    logger().warn("validation at step {} interrupted by a signal", step);
    return {};
  }
  const auto report = eval::report_evaluation(
      fmt::format("valid step {}", step),
      result,
      trainer_.data_.unit(),
      {{"step", step}, {"split", "valid"}});
  logger().info("{}", report.line);
  write_record(report.record);
  return result.terms;
}

void TrainingRun::write_record(nlohmann::json record) {
  if (!metrics_) {
    return;
  }
  if (record.value("step", int64_t{0}) <= logged_until_) {
    record["repeat"] = true;
  }
  metrics_->write(record);
}

// A resume that would stop at or before the checkpoint's step trains nothing: refused before the
// run's config or metrics change, but for a finished run under --auto-resume (a scheduler's, or
// torchrun's restart after the last step), which is left as it is.
bool TrainingRun::nothing_to_train() {
  const std::string run = trainer_.paths_.dir.string();
  if (stale() && step_ < trainer_.config_.train.max_step) {
    const int64_t limit = *trainer_.config_.train.early_stop;
    if (finished_ok_) {
      logger().info(
          "the run in {} stopped early at step {} (train.early_stop {}): nothing to train",
          run,
          step_,
          limit);
      finished_ = stopped_early_ = true;
      return true;
    }
    throw UserError(fmt::format(
        "the run in {} stopped early at step {}: {} validations in a row without a new best "
        "(train.early_stop {}); to train on, raise it or turn it off (--set "
        "train.early_stop=null --resume)",
        run,
        step_,
        loop_.stale_validations,
        limit));
  }
  if (step_ < last_step_) {
    return false;
  }
  const int64_t max_step = trainer_.config_.train.max_step;
  if (finished_ok_ && step_ == max_step && last_step_ == max_step) {
    logger().info(
        "the run in {} finished at step {} (train.max_step): nothing to train", run, step_);
    finished_ = true;
    return true;
  }
  if (last_step_ < max_step) {
    throw UserError(fmt::format(
        "--stop-at-step {}: the run in {} is at step {} already; give a later step",
        last_step_,
        run,
        step_));
  }
  throw UserError(fmt::format(
      "the run in {} is at step {}, {} train.max_step {}: nothing to train; raise it to train on "
      "(--set train.max_step=N --resume)",
      run,
      step_,
      step_ == max_step ? "its" : "past",
      max_step));
}

void TrainingRun::start(bool resume) {
  const auto& t = trainer_.config_.train;
  trainer_.model_->to(trainer_.device_);
  trainer_.model_->train();
  source_ = trainer_.data_.train_source();
  const auto plan = plan_parameters(trainer_.config_, *trainer_.model_);
  optimizer_ = make_optimizer(t, plan.groups);
  schedule_ = std::make_unique<LRSchedule>(t);
  mems_.resize(static_cast<size_t>(t.batch_chunk));
  if (resume) {
    load();
    if (nothing_to_train()) {
      return;
    }
    logger().info(
        "resumed {} at step {} (pass {}){}{}",
        trainer_.paths_.last_checkpoint().string(),
        step_,
        source_->epoch() + 1,
        changes_.empty() ? "" : "; changed: ",
        fmt::join(changes_, ", "));
    // Only a resume the checkpoint accepted replaces the run's config.
    if (trainer_.writes_) {
      atomic_write(trainer_.paths_.config, config::dump(trainer_.config_));
    }
  }
  if (trainer_.writes_) {
    // A killed run may have logged steps beyond its last checkpoint: those records are
    // superseded by the ones this run writes, which say "repeat".
    logged_until_ = resume ? run::last_logged_step(trainer_.paths_.metrics) : 0;
    metrics_ = std::make_unique<run::MetricsWriter>(
        trainer_.paths_.metrics, trainer_.config_.run.tensorboard);
    metrics_->write(run::start_record(trainer_.device_, resume ? step_ : 0));
  }
  if (resume && metrics_) {
    metrics_->write(
        {{"event", "resumed"},
         {"step", step_},
         {"changes", changes_},
         {"logged_until", logged_until_}});
  }
  progress_ = std::make_unique<run::Progress>(t.max_step, step_);
  if (trainer_.data_.labelled()) {
    progress_->count_as("ex"); // a classifier's batches count examples
  }
  if (const auto special = plan.describe(); !special.empty()) {
    logger().info("{}", special);
  }
  logger().info(
      "training {} parameters on {} for steps {}..{}: {}, {} batches per pass",
      plan.trainable,
      trainer_.device_.str(),
      step_ + 1,
      last_step_,
      source_->describe(),
      source_->batches_per_pass());
}

bool Trainer::stop_requested() const {
  return requests().stop;
}

Trainer::Requests Trainer::requests() const {
  Requests asked{runtime::stop_signal().load() != 0, runtime::checkpoint_requested()};
  if (parallel_ != nullptr) { // one exchange for both
    auto flags = torch::tensor({asked.stop ? 1.0F : 0.0F, asked.checkpoint ? 1.0F : 0.0F});
    parallel_->group().all_reduce_sum(flags);
    asked = {flags[0].item<float>() > 0, flags[1].item<float>() > 0};
  }
  return asked;
}

void TrainingRun::skip_non_finite(int64_t step) {
  // No update was made and the memories from before this batch stay.
  ++loop_.skipped;
  write_record({{"step", step}, {"skipped", true}, {"reason", "non-finite loss or gradient"}});
  logger().warn(
      "step {}: non-finite loss or gradient, update skipped ({} in a row)",
      step,
      loop_.bad_streak + 1);
  if (++loop_.bad_streak >= trainer_.config_.train.max_bad_steps) {
    throw UserError(fmt::format(
        "training stopped at step {}: {} consecutive non-finite losses or gradients "
        "(train.max_bad_steps). {}",
        step,
        loop_.bad_streak,
        trainer_.last_good_checkpoint()));
  }
}

bool TrainingRun::flush() {
  if (pending_.empty()) {
    return false;
  }
  std::vector<StepResult> results;
  results.reserve(pending_.size());
  for (auto& entry : pending_) {
    results.push_back(std::move(entry.second));
  }
  const auto reports = read_steps(results);
  bool finite = false;
  for (size_t i = 0; i < reports.size(); ++i) {
    finite = reports[i].finite;
    if (finite) {
      loop_.bad_streak = 0;
      grad_norm_ = reports[i].grad_norm;
      models::accumulate(loop_.window, reports[i].terms);
    } else {
      skip_non_finite(pending_[i].first);
    }
  }
  pending_.clear();
  return finite;
}

void TrainingRun::show_progress() {
  // Between logged steps, a progress line after the first step and then at least every
  // run.progress_seconds.
  if (!shown_progress_ || progress_->due(trainer_.config_.run.progress_seconds)) {
    logger().info("{}", progress_->line("step"));
    shown_progress_ = true;
  }
}

void TrainingRun::log_window(int64_t step, double lr) {
  if (loop_.window.empty()) {
    return;
  }
  shown_progress_ = true;
  const auto unit = trainer_.data_.unit();
  const double rate = progress_->tokens_per_second();
  logger().info(
      "{} | lr {:.3g}{}", progress_->line("step"), lr, eval::terms_line(loop_.window, unit));
  nlohmann::json record = {{"step", step}, {"split", "train"}};
  eval::add_terms(record, loop_.window, unit);
  record["lr"] = lr;
  record["grad_norm"] = grad_norm_;
  record["tokens_per_s"] = rate;
  record["epoch"] = source_->epoch();
  runtime::add_memory_use(record, runtime::memory_use(trainer_.device_), trainer_.device_);
  write_record(record);
  last_train_ = std::move(loop_.window);
  loop_.window.clear();
}

bool TrainingRun::stops_after(int64_t step, bool signalled, TrainResult& result) {
  // A signal during this step's validation was checkpointed there too.
  if (signalled || (saved_step_ == step && trainer_.stop_requested())) {
    // A rank that got no signal itself stops as the others do.
    result.signal = runtime::stop_signal().load() != 0 ? runtime::stop_signal().load() : SIGTERM;
    logger().warn("signal {}: checkpointed step {}, stopping", result.signal, step);
    return true;
  }
  if (stopped_early_ && saved_step_ == step && step < trainer_.config_.train.max_step) {
    logger().info(
        "step {}: {} validations in a row without a new best (train.early_stop), stopping",
        step,
        loop_.stale_validations);
    return true;
  }
  return false;
}

TrainResult Trainer::run(bool resume, std::optional<int64_t> stop_at, bool finished_ok) {
  const auto& t = config_.train;
  TrainingRun training(*this, std::min(t.max_step, stop_at.value_or(t.max_step)), finished_ok);
  return training.train(resume);
}

TrainingRun::TrainingRun(Trainer& trainer, int64_t last_step, bool finished_ok)
    : trainer_(trainer), last_step_(last_step), finished_ok_(finished_ok) {}

TrainResult TrainingRun::train(bool resume) {
  const auto& t = trainer_.config_.train;
  const auto began = std::chrono::steady_clock::now();
  start(resume);
  const int64_t first_step = step_;
  TrainResult result;
  if (finished_) {
    result.first_step = result.step = step_;
    result.best_valid_loss = loop_.best_valid;
    result.stopped_early = stopped_early_;
    return result;
  }
  auto options = StepOptions::from(t, trainer_.device_);
  options.parallel = trainer_.parallel_;
  while (step_ < last_step_) {
    const int64_t step = step_ + 1;
    const auto batch = sources::next_cycling(*source_);
    const double lr = schedule_->lr(step);
    pending_.emplace_back(
        step,
        train_step(
            *trainer_.model_,
            *optimizer_,
            batch,
            source_->continues_streams(),
            mems_,
            lr,
            step,
            options));
    step_ = step;
    progress_->update(step, batch.n_targets);
    const Trainer::Requests asked = trainer_.requests();
    const bool signalled = asked.stop;
    // The steps' values are read at logging steps and before a checkpoint, not in between.
    const bool logs = step % t.log_interval == 0;
    const bool reads = logs || signalled || step == last_step_ || step % t.eval_interval == 0;
    const bool finite = !reads || flush();
    if (!logs) {
      show_progress();
    } else if (finite) {
      log_window(step, lr);
    }
    validate_and_checkpoint(step, signalled);
    if (stops_after(step, signalled, result)) {
      break;
    }
    if (asked.checkpoint) {
      checkpoint_on_request(step);
    }
  }
  result.first_step = first_step;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  summarize(result);
  return result;
}

void TrainingRun::summarize(TrainResult& result) const {
  result.step = step_;
  result.best_valid_loss = loop_.best_valid;
  result.last_train = last_train_;
  result.last_valid = last_valid_;
  result.last_valid_step = last_valid_step_;
  result.stopped_early = stopped_early_ && step_ < trainer_.config_.train.max_step;
}

} // namespace xl::train
