#include "xl/train/trainer.h"

#include "trainer_state.h"

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

TrainingParts Trainer::parts(State& s) const {
  return {*model_, *s.optimizer, *s.schedule, *s.source, s.loop};
}

std::vector<models::TermTotal> Trainer::validate(State& s, int64_t step) {
  auto setup = eval::eval_setup(config_, data_.eval_batches("valid", true), true, device_);
  setup.options.stop = [] { return runtime::stop_signal().load() != 0; };
  setup.options.unigram = data_.unigram_baseline();
  const auto result = eval::evaluate(*model_, *setup.source, setup.options);
  if (result.stopped) {
    logger().warn("validation at step {} interrupted by a signal", step);
    return {};
  }
  const auto report = eval::report_evaluation(
      fmt::format("valid step {}", step),
      result,
      data_.unit(),
      {{"step", step}, {"split", "valid"}});
  logger().info("{}", report.line);
  write_record(s, report.record);
  return result.terms;
}

void Trainer::write_record(State& s, nlohmann::json record) const {
  if (!s.metrics) {
    return;
  }
  if (record.value("step", int64_t{0}) <= s.logged_until) {
    record["repeat"] = true;
  }
  s.metrics->write(record);
}

// A resume that would stop at or before the checkpoint's step trains nothing: refused before the
// run's config or metrics change, but for a finished run under --auto-resume (a scheduler's, or
// torchrun's restart after the last step), which is left as it is.
bool Trainer::nothing_to_train(State& s) const {
  const std::string run = paths_.dir.string();
  if (stale(s) && s.step < config_.train.max_step) {
    const int64_t limit = *config_.train.early_stop;
    if (s.finished_ok) {
      logger().info(
          "the run in {} stopped early at step {} (train.early_stop {}): nothing to train",
          run,
          s.step,
          limit);
      s.finished = s.stopped_early = true;
      return true;
    }
    throw UserError(fmt::format(
        "the run in {} stopped early at step {}: {} validations in a row without a new best "
        "(train.early_stop {}); to train on, raise it or turn it off (--set "
        "train.early_stop=null --resume)",
        run,
        s.step,
        s.loop.stale_validations,
        limit));
  }
  if (s.step < s.last_step) {
    return false;
  }
  const int64_t max_step = config_.train.max_step;
  if (s.finished_ok && s.step == max_step && s.last_step == max_step) {
    logger().info(
        "the run in {} finished at step {} (train.max_step): nothing to train", run, s.step);
    s.finished = true;
    return true;
  }
  if (s.last_step < max_step) {
    throw UserError(fmt::format(
        "--stop-at-step {}: the run in {} is at step {} already; give a later step",
        s.last_step,
        run,
        s.step));
  }
  throw UserError(fmt::format(
      "the run in {} is at step {}, {} train.max_step {}: nothing to train; raise it to train on "
      "(--set train.max_step=N --resume)",
      run,
      s.step,
      s.step == max_step ? "its" : "past",
      max_step));
}

void Trainer::start(State& s, bool resume) {
  const auto& t = config_.train;
  model_->to(device_);
  model_->train();
  s.source = data_.train_source();
  const auto plan = plan_parameters(config_, *model_);
  s.optimizer = make_optimizer(t, plan.groups);
  s.schedule = std::make_unique<LRSchedule>(t);
  s.mems.resize(static_cast<size_t>(t.batch_chunk));
  if (resume) {
    load(s);
    if (nothing_to_train(s)) {
      return;
    }
    logger().info(
        "resumed {} at step {} (pass {}){}{}",
        paths_.last_checkpoint().string(),
        s.step,
        s.source->epoch() + 1,
        s.changes.empty() ? "" : "; changed: ",
        fmt::join(s.changes, ", "));
    // Only a resume the checkpoint accepted replaces the run's config.
    if (writes_) {
      atomic_write(paths_.config, config::dump(config_));
    }
  }
  if (writes_) {
    // A killed run may have logged steps beyond its last checkpoint: those records are
    // superseded by the ones this run writes, which say "repeat".
    s.logged_until = resume ? run::last_logged_step(paths_.metrics) : 0;
    s.metrics = std::make_unique<run::MetricsWriter>(paths_.metrics, config_.run.tensorboard);
    s.metrics->write(run::start_record(device_, resume ? s.step : 0));
  }
  if (resume && s.metrics) {
    s.metrics->write(
        {{"event", "resumed"},
         {"step", s.step},
         {"changes", s.changes},
         {"logged_until", s.logged_until}});
  }
  s.progress = std::make_unique<run::Progress>(t.max_step, s.step);
  if (data_.labelled()) {
    s.progress->count_as("ex"); // a classifier's batches count examples
  }
  if (const auto special = plan.describe(); !special.empty()) {
    logger().info("{}", special);
  }
  logger().info(
      "training {} parameters on {} for steps {}..{}: {}, {} batches per pass",
      plan.trainable,
      device_.str(),
      s.step + 1,
      s.last_step,
      s.source->describe(),
      s.source->batches_per_pass());
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

void Trainer::skip_non_finite(State& s, int64_t step) {
  // No update was made and the memories from before this batch stay.
  ++s.loop.skipped;
  write_record(s, {{"step", step}, {"skipped", true}, {"reason", "non-finite loss or gradient"}});
  logger().warn(
      "step {}: non-finite loss or gradient, update skipped ({} in a row)",
      step,
      s.loop.bad_streak + 1);
  if (++s.loop.bad_streak >= config_.train.max_bad_steps) {
    throw UserError(fmt::format(
        "training stopped at step {}: {} consecutive non-finite losses or gradients "
        "(train.max_bad_steps). {}",
        step,
        s.loop.bad_streak,
        last_good_checkpoint()));
  }
}

bool Trainer::flush(State& s) {
  if (s.pending.empty()) {
    return false;
  }
  std::vector<StepResult> results;
  results.reserve(s.pending.size());
  for (auto& entry : s.pending) {
    results.push_back(std::move(entry.second));
  }
  const auto reports = read_steps(results);
  bool finite = false;
  for (size_t i = 0; i < reports.size(); ++i) {
    finite = reports[i].finite;
    if (finite) {
      s.loop.bad_streak = 0;
      s.grad_norm = reports[i].grad_norm;
      models::accumulate(s.loop.window, reports[i].terms);
    } else {
      skip_non_finite(s, s.pending[i].first);
    }
  }
  s.pending.clear();
  return finite;
}

void Trainer::show_progress(State& s) {
  // Between logged steps, a progress line after the first step and then at least every
  // run.progress_seconds.
  if (!s.shown_progress || s.progress->due(config_.run.progress_seconds)) {
    logger().info("{}", s.progress->line("step"));
    s.shown_progress = true;
  }
}

void Trainer::log_window(State& s, int64_t step, double lr) {
  if (s.loop.window.empty()) {
    return;
  }
  s.shown_progress = true;
  const auto unit = data_.unit();
  const double rate = s.progress->tokens_per_second();
  logger().info(
      "{} | lr {:.3g}{}", s.progress->line("step"), lr, eval::terms_line(s.loop.window, unit));
  nlohmann::json record = {{"step", step}, {"split", "train"}};
  eval::add_terms(record, s.loop.window, unit);
  record["lr"] = lr;
  record["grad_norm"] = s.grad_norm;
  record["tokens_per_s"] = rate;
  record["epoch"] = s.source->epoch();
  runtime::add_memory_use(record, runtime::memory_use(device_), device_);
  write_record(s, record);
  s.last_train = std::move(s.loop.window);
  s.loop.window.clear();
}

bool Trainer::stops_after(State& s, int64_t step, bool signalled, TrainResult& result) const {
  // A signal during this step's validation was checkpointed there too.
  if (signalled || (s.saved_step == step && stop_requested())) {
    // A rank that got no signal itself stops as the others do.
    result.signal = runtime::stop_signal().load() != 0 ? runtime::stop_signal().load() : SIGTERM;
    logger().warn("signal {}: checkpointed step {}, stopping", result.signal, step);
    return true;
  }
  if (s.stopped_early && s.saved_step == step && step < config_.train.max_step) {
    logger().info(
        "step {}: {} validations in a row without a new best (train.early_stop), stopping",
        step,
        s.loop.stale_validations);
    return true;
  }
  return false;
}

TrainResult Trainer::run(bool resume, std::optional<int64_t> stop_at, bool finished_ok) {
  const auto& t = config_.train;
  State s;
  s.last_step = std::min(t.max_step, stop_at.value_or(t.max_step));
  s.finished_ok = finished_ok;
  const auto began = std::chrono::steady_clock::now();
  start(s, resume);
  const int64_t first_step = s.step;
  TrainResult result;
  if (s.finished) {
    result.first_step = result.step = s.step;
    result.best_valid_loss = s.loop.best_valid;
    result.stopped_early = s.stopped_early;
    return result;
  }
  auto options = StepOptions::from(t, device_);
  options.parallel = parallel_;
  while (s.step < s.last_step) {
    const int64_t step = s.step + 1;
    const auto batch = sources::next_cycling(*s.source);
    const double lr = s.schedule->lr(step);
    s.pending.emplace_back(
        step,
        train_step(
            *model_,
            *s.optimizer,
            batch,
            s.source->continues_streams(),
            s.mems,
            lr,
            step,
            options));
    s.step = step;
    s.progress->update(step, batch.n_targets);
    const Requests asked = requests();
    const bool signalled = asked.stop;
    // The steps' values are read at logging steps and before a checkpoint, not in between.
    const bool logs = step % t.log_interval == 0;
    const bool reads = logs || signalled || step == s.last_step || step % t.eval_interval == 0;
    const bool finite = !reads || flush(s);
    if (!logs) {
      show_progress(s);
    } else if (finite) {
      log_window(s, step, lr);
    }
    validate_and_checkpoint(s, step, signalled);
    if (stops_after(s, step, signalled, result)) {
      break;
    }
    if (asked.checkpoint) {
      checkpoint_on_request(s, step);
    }
  }
  result.first_step = first_step;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  summarize(s, result);
  return result;
}

void Trainer::summarize(const State& s, TrainResult& result) const {
  result.step = s.step;
  result.best_valid_loss = s.loop.best_valid;
  result.last_train = s.last_train;
  result.last_valid = s.last_valid;
  result.last_valid_step = s.last_valid_step;
  result.stopped_early = s.stopped_early && s.step < config_.train.max_step;
}

} // namespace xl::train
