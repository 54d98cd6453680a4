#include "xl/train/trainer.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>

#include <cmath>
#include <csignal>

#include "xl/config/config.h"
#include "xl/data/lm_iterator.h"
#include "xl/run/checkpoint.h"
#include "xl/run/metrics.h"
#include "xl/run/progress.h"
#include "xl/train/autocast.h"
#include "xl/train/evaluator.h"
#include "xl/train/optimizer.h"
#include "xl/util/error.h"
#include "xl/util/files.h"

namespace xl::train {

std::atomic<int>& stop_signal() {
  static std::atomic<int> signal{0};
  return signal;
}

void install_stop_handlers() {
  const auto handler = [](int sig) { stop_signal().store(sig); };
  std::signal(SIGINT, handler);
  std::signal(SIGTERM, handler);
}

struct Trainer::State {
  int64_t step = 0;
  std::unique_ptr<data::LMOrderedIterator> data;
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<LRSchedule> schedule;
  std::vector<nn::Memory> mems; // one per batch chunk
  double best_valid = std::numeric_limits<double>::infinity();
  int64_t bad_streak = 0;
  int64_t skipped = 0;
  // the current logging window
  double window_nll = 0.0;
  int64_t window_count = 0;
};

Trainer::Trainer(
    config::Config config,
    run::RunPaths paths,
    data::Corpus& corpus,
    models::LanguageModel model,
    torch::Device device)
    : config_(std::move(config)),
      paths_(std::move(paths)),
      corpus_(corpus),
      model_(std::move(model)),
      device_(device) {}

namespace {

void write_memory(
    torch::serialize::OutputArchive& archive,
    const std::vector<nn::Memory>& mems) {
  archive.write("mems.chunks", c10::IValue(static_cast<int64_t>(mems.size())));
  for (size_t c = 0; c < mems.size(); ++c) {
    archive.write(
        fmt::format("mems.{}.layers", c),
        c10::IValue(static_cast<int64_t>(mems[c].size())));
    for (size_t l = 0; l < mems[c].size(); ++l) {
      archive.write(fmt::format("mems.{}.{}", c, l), mems[c][l]);
    }
  }
}

std::vector<nn::Memory> read_memory(
    torch::serialize::InputArchive& archive,
    const torch::Device& device) {
  c10::IValue v;
  archive.read("mems.chunks", v);
  std::vector<nn::Memory> mems(static_cast<size_t>(v.toInt()));
  for (size_t c = 0; c < mems.size(); ++c) {
    archive.read(fmt::format("mems.{}.layers", c), v);
    mems[c].resize(static_cast<size_t>(v.toInt()));
    for (size_t l = 0; l < mems[c].size(); ++l) {
      archive.read(fmt::format("mems.{}.{}", c, l), mems[c][l]);
      mems[c][l] = mems[c][l].to(device);
    }
  }
  return mems;
}

int64_t read_int(
    torch::serialize::InputArchive& archive,
    const std::string& key) {
  c10::IValue v;
  archive.read(key, v);
  return v.toInt();
}

double read_double(
    torch::serialize::InputArchive& archive,
    const std::string& key) {
  c10::IValue v;
  archive.read(key, v);
  return v.toDouble();
}

// Generators are shared handles; the copy reaches the global one.
void set_generator_state(at::Generator generator, const torch::Tensor& state) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

} // namespace

void Trainer::save(const State& s, bool best) {
  const auto fill = [&](torch::serialize::OutputArchive& archive) {
    torch::serialize::OutputArchive model_archive;
    model_->save(model_archive);
    archive.write("model", model_archive);
    torch::serialize::OutputArchive optimizer_archive;
    s.optimizer->save(optimizer_archive);
    archive.write("optimizer", optimizer_archive);
    s.schedule->save(archive);
    archive.write("data.epoch", c10::IValue(s.data->epoch()));
    archive.write("data.row", c10::IValue(s.data->row()));
    write_memory(archive, s.mems);
    archive.write("train.best_valid", c10::IValue(s.best_valid));
    archive.write("train.bad_streak", c10::IValue(s.bad_streak));
    archive.write("train.skipped", c10::IValue(s.skipped));
    archive.write("train.window_nll", c10::IValue(s.window_nll));
    archive.write("train.window_count", c10::IValue(s.window_count));
    archive.write("rng.cpu", at::detail::getDefaultCPUGenerator().get_state());
    if (device_.is_cuda()) {
      archive.write(
          "rng.cuda",
          at::globalContext().defaultGenerator(device_).get_state());
    }
  };
  const run::CheckpointInfo info{
      run::kCheckpointFormat, s.step, config::dump(config_)};
  run::save_checkpoint(paths_.last_checkpoint(), info, fill);
  if (best) {
    // The same bytes: copy the finished file rather than serialize everything
    // again.
    atomic_write(
        paths_.best_checkpoint(),
        read_file(paths_.last_checkpoint(), "checkpoint"));
  }
}

void Trainer::load(State& s) {
  torch::serialize::InputArchive archive;
  const auto info = run::load_checkpoint(paths_.last_checkpoint(), archive);
  // The model and its data must be those of the checkpoint; schedules,
  // intervals and the like may change on resume.
  run::require_matching_config(
      paths_.last_checkpoint(),
      info.config,
      config::dump(config_),
      {"model", "data"});
  torch::serialize::InputArchive model_archive;
  archive.read("model", model_archive);
  model_->load(model_archive);
  model_->to(device_);
  torch::serialize::InputArchive optimizer_archive;
  archive.read("optimizer", optimizer_archive);
  s.optimizer->load(optimizer_archive);
  s.schedule->load(archive);
  s.step = info.step;
  s.data->seek(read_int(archive, "data.epoch"), read_int(archive, "data.row"));
  s.mems = read_memory(archive, device_);
  s.best_valid = read_double(archive, "train.best_valid");
  s.bad_streak = read_int(archive, "train.bad_streak");
  s.skipped = read_int(archive, "train.skipped");
  s.window_nll = read_double(archive, "train.window_nll");
  s.window_count = read_int(archive, "train.window_count");
  torch::Tensor rng;
  archive.read("rng.cpu", rng);
  set_generator_state(at::detail::getDefaultCPUGenerator(), rng);
  if (device_.is_cuda()) {
    archive.read("rng.cuda", rng);
    set_generator_state(at::globalContext().defaultGenerator(device_), rng);
  }
}

double Trainer::validate(int64_t step) {
  const auto settings = eval_settings(config_, true);
  const auto result = evaluate(
      *model_, corpus_.split("valid"), settings, device_, config_.train.bf16);
  const auto m = metric(corpus_.vocab().kind(), result.loss());
  spdlog::info(
      "valid step {} | loss {:.4f} | {} {:.3f} | {} tok/s",
      step,
      result.loss(),
      m.name,
      m.value,
      run::format_count(result.tokens_per_second()));
  run::MetricsWriter(paths_.metrics)
      .write(
          {{"step", step},
           {"split", "valid"},
           {"loss", result.loss()},
           {m.name, m.value},
           {"tokens", result.count},
           {"tokens_per_s", result.tokens_per_second()}});
  return result.loss();
}

TrainResult Trainer::run(bool resume, std::optional<int64_t> stop_at) {
  const auto& t = config_.train;
  model_->to(device_);
  model_->train();
  State s;
  s.data = std::make_unique<data::LMOrderedIterator>(
      corpus_.split("train"), t.batch_size, t.tgt_len, config_.model.ext_len);
  s.optimizer = make_optimizer(t, model_->parameters());
  s.schedule = std::make_unique<LRSchedule>(t);
  s.mems.resize(static_cast<size_t>(t.batch_chunk));
  if (resume) {
    load(s);
    spdlog::info(
        "resumed {} at step {} (epoch {}, row {})",
        paths_.last_checkpoint().string(),
        s.step,
        s.data->epoch(),
        s.data->row());
  }
  const int64_t last_step = std::min(t.max_step, stop_at.value_or(t.max_step));
  spdlog::info(
      "training {} parameters on {} for steps {}..{}: {} streams x {} tokens, {} "
      "segments per epoch",
      models::count_parameters(*model_),
      device_.str(),
      s.step + 1,
      last_step,
      t.batch_size,
      t.tgt_len,
      s.data->segments_per_epoch());
  run::MetricsWriter metrics(paths_.metrics);
  if (resume) {
    // Records after this line supersede those of the same steps before it (a
    // killed run may have logged steps beyond its last checkpoint).
    metrics.write({{"event", "resumed"}, {"step", s.step}});
  }
  run::Progress progress(t.max_step, s.step);
  const auto kind = corpus_.vocab().kind();
  TrainResult result;
  const int64_t chunk = t.batch_size / t.batch_chunk;

  while (s.step < last_step) {
    const int64_t step = s.step + 1;
    const auto segment = s.data->next_cycling();
    const auto input = segment.input.to(device_);
    const auto target = segment.target.to(device_);
    s.optimizer->zero_grad();
    std::vector<nn::Memory> next_mems(s.mems.size());
    double step_nll = 0.0;
    int64_t step_count = 0;
    bool finite = true;
    for (int64_t c = 0; c < t.batch_chunk; ++c) {
      models::LMOutput out;
      {
        AutocastGuard autocast(device_, t.bf16);
        out = model_->forward(
            input.narrow(1, c * chunk, chunk),
            target.narrow(1, c * chunk, chunk),
            s.mems[static_cast<size_t>(c)]);
      }
      const auto loss =
          out.nll_sum / static_cast<double>(out.count * t.batch_chunk);
      const double nll = out.nll_sum.item<double>();
      if (!std::isfinite(nll)) {
        finite = false;
        break;
      }
      loss.backward();
      step_nll += nll;
      step_count += out.count;
      next_mems[static_cast<size_t>(c)] = std::move(out.mems);
    }
    s.step = step;
    if (!finite) {
      // Skip the update and keep the memories from before this segment.
      s.optimizer->zero_grad();
      ++s.skipped;
      metrics.write(
          {{"step", step}, {"skipped", true}, {"reason", "non-finite loss"}});
      spdlog::warn(
          "step {}: non-finite loss, update skipped ({} in a row)",
          step,
          s.bad_streak + 1);
      if (++s.bad_streak >= t.max_bad_steps) {
        throw UserError(fmt::format(
            "training stopped at step {}: {} consecutive non-finite losses "
            "(train.max_bad_steps). The last good checkpoint is {}; lower train.lr or "
            "raise train.warmup_step and resume from it.",
            step,
            s.bad_streak,
            paths_.last_checkpoint().string()));
      }
    } else {
      s.bad_streak = 0;
      s.mems = std::move(next_mems);
      if (t.clip > 0) {
        torch::nn::utils::clip_grad_norm_(model_->parameters(), t.clip);
      }
      const double lr = s.schedule->lr(step);
      s.optimizer->set_lr(lr);
      s.optimizer->step();
      s.window_nll += step_nll;
      s.window_count += step_count;
      progress.update(step, step_count);
      if (step % t.log_interval == 0 && s.window_count > 0) {
        const double loss = s.window_nll / static_cast<double>(s.window_count);
        const auto m = metric(kind, loss);
        const double rate = progress.tokens_per_second();
        spdlog::info(
            "{} | lr {:.3g} | loss {:.4f} | {} {:.3f}",
            progress.line("step"),
            lr,
            loss,
            m.name,
            m.value);
        metrics.write(
            {{"step", step},
             {"split", "train"},
             {"loss", loss},
             {m.name, m.value},
             {"lr", lr},
             {"tokens_per_s", rate},
             {"epoch", s.data->epoch()}});
        s.window_nll = 0.0;
        s.window_count = 0;
      }
    }
    const bool signalled = stop_signal().load() != 0;
    if (step % t.eval_interval == 0 || step == last_step || signalled) {
      bool best = false;
      if (!signalled) {
        const double valid = validate(step);
        if (s.schedule->observe(valid)) {
          spdlog::info(
              "validation loss stalled: learning rate x {}", t.decay_rate);
        }
        best = valid < s.best_valid;
        s.best_valid = std::min(s.best_valid, valid);
      }
      save(s, best);
      spdlog::info(
          "checkpoint step {} -> {}{}",
          step,
          paths_.last_checkpoint().string(),
          best ? " (best)" : "");
    }
    if (signalled) {
      result.signal = stop_signal().load();
      spdlog::warn(
          "signal {}: checkpointed step {}, stopping", result.signal, step);
      break;
    }
  }
  result.step = s.step;
  result.best_valid_loss = s.best_valid;
  return result;
}

} // namespace xl::train
